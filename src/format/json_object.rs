//! The JSON objects the format names (the root's marker, claim payloads) read as objects: a
//! struct's derived reader also takes an array of its fields in order, and reads `null` as a
//! field left out, where FORMAT.md allows neither. Only the small, cold records go this way.

use crate::event::plain::plain_run;
use serde::de::DeserializeOwned;

/// `bytes` read as `T` only if they are a JSON object none of whose members is `null`. The
/// struct's own reader reads them once (it refuses a key given twice); the two rules it does
/// not keep are checked on the bytes it took, without parsing them again (this runs for every
/// claim a log replays at open).
pub fn from_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let value: T = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err("not a JSON object".into());
    }
    if let Some(key) = null_member(bytes) {
        return Err(format!("member {key:?} is null"));
    }
    Ok(value)
}

/// The key of a member of the object `json` (well-formed JSON) whose value is `null`: at depth
/// one, outside strings, a `:` is a member's and the string before it its key.
fn null_member(json: &[u8]) -> Option<String> {
    let (mut depth, mut at, mut key) = (0usize, 0usize, (0, 0));
    while let Some(&b) = json.get(at) {
        at += 1;
        match b {
            b'"' => {
                let start = at;
                at = past_string(json, at);
                key = (start, at.saturating_sub(1));
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b':' if depth == 1 && json[at..].trim_ascii_start().starts_with(b"null") => {
                let name = json.get(key.0..key.1).unwrap_or_default();
                return Some(String::from_utf8_lossy(name).into_owned());
            }
            _ => {}
        }
    }
    None
}

/// Where the string whose body starts at `at` ends: past its closing quote (a backslash takes
/// the byte after it along), or the end of `json`. A string's body is skipped a run at a time.
pub(crate) fn past_string(json: &[u8], mut at: usize) -> usize {
    loop {
        at += plain_run(json.get(at..).unwrap_or_default());
        match json.get(at) {
            None => return at,
            Some(b'"') => return at + 1,
            Some(b'\\') => at += 2,
            // A control character: not JSON, but it does not end the string either.
            Some(_) => at += 1,
        }
    }
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
        assert_eq!(
            from_object::<Two>(br#" {"b" : null , "a":1}"#),
            Err("member \"b\" is null".into())
        );
        // A null inside a string or deeper than the object's own members is no member's.
        let nested: Result<serde_json::Value, _> =
            from_object(br#"{"a":"x\":null","b":{"c":null},"d":[null]}"#);
        assert!(nested.is_ok(), "{nested:?}");
        assert!(from_object::<Two>(b"1").is_err());
        assert!(
            from_object::<Two>(br#"{"a":1,"a":2}"#).is_err(),
            "a key given twice"
        );
    }
}
