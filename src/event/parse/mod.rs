//! A strict JSON reader (the grammar `JSON.parse` accepts) into serde_json values, written so
//! that every refusal names the field it happened in.
//!
//! serde_json's reader would do for the grammar, but it reports a lone surrogate or a number
//! that overflows to Infinity only as a line and column; this reader names the field, and
//! parses numbers with Rust's correctly rounded `str::parse::<f64>`, like JavaScript. Repeated
//! keys keep the last value, as `JSON.parse` does.

use super::error::EventError;
use serde_json::{Map, Value};

mod fail;
mod scalars;

use fail::{Fail, Segment, Why};

/// The deepest nesting of arrays and objects accepted, so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 256;

/// Parses one JSON text; surrounding whitespace is allowed, anything else after the value is not.
pub(crate) fn parse(text: &str) -> Result<Value, EventError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0).map_err(Fail::into_error)?;
    parser.skip_whitespace();
    if parser.pos != parser.bytes.len() {
        return Err(parser
            .syntax("unexpected text after the JSON value")
            .into_error());
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn syntax(&self, what: &str) -> Fail {
        Fail::new(Why::Invalid(format!(
            "not JSON: {what} at byte {}",
            self.pos
        )))
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), Fail> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Fail> {
        match self.peek() {
            None => Err(self.syntax("unexpected end of input")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.syntax("unexpected character")),
        }
    }

    fn too_deep(&self, depth: usize) -> Result<(), Fail> {
        if depth > MAX_DEPTH {
            return Err(Fail::new(Why::Invalid(format!(
                "nested deeper than {MAX_DEPTH} levels"
            ))));
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<Value, Fail> {
        self.too_deep(depth)?;
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(Map::new()));
        }
        // A repeated key keeps its last value, as `JSON.parse` does.
        let mut map = Map::new();
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.syntax("expected a string key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            self.expect(b':', "expected ':'")?;
            self.skip_whitespace();
            match self.value(depth) {
                Ok(value) => map.insert(key, value),
                Err(fail) => return Err(fail.within(Segment::Key(key))),
            };
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.syntax("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Fail> {
        self.too_deep(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            let value = self
                .value(depth)
                .map_err(|fail| fail.within(Segment::Index(items.len())))?;
            items.push(value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax("expected ',' or ']'")),
            }
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Fail> {
        if self.rest().starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.syntax("unexpected character"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::number;
    use serde_json::json;

    #[test]
    fn a_repeated_key_keeps_its_last_value_wherever_the_repeat_falls() {
        assert_eq!(
            parse(r#"{"b":1,"a":2,"b":3,"c":4,"a":5}"#).unwrap(),
            json!({"a": 5, "b": 3, "c": 4})
        );
        assert_eq!(parse(r#"{"a":1,"a":2,"a":3}"#).unwrap(), json!({"a": 3}));
    }

    #[test]
    fn a_refusal_names_the_path_it_happened_at() {
        let field = |text: &str| match parse(text).unwrap_err() {
            EventError::Invalid { field, .. } | EventError::LoneSurrogate { field } => field,
            other => panic!("{other}"),
        };
        assert_eq!(field(r#"{"a":[1,{"b":"\ud800"}]}"#), "a[1].b");
        assert_eq!(field(r#"{"a":{"b":[tru]}}"#), "a.b[0]");
        assert_eq!(field(r#"{"a":{"b":1,}}"#), "a");
        assert_eq!(field(r#"{"a":1e999}"#), "a");
        assert_eq!(field("[1,2"), "<event>");
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(field(&format!(r#"{{"k":{deep}}}"#)).starts_with("k[0][0]"));
    }

    #[test]
    fn strings_with_and_without_escapes_read_the_same_characters() {
        assert_eq!(
            parse(r#"["plain é", "a\"b\\c\n\u00e9\ud83d\ude00", ""]"#).unwrap(),
            json!(["plain é", "a\"b\\c\né😀", ""])
        );
        assert!(parse("[\"tab\tinside\"]").is_err());
        assert!(parse("[\"unterminated").is_err());
        assert!(parse("[\"unterminated\\").is_err());
    }

    #[test]
    fn integer_literals_read_as_their_double_does() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "123456789012345",
            "-999999999999999",
            "1234567890123456",
            "9007199254740993",
            "-9223372036854775809",
            "1e3",
            "1.0",
            "-0.0",
            "12.5",
        ] {
            let expected = number::from_f64(text.parse().unwrap()).unwrap();
            assert_eq!(parse(text).unwrap(), Value::Number(expected), "{text}");
        }
    }
}
