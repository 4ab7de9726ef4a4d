//! Writing to standard output without panicking when the reader has gone (a closed pipe, as in
//! `makalog dump ROOT | head`): the tool then stops quietly, as a pipeline expects.

use std::io::Write;

/// Prints one line; exits with status 1 if standard output is closed.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if out
        .write_fmt(args)
        .and_then(|_| out.write_all(b"\n"))
        .is_err()
    {
        std::process::exit(1);
    }
}

/// `println!` for the tool: never panics on a closed pipe.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
