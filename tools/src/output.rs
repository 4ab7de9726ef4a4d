//! Writing to standard output without panicking when the reader has gone (a closed pipe, as in
//! `makalog dump ROOT | head`): the tool then stops quietly, as a pipeline expects.
//!
//! Every line, to standard output or standard error, is printed with its control characters
//! (U+0000 to U+001F, U+007F, U+0080 to U+009F) escaped as JSON writes them (`\u001b`): a root
//! the tool reads may be hostile, and a name or a text holding an escape sequence (ESC, or C1's
//! CSI and OSC) would otherwise reach the terminal of the person reading (a clipboard write, a
//! cursor move), and a line break would forge a row. A line the tool prints is one line; a JSON
//! line stays valid JSON with the same values.

use std::borrow::Cow;
use std::io::Write;

/// Prints one line; exits with status 1 if standard output is closed.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(shown(args).as_bytes())
        .and_then(|_| out.write_all(b"\n"))
        .is_err()
    {
        std::process::exit(1);
    }
}

/// Prints one line whose bytes are the contract (`events canonicalize`'s canonical JSON, which
/// holds no C0 control or line break), as it is: DEL and C1 characters stay raw, as §2 writes
/// them. Exits with status 1 if standard output is closed.
pub fn exact_line(text: &str) {
    debug_assert!(!text.chars().any(|c| c.is_ascii_control() && c != '\u{7f}'));
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
        .is_err()
    {
        std::process::exit(1);
    }
}

/// Prints one line to standard error (a closed standard error is let be).
pub fn error_line(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(shown(args).as_bytes())
        .and_then(|_| err.write_all(b"\n"));
}

/// `text` with its control characters escaped: for a writer of many lines (`dump`'s buffered
/// one) that does not go through [`line`].
pub fn escaped(text: &str) -> Cow<'_, str> {
    match shown(format_args!("{text}")) {
        Cow::Owned(s) => Cow::Owned(s),
        Cow::Borrowed(_) => Cow::Borrowed(text),
    }
}

/// The text of `args` with its control characters escaped.
fn shown(args: std::fmt::Arguments<'_>) -> Cow<'static, str> {
    let text = match args.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(args.to_string()),
    };
    if !text.chars().any(char::is_control) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// `println!` for the tool: never panics on a closed pipe, escapes control characters.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// `eprintln!` for the tool: escapes control characters.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::output::error_line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_nothing_else_changes() {
        let shown = |s: &str| shown(format_args!("{s}")).into_owned();
        assert_eq!(shown("plain é \" \\ text"), "plain é \" \\ text");
        assert_eq!(
            shown("a\u{1b}]52;c;x\u{7}\r\nb\t"),
            "a\\u001b]52;c;x\\u0007\\u000d\\u000ab\\u0009"
        );
        assert_eq!(shown("\u{7f} \u{9b}31m"), "\\u007f \\u009b31m");
        let json = serde_json::json!({"name": "x\u{9d}y\u{1b}"}).to_string();
        let back: serde_json::Value = serde_json::from_str(&shown(&json)).expect("still JSON");
        assert_eq!(back["name"], "x\u{9d}y\u{1b}");
    }
}
