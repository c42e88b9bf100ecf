//! The data markers of one evaluation (decisions 2): fresh for every evaluation, from the OS
//! random source, shaped like segi.txt's example. 80 random bits each: a submission that
//! echoes text cannot guess them, and an old evaluation's markers are worthless in a new one.

/// `EVALUATION_DATA_BEGIN` and `EVALUATION_DATA_END` of one evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    pub begin: String,
    pub end: String,
}

impl Markers {
    /// New random markers; fails only if the OS random source does.
    pub fn fresh() -> Result<Markers, String> {
        let mut random = [0u8; 20];
        getrandom::fill(&mut random).map_err(|e| format!("the OS random source failed: {e}"))?;
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        // Neither is valid JSON (segi.txt): a leading `-` must be followed by a digit.
        Ok(Markers {
            begin: format!("--evaluation-data-begin-{}", hex(&random[..10])),
            end: format!("--evaluation-data-end---{}", hex(&random[10..])),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_shaped_like_the_example_and_fresh() {
        let a = Markers::fresh().unwrap();
        let b = Markers::fresh().unwrap();
        assert_ne!(a, b);
        for (marker, prefix) in [(&a.begin, "--evaluation-data-begin-"), (&a.end, "--evaluation-data-end---")] {
            let hex = marker.strip_prefix(prefix).unwrap();
            assert_eq!(hex.len(), 20);
            assert!(hex.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
            assert!(serde_json::from_str::<serde_json::Value>(marker).is_err());
        }
        assert_eq!(a.begin.len(), "--evaluation-data-begin-7e112fc35845cd01d454".len());
        assert_eq!(a.end.len(), "--evaluation-data-end---46c11713eef6050e3ca6".len());
    }
}
