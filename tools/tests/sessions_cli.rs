//! `makalog sessions` and `makalog messages` on the demo root: text for people, canonical JSON
//! lines, refusals with their exit codes, and nothing written.

mod common;

use common::{demo_root, makalog, snapshot, text};

#[test]
fn sessions_lists_every_session_with_its_status_and_last_activity() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let out = makalog(&["sessions", r]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("SESSION") && lines[0].contains("LAST ACTIVITY (UTC)"),
        "{stdout}"
    );
    let ids: Vec<&str> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.split_whitespace().next().expect("an id"))
        .collect();
    assert_eq!(
        ids,
        [
            "demo-1",
            "graph-child-1",
            "graph-child-2",
            "helper-0",
            "helper-1",
            "helper-2",
            "demo-2",
            "demo-3"
        ],
        "demo-1's children under it"
    );
    assert!(
        lines[2].starts_with("  graph-child-1"),
        "indented under its parent: {stdout}"
    );
    for line in [lines[1], lines[7], lines[8]] {
        let at = line.split_whitespace().nth(2).expect("a time");
        assert!(line.contains(" active "), "recovered and idle: {line}");
        assert!(
            at.len() == 24 && at.as_bytes()[10] == b'T' && at.ends_with('Z'),
            "ISO 8601 UTC: {line}"
        );
    }
    assert_eq!(lines.last().copied(), Some("8 sessions"));
    let json = makalog(&["sessions", r, "--json"]);
    let headers: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON header per line"))
        .collect();
    assert_eq!(headers.len(), 8);
    assert_eq!(headers[0]["id"], "demo-1");
    assert!(headers
        .iter()
        .any(|h| h["subagentParent"]["parentSessionId"] == "demo-1"));
    assert_eq!(before, snapshot(&root), "listing writes nothing");
}

#[test]
fn messages_prints_a_session_or_one_turn_and_refuses_what_is_not_there() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let all = makalog(&["messages", r, "--session", "demo-1"]);
    assert_eq!(all.status.code(), Some(0));
    let stdout = text(&all.stdout);
    assert!(
        stdout.contains(" user ") && stdout.contains(" turn_state "),
        "{stdout}"
    );
    // Three turns of a user message, its turn running, the answer and the turn completed.
    assert_eq!(stdout.lines().last(), Some("12 messages"));
    // The first turn's user message names what it attached; the later ones attached nothing.
    assert_eq!(
        stdout.matches("[attached: README.md]").count(),
        1,
        "{stdout}"
    );
    let json = makalog(&["messages", r, "--session", "demo-1", "--json"]);
    let messages: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON message per line"))
        .collect();
    assert_eq!(messages.len(), 12);
    assert_eq!(
        (&messages[0]["type"], &messages[0]["attachments"][0]["ref"]),
        (
            &serde_json::json!("user"),
            &serde_json::json!({"kind": "workspace_file", "relativePath": "README.md"})
        )
    );
    let turn = messages[0]["turnId"].as_str().expect("turn").to_owned();
    let one = makalog(&[
        "messages",
        r,
        "--session",
        "demo-1",
        "--turn",
        &turn,
        "--json",
    ]);
    let one_text = text(&one.stdout);
    let of_turn: Vec<&str> = one_text.lines().collect();
    assert_eq!(
        of_turn.len(),
        4,
        "the turn's user message, its two turn states and the answer"
    );
    assert!(of_turn
        .iter()
        .all(|l| l.contains(&format!("\"turnId\":\"{turn}\""))));
    let missing = makalog(&["messages", r, "--session", "nobody"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("no session nobody"));
    let bad = makalog(&["messages", r, "--session", "a/b"]);
    assert_eq!(bad.status.code(), Some(2));
    let not_root = makalog(&["sessions", "/"]);
    assert_eq!(not_root.status.code(), Some(2));
    assert_eq!(before, snapshot(&root), "reading messages writes nothing");
}

#[test]
fn runs_prints_each_run_with_its_status_duration_and_events() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let out = makalog(&["runs", r, "--session", "demo-1"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" completed "))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    for row in rows {
        assert!(
            (row.contains(" ms  ") || row.contains(" s  "))
                && row.ends_with("run_created, run_started, run_completed"),
            "{row}"
        );
    }
    let json = makalog(&["runs", r, "--session", "demo-1", "--json"]);
    let first: serde_json::Value =
        serde_json::from_str(text(&json.stdout).lines().next().expect("a run")).expect("json");
    assert_eq!(first["run"]["status"], "completed");
    assert_eq!(first["events"][0]["sequence"], 0);
    assert_eq!(first["events"][1]["event"]["type"], "run_started");
    assert_eq!(first["events"][2]["event"]["type"], "run_completed");
    assert_eq!(
        makalog(&["runs", r, "--session", "nobody"]).status.code(),
        Some(1)
    );
    assert_eq!(before, snapshot(&root), "listing runs writes nothing");
}

/// Parent ids a hostile root makes circular (two subagents each naming the other as parent)
/// left both out of the tree, with no root to start from, while the count said they were
/// there: every session is listed once, those in a cycle as roots.
#[test]
fn sessions_whose_parents_form_a_cycle_are_listed_once_each() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let s = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        for (id, parent) in [("loop-a", "loop-b"), ("loop-b", "loop-a")] {
            s.sessions
                .create_subagent(common::subagent_header(id, parent))
                .expect("a child");
        }
        s.close().expect("close");
    }
    let out = makalog(&["sessions", root.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0));
    let listed = text(&out.stdout);
    for id in ["loop-a", "loop-b"] {
        assert_eq!(
            listed
                .lines()
                .filter(|l| l.trim_start().starts_with(id))
                .count(),
            1,
            "{id} once:\n{listed}"
        );
    }
    assert!(listed.contains("2 sessions"), "{listed}");
    // The report's tree of sessions, likewise.
    let page = t.path().join("report.html");
    let out = makalog(&[
        "report",
        root.to_str().expect("utf8"),
        "-o",
        page.to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).expect("the page");
    for id in ["loop-a", "loop-b"] {
        let item = format!(r##"<li><a href="#session-{id}">"##);
        assert_eq!(html.matches(&item).count(), 1, "{id} once in the tree");
    }
}

/// A chain of parents as long as a hostile root likes would indent each line by its depth, so
/// the listing grew with the square of the chain: indentation stops at a bound, and a line
/// deeper than it says its depth.
#[test]
fn a_long_chain_of_parents_is_listed_with_bounded_indentation() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let n = 200;
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let s = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        let mut first = common::subagent_header("link-000", "none");
        for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
            first.as_object_mut().expect("object").remove(key);
        }
        s.sessions.create(first).expect("the root");
        for i in 1..n {
            let (id, parent) = (format!("link-{i:03}"), format!("link-{:03}", i - 1));
            s.sessions
                .create_subagent(common::subagent_header(&id, &parent))
                .expect("a child");
        }
        s.close().expect("close");
    }
    let out = makalog(&["sessions", root.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0));
    let listed = text(&out.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), n + 2, "a header, each session, the count");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let deepest = lines.iter().map(|l| indent(l)).max().expect("lines");
    assert!(deepest <= 2 * 32, "indented {deepest} columns");
    let last = lines[n];
    assert!(
        last.trim_start().starts_with("[199] link-199"),
        "the depth said: {last}"
    );
}

/// One session that cannot be read (its sidecar gone, its first record damaged) hides none of
/// the others: they are listed, the damaged one is named on standard error with its file and
/// byte offset, and the exit status says something could not be read.
#[test]
fn a_damaged_session_is_named_and_the_others_still_listed() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let dir = root.join("sessions").join("demo-2");
    std::fs::remove_file(dir.join("index")).expect("sidecar");
    let segment = dir.join("00000000000000000001.seg");
    let mut bytes = std::fs::read(&segment).expect("segment");
    // A byte of the first record's payload: its CRC no longer holds, and records follow.
    bytes[256 + 40] ^= 0x20;
    std::fs::write(&segment, &bytes).expect("damage");
    let before = snapshot(&root);
    let out = makalog(&["sessions", r]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let listed = stdout.lines().filter(|l| l.contains(" active ")).count();
    assert_eq!(listed, 7, "every other session:\n{stdout}");
    assert!(!stdout.contains("demo-2"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sessions/demo-2/00000000000000000001.seg") && stderr.contains("256"),
        "the damaged file and offset: {stderr}"
    );
    assert!(
        stderr.starts_with("makalog: sessions/demo-2: "),
        "the session named first, whatever its error names: {stderr}"
    );
    assert_eq!(
        text(&makalog(&["sessions", r, "--json"]).stdout)
            .lines()
            .count(),
        7
    );
    assert_eq!(before, snapshot(&root), "listing writes nothing");
}

/// An entry of `sessions/` that is no session directory (a symlink out of the root, a file)
/// is named on standard error and left out, never followed; the sessions are listed.
#[test]
fn an_entry_that_is_no_session_directory_is_named() {
    let (t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let elsewhere = t.path().join("elsewhere");
    std::fs::write(&elsewhere, b"outside the root").expect("file");
    std::os::unix::fs::symlink(&elsewhere, root.join("sessions").join("linked")).expect("link");
    std::fs::write(root.join("sessions").join("notes.txt"), b"x").expect("file");
    let before = snapshot(&root);
    let out = makalog(&["sessions", r]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" active ")).count(),
        8,
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    for name in ["sessions/linked", "sessions/notes.txt"] {
        assert!(stderr.contains(name), "{name} named: {stderr}");
    }
    assert!(
        stdout.ends_with("8 sessions, and 2 that could not be read\n"),
        "{stdout}"
    );
    assert_eq!(before, snapshot(&root), "listing writes nothing");
}
