//! Progress on standard error for long scans, only when it is a terminal: never in a pipe, a
//! file or CI, where it would be noise in the output a person or a program reads.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Runs `work` with a spinner saying `what` (and the time taken) on a terminal's stderr.
pub fn spinner<T>(what: &str, work: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return work();
    }
    let bar = ProgressBar::new_spinner().with_message(what.to_owned());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let out = work();
    bar.finish_and_clear();
    out
}

/// A bar of `len` steps saying `what`, on a terminal's stderr; hidden elsewhere.
pub fn bar(what: &str, len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len).with_message(what.to_owned());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
