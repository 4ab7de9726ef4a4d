//! String rules as the original runtime states them in JavaScript: lengths in UTF-16 code
//! units, byte limits in UTF-8, `trim()` whitespace, and the recurring id and digest patterns.

/// `s.length` in JavaScript: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `^sha256:[0-9a-f]{64}$`.
pub fn is_sha256(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(is_lower_hex))
}

/// Lowercase hexadecimal digit.
pub fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// `^<prefix>[0-9a-f]{<hex_len>}$`, the shape of the workspace identifiers.
pub fn is_prefixed_hex(s: &str, prefix: &str, hex_len: usize) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|hex| hex.len() == hex_len && hex.bytes().all(is_lower_hex))
}

/// `^[A-Za-z0-9_-]{1,max}$`.
pub fn is_token(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Holds a character in `[\u0000-\u001f\u007f]`.
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| (c as u32) < 0x20 || c == '\u{7f}')
}

/// `s.trim() === ''` in JavaScript, whose whitespace (WhiteSpace and LineTerminator) differs
/// from Rust's `char::is_whitespace` at U+0085 and U+FEFF.
pub fn js_trims_to_empty(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(
            c,
            '\u{9}'..='\u{d}'
                | ' '
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
        )
    })
}
