//! `makalog timeline` on the demo root: each turn with its runs, invocations and outcome in
//! order, ISO 8601 times and durations, `--json`, refusals, and nothing written.

mod common;

use common::{demo_root, makalog, snapshot, text};

#[test]
fn timeline_prints_each_turn_with_its_runs_invocations_and_outcome() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let out = makalog(&["timeline", r, "--session", "demo-3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let turns: Vec<&str> = stdout.lines().filter(|l| l.starts_with("turn ")).collect();
    assert_eq!(
        turns.len(),
        4,
        "three streamed turns and the interrupted one: {stdout}"
    );
    assert!(
        turns[..3].iter().all(|l| l.ends_with(" completed")),
        "{stdout}"
    );
    assert!(
        turns[3].ends_with(" failed"),
        "the turn the restart cut off: {stdout}"
    );
    assert!(
        stdout.contains("failed (app_restarted), started 20")
            && (stdout.contains(" ms\n") || stdout.contains(" s\n")),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("4 turns"));
    let json = makalog(&["timeline", r, "--session", "graph-child-2", "--json"]);
    let lines: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON turn per line"))
        .collect();
    assert_eq!(lines.len(), 1);
    let turn = &lines[0];
    assert_eq!(turn["turnId"], "graph-turn-2");
    assert_eq!(turn["runs"][0]["status"], "cancelled");
    assert_eq!(turn["runs"][0]["abortSource"], "stop_button");
    assert_eq!(turn["invocations"][0]["outcome"], "cancelled");
    assert_eq!(turn["state"]["status"], "aborted");
    assert_eq!(
        makalog(&["timeline", r, "--session", "nobody"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        makalog(&["timeline", r, "--session", "a/b"]).status.code(),
        Some(2)
    );
    assert_eq!(before, snapshot(&root), "a timeline writes nothing");
}
