//! Writing to standard output without panicking when the reader has gone (a closed pipe, as in
//! `makalog dump ROOT | head`): the tool then stops quietly, as a pipeline expects.
//!
//! Every line, to standard output or standard error, is printed with its control characters
//! (U+0000 to U+001F) escaped as Rust writes them (`\u{1b}`, `\n`, `\r`): a root the tool reads
//! may be hostile, and a name or a text holding an escape sequence would otherwise reach the
//! terminal of the person reading (a clipboard write, a cursor move), and a line break would
//! forge a row. A line the tool prints is one line; JSON output holds no such character raw.

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

/// Prints one line to standard error (a closed standard error is let be).
pub fn error_line(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(shown(args).as_bytes())
        .and_then(|_| err.write_all(b"\n"));
}

/// The text of `args` with its control characters escaped.
fn shown(args: std::fmt::Arguments<'_>) -> Cow<'static, str> {
    let text = match args.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(args.to_string()),
    };
    if !text.chars().any(|c| c.is_ascii_control() && c != '\u{7f}') {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\u{0}'..='\u{1f}' => escaped.extend(c.escape_default()),
            _ => escaped.push(c),
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
            "a\\u{1b}]52;c;x\\u{7}\\r\\nb\\t"
        );
        assert_eq!(shown("del \u{7f} stays"), "del \u{7f} stays");
    }
}
