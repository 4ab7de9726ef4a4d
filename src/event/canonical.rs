//! Canonical JSON (MAKA-MODEL §2): keys sorted at every depth by UTF-16 code units, no
//! whitespace, numbers as JavaScript prints them, strings escaped as `JSON.stringify` (ES2019).
//!
//! serde_json's own writer differs (it prints `1.0` and `1e21` its own way and sorts keys by
//! UTF-8 bytes), so this module writes every byte itself.

use super::number::{format_json_number, MAX_SAFE_INTEGER};
use super::plain::plain_run;
use serde_json::{Number, Value};
use std::fmt::Write as _;

/// The canonical JSON text of a value.
pub fn canonical_string(value: &Value) -> String {
    canonical_string_sized(value, 0)
}

/// [`canonical_string`] into a buffer that starts with room for `size_hint` bytes: the length
/// of the text the value was read from, which the canonical text of a stored record equals,
/// so writing it never grows the buffer.
pub fn canonical_string_sized(value: &Value, size_hint: usize) -> String {
    let mut out = String::with_capacity(size_hint);
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
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
            out.push('{');
            if map.keys().all(|k| utf8_order_is_utf16_order(k)) {
                write_members(map.iter(), out);
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                // JavaScript compares strings by UTF-16 code units, which orders characters
                // above U+FFFF (surrogate pairs) before U+E000..U+FFFF, unlike UTF-8 byte order.
                entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
                write_members(entries.into_iter(), out);
            }
            out.push('}');
        }
    }
}

fn write_members<'v>(members: impl Iterator<Item = (&'v String, &'v Value)>, out: &mut String) {
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        write_value(item, out);
    }
}

/// Whether `key` holds no character at or above U+E000. A map's keys are in UTF-8 byte order,
/// which is code point order; UTF-16 code unit order differs from it only between a character
/// above U+FFFF and one in U+E000..U+FFFF, so among keys without either the map's order is
/// already JavaScript's. U+E000 is the first character whose UTF-8 lead byte is 0xEE or more.
fn utf8_order_is_utf16_order(key: &str) -> bool {
    key.bytes().all(|b| b < 0xEE)
}

/// A number as JavaScript prints it: a safe integer's decimal digits directly, anything else
/// through [`format_json_number`].
fn write_number(n: &Number, out: &mut String) {
    let safe = n
        .as_i64()
        .filter(|i| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i));
    match safe {
        Some(i) => {
            let _ = write!(out, "{i}");
        }
        None => out.push_str(&format_json_number(n)),
    }
}

/// A string as `JSON.stringify` writes it: the short escapes, other C0 controls as `\u00xx`,
/// everything else (including `/`, DEL and non-ASCII) raw.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    // Every byte that is escaped is ASCII, so each is a char boundary: the runs between them
    // are copied whole (most strings are one run).
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        let end = start + plain_run(&bytes[start..]);
        out.push_str(&s[start..end]);
        let Some(&b) = bytes.get(end) else { break };
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                debug_assert!(b < 0x20, "the run ends only at a byte to escape");
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        start = end + 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn keys_above_the_bmp_sort_before_private_use_keys_as_javascript_sorts_them() {
        // "\u{e000}" < "\u{10000}" in UTF-8 bytes; JavaScript's UTF-16 order is the reverse.
        let value = json!({"\u{e000}": 1, "\u{10000}": 2, "a": 3});
        assert_eq!(
            canonical_string(&value),
            "{\"a\":3,\"\u{10000}\":2,\"\u{e000}\":1}"
        );
    }

    #[test]
    fn integers_print_as_javascript_prints_them_on_both_sides_of_the_safe_range() {
        let value = json!([
            0,
            -7,
            9_007_199_254_740_991i64,
            9_007_199_254_740_993u64,
            1.5
        ]);
        assert_eq!(
            canonical_string(&value),
            "[0,-7,9007199254740991,9007199254740992,1.5]"
        );
    }

    #[test]
    fn a_size_hint_changes_nothing_but_the_buffer() {
        let value = json!({"b": [1, "x\ny"], "a": null});
        assert_eq!(canonical_string_sized(&value, 3), canonical_string(&value));
    }

    proptest! {
        /// JSON.stringify escapes strings as serde_json does: the short escapes, other C0
        /// controls as lowercase `\u00xx`, everything else raw.
        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(
            text in prop::collection::vec(
                prop_oneof![4 => 0x20u32..0x7f, 1 => 0u32..0x20, 1 => 0x7fu32..0x3000, 1 => 0x1_0000u32..0x11_0000],
                0..80,
            ).prop_map(|cs| cs.into_iter().filter_map(char::from_u32).collect::<String>()),
        ) {
            let mut out = String::new();
            write_string(&text, &mut out);
            prop_assert_eq!(out, serde_json::to_string(&text).expect("a string"));
        }
    }
}
