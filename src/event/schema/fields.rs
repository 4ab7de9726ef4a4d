//! The checks of one field's value, each naming the field's path in its error; the reader of a
//! whole exact-shape object is [`Obj`] (in `obj.rs`), re-exported here beside them.

use super::super::error::EventError;
use super::super::number::safe_integer;
use super::super::path::Path;
use super::text::is_sha256;
use serde_json::{Map, Value};

pub use super::obj::{array_of, decode_array, decode_object, Decoded, Obj};

/// The decoder's result type.
pub type Result<T> = std::result::Result<T, EventError>;

/// An `Invalid` error for the field at `path`.
pub fn invalid(path: &Path, why: impl Into<String>) -> EventError {
    EventError::Invalid {
        field: path.render(),
        why: why.into(),
    }
}

/// The value as a string.
pub fn expect_str<'a>(value: &'a Value, path: &Path) -> Result<&'a str> {
    value
        .as_str()
        .ok_or_else(|| invalid(path, "expected a string"))
}

/// The value as a non-empty string.
pub fn expect_nonempty<'a>(value: &'a Value, path: &Path) -> Result<&'a str> {
    let s = expect_str(value, path)?;
    if s.is_empty() {
        return Err(invalid(path, "must not be empty"));
    }
    Ok(s)
}

/// The value as a boolean.
pub fn expect_bool(value: &Value, path: &Path) -> Result<bool> {
    value
        .as_bool()
        .ok_or_else(|| invalid(path, "expected a boolean"))
}

/// The value as a finite number (serde_json holds no other kind).
pub fn expect_number(value: &Value, path: &Path) -> Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| invalid(path, "expected a finite number"))
}

/// The value as a safe integer (`1.0` counts; `1.5`, `true` and |n| > 2^53 − 1 do not).
pub fn expect_int(value: &Value, path: &Path) -> Result<i64> {
    match value {
        Value::Number(n) => safe_integer(n).ok_or_else(|| invalid(path, "expected a safe integer")),
        _ => Err(invalid(path, "expected a safe integer")),
    }
}

/// The value as an object (not an array, not null).
pub fn expect_object<'a>(value: &'a Value, path: &Path) -> Result<&'a Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| invalid(path, "expected an object"))
}

/// The value as an array.
pub fn expect_array<'a>(value: &'a Value, path: &Path) -> Result<&'a Vec<Value>> {
    value
        .as_array()
        .ok_or_else(|| invalid(path, "expected an array"))
}

/// The value as one of the listed strings.
pub fn expect_one_of<'a>(value: &'a Value, path: &Path, allowed: &[&str]) -> Result<&'a str> {
    let s = value
        .as_str()
        .ok_or_else(|| invalid(path, format!("expected one of {}", allowed.join(", "))))?;
    if !allowed.contains(&s) {
        return Err(invalid(
            path,
            format!("{s:?} is not one of {}", allowed.join(", ")),
        ));
    }
    Ok(s)
}

/// The tag of a tagged union: the member `key` of the object, one of `allowed`.
pub fn expect_tag<'a>(
    value: &'a Value,
    path: &Path,
    key: &str,
    allowed: &[&str],
) -> Result<&'a str> {
    let tag_path = path.key(key);
    match expect_object(value, path)?.get(key) {
        None => Err(invalid(&tag_path, "missing required key")),
        Some(tag) => expect_one_of(tag, &tag_path, allowed),
    }
}

/// The value as a `sha256:` digest.
pub fn expect_sha256<'a>(value: &'a Value, path: &Path) -> Result<&'a str> {
    let s = expect_str(value, path)?;
    if !is_sha256(s) {
        return Err(invalid(path, "expected sha256:<64 lowercase hex digits>"));
    }
    Ok(s)
}
