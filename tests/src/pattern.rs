//! Matching a JSON value against an expected pattern, as `docs/protocol.md` examples are
//! checked: an object matches when every expected key is present with a matching value (extra
//! keys are allowed); arrays must have the same length and match element by element; the string
//! `"*"` matches anything; numbers compare by value (`1` matches `1.0`).

use serde_json::Value;

/// `Ok(())` when `actual` matches `expected`, else the path of the first mismatch and why.
pub fn matches(expected: &Value, actual: &Value) -> Result<(), String> {
    check(expected, actual, "$")
}

fn check(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(s), _) if s == "*" => Ok(()),
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let child = format!("{path}.{key}");
                match have.get(key) {
                    Some(found) => check(value, found, &child)?,
                    None => return Err(format!("{child}: missing (expected {value})")),
                }
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(have)) => {
            if want.len() != have.len() {
                return Err(format!("{path}: expected {} elements, got {}: {actual}", want.len(), have.len()));
            }
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                check(w, h, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(want), Value::Number(have)) => {
            if want == have || want.as_f64() == have.as_f64() {
                Ok(())
            } else {
                Err(format!("{path}: expected {want}, got {have}"))
            }
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}")),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;
    use serde_json::json;

    #[test]
    fn objects_allow_extra_keys() {
        assert!(matches(&json!({"a": 1}), &json!({"a": 1, "b": 2})).is_ok());
        assert!(matches(&json!({"a": 1, "c": 3}), &json!({"a": 1, "b": 2})).is_err());
    }

    #[test]
    fn arrays_need_equal_length() {
        assert!(matches(&json!([1, "*"]), &json!([1, {"x": 2}])).is_ok());
        assert!(matches(&json!([1]), &json!([1, 2])).is_err());
    }

    #[test]
    fn star_and_numbers() {
        assert!(matches(&json!({"v": "*"}), &json!({"v": null})).is_ok());
        assert!(matches(&json!(1), &json!(1.0)).is_ok());
        assert!(matches(&json!("x"), &json!("y")).is_err());
        assert!(matches(&json!(null), &json!(null)).is_ok());
    }
}
