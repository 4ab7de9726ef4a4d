//! The parser's scalars: numbers (correctly rounded, as JavaScript reads them) and strings
//! (escapes, surrogate pairs joined, a lone surrogate refused).

use super::super::number;
use super::super::plain::plain_run;
use super::fail::{Fail, Why};
use super::Parser;
use serde_json::Value;

impl Parser<'_> {
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    pub(super) fn number(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("invalid number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("invalid number"));
            }
        }
        let text = self.text.get(start..self.pos).unwrap_or_default();
        if let Some(n) = small_integer(text) {
            return Ok(Value::Number(n));
        }
        let parsed: f64 = text.parse().map_err(|_| self.syntax("invalid number"))?;
        match number::from_f64(parsed) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(Fail::new(Why::Invalid(
                "number overflows to Infinity".to_string(),
            ))),
        }
    }

    /// Reads a string starting at its opening quote.
    pub(super) fn string(&mut self) -> Result<String, Fail> {
        self.pos += 1;
        // Most strings hold no escape: the run up to the closing quote is taken whole.
        let run = plain_run(self.rest());
        let mut start = self.pos;
        self.pos += run;
        if self.peek() == Some(b'"') {
            // The quote is ASCII, so the slice ends on a character boundary.
            let out = self
                .text
                .get(start..self.pos)
                .unwrap_or_default()
                .to_owned();
            self.pos += 1;
            return Ok(out);
        }
        let mut out = String::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.syntax("unterminated string"));
            };
            match byte {
                b'"' | b'\\' => {
                    // Both are ASCII, so the slice ends on a character boundary.
                    out.push_str(self.text.get(start..self.pos).unwrap_or_default());
                    self.pos += 1;
                    if byte == b'"' {
                        return Ok(out);
                    }
                    self.escape(&mut out)?;
                    start = self.pos;
                }
                0x00..=0x1f => return Err(self.syntax("control character in string")),
                _ => self.pos += 1,
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Fail> {
        let Some(byte) = self.peek() else {
            return Err(self.syntax("unterminated string"));
        };
        self.pos += 1;
        let c = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(self.syntax("invalid escape")),
        };
        out.push(c);
        Ok(())
    }

    /// The character of a `\uXXXX` escape (after the `u`), joining a surrogate pair; a surrogate
    /// without its partner is refused, since a Rust string cannot hold it.
    fn unicode_escape(&mut self) -> Result<char, Fail> {
        let unit = self.hex4()?;
        if (0xDC00..=0xDFFF).contains(&unit) {
            return Err(self.lone_surrogate());
        }
        if (0xD800..=0xDBFF).contains(&unit) {
            if !self.rest().starts_with(b"\\u") {
                return Err(self.lone_surrogate());
            }
            self.pos += 2;
            let low = self.hex4()?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return Err(self.lone_surrogate());
            }
            let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            return char::from_u32(code).ok_or_else(|| self.lone_surrogate());
        }
        char::from_u32(unit).ok_or_else(|| self.lone_surrogate())
    }

    fn lone_surrogate(&self) -> Fail {
        Fail::new(Why::LoneSurrogate)
    }

    fn hex4(&mut self) -> Result<u32, Fail> {
        let mut unit = 0u32;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.syntax("invalid \\u escape")),
            };
            unit = unit * 16 + u32::from(digit);
            self.pos += 1;
        }
        Ok(unit)
    }
}

/// The number an integer literal of at most 15 digits reads as, without going through `f64`:
/// below 10^15 < 2^53 every such integer is a double exactly, so this is what
/// [`number::from_f64`] makes of it (`-0` reads as `0`). `None` for any other literal.
fn small_integer(text: &str) -> Option<serde_json::Number> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits
        .bytes()
        .fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    Some(if negative && magnitude != 0 {
        serde_json::Number::from(-(magnitude as i64))
    } else {
        serde_json::Number::from(magnitude)
    })
}
