//! `makalog events canonicalize`: RuntimeEvents as JSON, one per line on standard input; for each,
//! its canonical JSON (MAKA-MODEL §2) or `error: <reason>` on one line of standard output.

use makalog::event::RuntimeEvent;
use std::io::BufRead;
use std::process::ExitCode;

/// Canonicalizes standard input line by line; exit 1 if any line was refused (or input failed).
///
/// Lines holding only whitespace are skipped, so a trailing blank line is not an error.
pub fn canonicalize() -> ExitCode {
    let mut refused = false;
    for (index, line) in std::io::stdin().lock().split(b'\n').enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                tell!("makalog: standard input: {e}");
                return ExitCode::from(1);
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let outcome = match std::str::from_utf8(&line) {
            Ok(text) => RuntimeEvent::decode(text).map_err(|e| e.to_string()),
            Err(_) => Err(format!("line {} is not valid UTF-8", index + 1)),
        };
        match outcome {
            Ok(event) => crate::output::exact_line(event.canonical_json()),
            Err(reason) => {
                refused = true;
                say!("error: {reason}");
            }
        }
    }
    if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
