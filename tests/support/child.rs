//! Two-process tests: this test binary runs one of its ignored tests as a child, reads what it
//! acknowledges, and kills it with SIGKILL.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the ignored test `name` of this binary in a child with `env` set to `root`, reads the
/// acknowledgements it prints (`parse` turns a line into one) until `at_least` have come, kills
/// it, and returns every acknowledgement it printed before it died.
pub fn acks_until_killed<T>(
    name: &str,
    env: &str,
    root: &Path,
    at_least: usize,
    parse: impl Fn(&str) -> Option<T>,
) -> Vec<T> {
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", name, "--ignored", "--nocapture"])
        .env(env, root)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < at_least {
        let line = lines.next().expect("child ended early").expect("line");
        acked.extend(parse(&line));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    // Lines the child printed before it died are acknowledgements too.
    acked.extend(lines.map_while(Result::ok).filter_map(|l| parse(&l)));
    acked
}

/// `makalog verify` of the root at `root` finds nothing.
pub fn assert_verifies_clean(root: &Path) {
    let report =
        makalog::verify::verify_root(&makalog::storage::RealStorage::new(root)).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
}
