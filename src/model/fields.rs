//! Checks the model's records share, used with the event decoder's exact-shape object reader
//! (`Obj`), so every error names its field's JSON path.

use crate::event::path::Path;
use crate::event::schema::fields::{expect_array, expect_object, expect_str, invalid, Obj, Result};
use crate::event::schema::fields::{expect_one_of, Decoded};
use serde_json::Value;

/// The longest "lid" (MAKA-MODEL §5), in UTF-16 code units as the original counts.
const LID_MAX: usize = 512;

/// A "lid": 1 to 512 UTF-16 code units, no control character.
pub fn lid(value: &Value, path: &Path) -> Result<()> {
    let s = expect_str(value, path)?;
    let units = s.encode_utf16().count();
    if units == 0 || units > LID_MAX {
        return Err(invalid(
            path,
            format!("must be 1 to {LID_MAX} characters, got {units}"),
        ));
    }
    if s.chars().any(char::is_control) {
        return Err(invalid(path, "must not contain control characters"));
    }
    Ok(())
}

/// A safe id: `^[A-Za-z0-9_-]{1,128}$` (session, turn and run ids).
pub fn safe_id(value: &Value, path: &Path) -> Result<()> {
    let s = expect_str(value, path)?;
    crate::format::validate_session_id(s)
        .map_err(|_| invalid(path, "must be 1 to 128 characters of A-Z a-z 0-9 _ -"))
}

/// An array of strings.
pub fn strings(value: &Value, path: &Path) -> Result<()> {
    for (i, item) in expect_array(value, path)?.iter().enumerate() {
        expect_str(item, &path.index(i))?;
    }
    Ok(())
}

/// A string or `null`.
pub fn string_or_null(value: &Value, path: &Path) -> Result<()> {
    match value {
        Value::Null => Ok(()),
        _ => expect_str(value, path).map(|_| ()),
    }
}

/// Any JSON object.
pub fn object(value: &Value, path: &Path) -> Result<()> {
    expect_object(value, path).map(|_| ())
}

/// Any JSON array.
pub fn array(value: &Value, path: &Path) -> Result<()> {
    expect_array(value, path).map(|_| ())
}

/// Any JSON value at all.
pub fn any(_: &Value, _: &Path) -> Result<()> {
    Ok(())
}

/// Reads each of `keys` as a required lid.
pub fn lids(o: &mut Obj, keys: &[&'static str]) -> Result<()> {
    for &key in keys {
        o.required(key, lid)?;
    }
    Ok(())
}

/// Reads each of `keys` as an optional string.
pub fn opt_strings(o: &mut Obj, keys: &[&'static str]) -> Result<()> {
    for &key in keys {
        o.opt_string(key)?;
    }
    Ok(())
}

/// A `permissionMode`: the legacy `execute` reads as `ask`, as the original reads it.
pub fn permission_mode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    match expect_one_of(value, path, &["explore", "ask", "bypass", "execute"])? {
        "execute" => Ok(Decoded::Owned(Value::String("ask".to_owned()))),
        _ => Ok(Decoded::Borrowed(value)),
    }
}
