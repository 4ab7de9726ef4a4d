//! Canonical JSON (MAKA-MODEL §2): keys sorted at every depth by UTF-16 code units, no
//! whitespace, numbers as JavaScript prints them, strings escaped as `JSON.stringify` (ES2019).
//!
//! serde_json's own writer differs (it prints `1.0` and `1e21` its own way and sorts keys by
//! UTF-8 bytes), so this module writes every byte itself.

use super::number::format_json_number;
use serde_json::Value;
use std::fmt::Write as _;

/// The canonical JSON text of a value.
pub fn canonical_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&format_json_number(n)),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // JavaScript compares strings by UTF-16 code units, which orders characters above
            // U+FFFF (surrogate pairs) before U+E000..U+FFFF, unlike UTF-8 byte order.
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// A string as `JSON.stringify` writes it: the short escapes, other C0 controls as `\u00xx`,
/// everything else (including `/`, DEL and non-ASCII) raw.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    // Every byte that is escaped is ASCII, so each is a char boundary: the runs between them
    // are copied whole.
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}
