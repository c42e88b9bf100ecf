//! Sizes and durations as written on a command line or in a policy file.
//!
//! Sizes: plain bytes or a binary suffix (`64K`, `256M`, `1G`, also `KiB`/`MiB`/`GiB`).
//! Durations: plain seconds (`1.5`) or a suffix (`500ms`, `2s`, `1m`).

use std::fmt;

/// Why a size or duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {value:?}: expected {expected}")]
pub struct UnitError {
    kind: &'static str,
    value: String,
    expected: &'static str,
}

const SIZE_FORMS: &str = "bytes or a number with K, M, G (or KiB, MiB, GiB), e.g. 64K or 256M";
const DURATION_FORMS: &str = "seconds or a number with ms, s or m, e.g. 1.5, 500ms, 2s, 1m";

/// Parses a size in bytes: `1048576`, `64K`, `256M`, `1G`, `2GiB`, `1.5M`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let err = || UnitError { kind: "size", value: text.to_owned(), expected: SIZE_FORMS };
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(split);
    let multiplier: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(err()),
    };
    if number.is_empty() {
        return Err(err());
    }
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(multiplier).ok_or_else(err);
    }
    let value: f64 = number.parse().map_err(|_| err())?;
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes.round() as u64)
}

/// Parses a duration in seconds: `1.5`, `500ms`, `2s`, `1m`.
pub fn parse_duration(text: &str) -> Result<f64, UnitError> {
    let err = || UnitError { kind: "duration", value: text.to_owned(), expected: DURATION_FORMS };
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(split);
    let scale = match suffix.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err()),
    };
    let value: f64 = number.parse().map_err(|_| err())?;
    let seconds = value * scale;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(err());
    }
    Ok(seconds)
}

/// Formats bytes the way the one-line summary shows them (`1.2MiB`).
pub struct HumanSize(pub u64);

impl fmt::Display for HumanSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0 as f64;
        match self.0 {
            n if n >= 1 << 30 => write!(f, "{:.1}GiB", bytes / (1u64 << 30) as f64),
            n if n >= 1 << 20 => write!(f, "{:.1}MiB", bytes / (1u64 << 20) as f64),
            n if n >= 1 << 10 => write!(f, "{:.1}KiB", bytes / (1u64 << 10) as f64),
            n => write!(f, "{n}B"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5M"), Ok(3 << 19));
        for bad in ["", "M", "12X", "-1", "1..2M", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1.5"), Ok(1.5));
        assert_eq!(parse_duration("500ms"), Ok(0.5));
        assert_eq!(parse_duration("2s"), Ok(2.0));
        assert_eq!(parse_duration("1m"), Ok(60.0));
        for bad in ["", "s", "1x", "-2", "nan"] {
            assert!(parse_duration(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn error_names_the_forms() {
        let message = parse_size("lots").unwrap_err().to_string();
        assert!(message.contains("256M"), "{message}");
    }

    #[test]
    fn human_size() {
        assert_eq!(HumanSize(1_258_291).to_string(), "1.2MiB");
        assert_eq!(HumanSize(100).to_string(), "100B");
    }
}
