//! The JSON objects the format names (the root's marker, claim payloads) read as objects: a
//! struct's derived reader also takes an array of its fields in order, and reads `null` as a
//! field left out, where FORMAT.md allows neither. Only the small, cold records go this way.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// `bytes` read as `T` only if they are a JSON object none of whose members is `null`. The
/// struct's own reader reads them (a key given twice is refused there, where a JSON value
/// keeps the last).
pub fn from_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let Value::Object(members) = &value else {
        return Err("not a JSON object".into());
    };
    if let Some((key, _)) = members.iter().find(|(_, v)| v.is_null()) {
        return Err(format!("member {key:?} is null"));
    }
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Two {
        a: u32,
        #[serde(default)]
        b: Option<String>,
    }

    #[test]
    fn only_an_object_without_nulls_is_read() {
        assert_eq!(
            from_object::<Two>(br#"{"a":1,"b":"x"}"#),
            Ok(Two {
                a: 1,
                b: Some("x".into())
            })
        );
        assert_eq!(from_object::<Two>(br#"{"a":1}"#), Ok(Two { a: 1, b: None }));
        assert!(from_object::<Two>(br#"[1,"x"]"#).is_err());
        assert!(from_object::<Two>(br#"{"a":1,"b":null}"#).is_err());
        assert!(from_object::<Two>(b"1").is_err());
        assert!(
            from_object::<Two>(br#"{"a":1,"a":2}"#).is_err(),
            "a key given twice"
        );
    }
}
