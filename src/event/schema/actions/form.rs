//! `formRequest` (\[SPINE\]): a provider-neutral structured form raised by a tool call, checked
//! as the original's `decodeInteractionRequest` checks a form's structure.
//!
//! Not replicated: the original also proves a form admissible by building a witness answer
//! (string `format` and `model_picker` defaults, the 8 KiB answer envelope). makalog checks the
//! structure, bounds, uniqueness, ranges and the non-string defaults; the runtime that wrote the
//! fact ran the admission checks before it.

use super::super::fields::{
    array_of, decode_array, decode_object, expect_array, expect_int, expect_str, expect_tag,
    invalid, Decoded, Obj, Result,
};
use super::interaction::request_id;
use crate::event::canonical::canonical_string;
use crate::event::path::Path;
use serde_json::{json, Value};

/// At most 32 fields and 64 options.
const MAX_FIELDS: usize = 32;
const MAX_OPTIONS: usize = 64;
/// Byte limits of the original (`INTERACTION_*_MAX_BYTES`).
const ID_MAX: usize = 256;
const MESSAGE_MAX: usize = 2048;
const NAME_MAX: usize = 256;
const SOURCE_MAX: usize = 512;
const LABEL_MAX: usize = 256;
const DESCRIPTION_MAX: usize = 512;
const VALUE_MAX: usize = 2048;
/// The request (without its id) serializes to at most 16 KiB.
const REQUEST_MAX: usize = 16 * 1024;

/// Decodes `formRequest`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let decoded = decode_object(value, path, |form| {
        request_id(form)?;
        bounded(form, "toolUseId", ID_MAX, false)?;
        bounded(form, "message", MESSAGE_MAX, false)?;
        form.object("requester", |r| {
            bounded(r, "name", NAME_MAX, false)?;
            opt_bounded(r, "source", SOURCE_MAX, true).map(|_| ())
        })?;
        let fields_value = form.raw_required("fields")?;
        let at = form.at("fields");
        if expect_array(fields_value, &at)?.len() > MAX_FIELDS {
            return Err(invalid(&at, "at most 32 fields"));
        }
        let fields = decode_array(fields_value, &at, decode_field)?;
        let mut names = Vec::new();
        for (i, field) in fields.iter().enumerate() {
            let name = field
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if names.contains(&name) {
                return Err(invalid(&at.index(i).key("name"), "repeats a field name"));
            }
            names.push(name);
        }
        form.keep("fields", array_of(fields_value, fields));
        Ok(())
    })?;
    let request = json!({
        "kind": "form",
        "toolUseId": decoded.get("toolUseId"),
        "message": decoded.get("message"),
        "requester": decoded.get("requester"),
        "fields": decoded.get("fields"),
    });
    if canonical_string(&request).len() > REQUEST_MAX {
        return Err(invalid(path, "serializes to more than 16 KiB"));
    }
    Ok(decoded)
}

fn decode_field<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &[
            "string",
            "number",
            "integer",
            "boolean",
            "single_select",
            "multi_select",
        ],
    )?;
    decode_object(value, path, |f| {
        f.literal("kind", kind)?;
        bounded(f, "name", NAME_MAX, false)?;
        bounded(f, "label", LABEL_MAX, false)?;
        f.boolean("required")?;
        opt_bounded(f, "description", DESCRIPTION_MAX, true)?;
        match kind {
            "string" => read_string_field(f),
            "number" | "integer" => read_number_field(f, kind == "integer"),
            "boolean" => f.opt_boolean("default").map(|_| ()),
            "single_select" => {
                let values = options(f)?;
                if let Some(d) = opt_bounded(f, "default", VALUE_MAX, true)? {
                    if !values.contains(&d) {
                        return Err(invalid(&f.at("default"), "is not one of the options"));
                    }
                }
                Ok(())
            }
            _ => read_multi_select(f),
        }
    })
}

fn read_string_field(f: &mut Obj) -> Result<()> {
    let default = opt_bounded(f, "default", VALUE_MAX, true)?;
    let min = opt_count(f, "minLength", VALUE_MAX as i64)?;
    let max = opt_count(f, "maxLength", VALUE_MAX as i64)?;
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            return Err(invalid(&f.at("minLength"), "exceeds maxLength"));
        }
    }
    let format = f.opt_one_of("format", &["email", "uri", "date", "date-time"])?;
    let presentation = f.opt_one_of("presentation", &["model_picker"])?;
    if presentation.is_some() && format.is_some() {
        return Err(invalid(
            &f.at("presentation"),
            "a model picker declares no format",
        ));
    }
    if let Some(default) = default {
        let len = default.chars().count() as i64;
        if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
            return Err(invalid(
                &f.at("default"),
                "length outside minLength..maxLength",
            ));
        }
    }
    Ok(())
}

fn read_number_field(f: &mut Obj, integer: bool) -> Result<()> {
    let default = f.opt_number("default")?;
    let min = f.opt_number("minimum")?;
    let max = f.opt_number("maximum")?;
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            return Err(invalid(&f.at("minimum"), "exceeds maximum"));
        }
    }
    if let Some(d) = default {
        let whole = !integer
            || f.input()
                .get("default")
                .is_some_and(|v| expect_int(v, &f.at("default")).is_ok());
        if !whole || min.is_some_and(|m| d < m) || max.is_some_and(|m| d > m) {
            return Err(invalid(
                &f.at("default"),
                "is not a valid value of the field",
            ));
        }
    }
    Ok(())
}

fn read_multi_select(f: &mut Obj) -> Result<()> {
    let values = options(f)?;
    let count = values.len() as i64;
    let min = opt_count(f, "minItems", count)?;
    let max = opt_count(f, "maxItems", count)?;
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            return Err(invalid(&f.at("minItems"), "exceeds maxItems"));
        }
    }
    if let Some(default) = f.raw("default") {
        let at = f.at("default");
        let items = expect_array(default, &at)?;
        if items.len() > MAX_OPTIONS {
            return Err(invalid(&at, "at most 64 values"));
        }
        let mut seen = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let v = text(item, &at.index(i), VALUE_MAX, true)?;
            if seen.contains(&v) || !values.contains(&v) {
                return Err(invalid(&at.index(i), "repeats a value or is not an option"));
            }
            seen.push(v);
        }
        let n = seen.len() as i64;
        if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
            return Err(invalid(&at, "count outside minItems..maxItems"));
        }
        f.put("default", default.clone());
    }
    Ok(())
}

/// The options of a select field (1 to 64, values and labels unique); returns the values.
fn options<'a>(f: &mut Obj<'a>) -> Result<Vec<&'a str>> {
    let list = f.raw_required("options")?;
    let at = f.at("options");
    let items = expect_array(list, &at)?;
    if items.is_empty() || items.len() > MAX_OPTIONS {
        return Err(invalid(&at, "must hold 1 to 64 options"));
    }
    let mut values = Vec::new();
    let mut labels = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let op = at.index(i);
        decode_object(item, &op, |o| {
            bounded(o, "value", VALUE_MAX, true)?;
            bounded(o, "label", LABEL_MAX, false)?;
            opt_bounded(o, "description", DESCRIPTION_MAX, true)?;
            Ok(())
        })?;
        let value = item
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let label = item
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if values.contains(&value) || labels.contains(&label) {
            return Err(invalid(&op, "repeats an option value or label"));
        }
        values.push(value);
        labels.push(label);
    }
    f.put("options", list.clone());
    Ok(values)
}

/// A string of at most `max` UTF-8 bytes, non-empty unless `empty_ok`.
fn text<'a>(value: &'a Value, path: &Path, max: usize, empty_ok: bool) -> Result<&'a str> {
    let s = expect_str(value, path)?;
    if (!empty_ok && s.is_empty()) || s.len() > max {
        let least = if empty_ok { 0 } else { 1 };
        return Err(invalid(
            path,
            format!("must be {least} to {max} UTF-8 bytes"),
        ));
    }
    Ok(s)
}

fn bounded<'a>(o: &mut Obj<'a>, key: &'static str, max: usize, empty_ok: bool) -> Result<&'a str> {
    o.required(key, |v, p| text(v, p, max, empty_ok))
}

fn opt_bounded<'a>(
    o: &mut Obj<'a>,
    key: &'static str,
    max: usize,
    empty_ok: bool,
) -> Result<Option<&'a str>> {
    o.optional(key, |v, p| text(v, p, max, empty_ok))
}

/// An optional count from 0 to `max`.
fn opt_count(o: &mut Obj, key: &'static str, max: i64) -> Result<Option<i64>> {
    o.optional(key, |v, p| {
        let n = expect_int(v, p)?;
        if !(0..=max).contains(&n) {
            return Err(invalid(p, format!("must be 0 to {max}")));
        }
        Ok(n)
    })
}
