//! `makalog index check`, `index rebuild` and `invocations` on the demo root and on a copy of
//! the version 1 events vector.

mod common;

use common::{demo_root, makalog, snapshot, text};
use std::os::unix::fs::FileExt;
use std::path::Path;

#[test]
fn index_check_finds_damaged_and_missing_sidecars_and_rebuild_mends_them() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let out = makalog(&["index", "check", r]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.ends_with(": equals a rebuild"))
            .count(),
        8,
        "three sessions, the three helper subagents of demo-1 and its two graph children"
    );
    let sidecar = root.join("sessions/demo-2/index");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&sidecar)
        .expect("open");
    f.write_all_at(b"\xff", 100).expect("damage");
    std::fs::remove_file(root.join("sessions/demo-3/index")).expect("remove");
    let out = makalog(&["index", "check", r]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("sessions/demo-2/index: damaged")
            || stdout.contains("sessions/demo-2/index: differs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("sessions/demo-3/index: no sidecar"),
        "{stdout}"
    );
    assert!(
        stdout.contains("sessions/demo-1/index: equals a rebuild"),
        "{stdout}"
    );
    let out = makalog(&["index", "rebuild", r]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(makalog(&["index", "check", r]).status.code(), Some(0));
}

#[test]
fn invocations_lists_each_turn_with_its_outcome_in_text_and_json() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let out = makalog(&["invocations", r, "--session", "demo-1"]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(
        lines.len(),
        5,
        "a header, three invocations, a count: {lines:?}"
    );
    assert!(lines[0].starts_with("INVOCATION ") && lines[0].ends_with(" OUTCOME"));
    assert!(
        lines[1..4]
            .iter()
            .all(|l| l.contains("Z  ") && l.ends_with("  completed")),
        "{lines:?}"
    );
    assert_eq!(lines[4], "3 invocations");
    let json = makalog(&["invocations", r, "--session", "demo-1", "--json"]);
    let values: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(values.len(), 3);
    for v in &values {
        assert_eq!(v["sessionId"], "demo-1");
        assert_eq!(v["opening"]["kind"], "invocation_opened");
        assert_eq!(v["terminalEvent"]["status"], "completed");
    }
    assert_eq!(
        makalog(&["invocations", r, "--session", "../x"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        makalog(&["invocations", r, "--session", "no-such-session"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn index_check_accepts_a_version_1_sidecar_that_reads_as_a_rebuild_and_rebuild_upgrades_it() {
    let vector = Path::new(env!("CARGO_MANIFEST_DIR")).join("../format/vectors/v1/events");
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let copy = |from: &Path, to: &Path| {
        for (path, bytes) in snapshot(from) {
            let dest = to.join(path.strip_prefix(from).expect("inside"));
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::write(dest, bytes).expect("copy");
        }
    };
    copy(&vector, &root);
    let r = root.to_str().expect("utf8");
    let index = root.join("sessions/vector-events/index");
    let before = std::fs::read(&index).expect("index");
    assert_eq!(
        u16::from_le_bytes([before[8], before[9]]),
        1,
        "the vector's sidecar is version 1"
    );
    let out = makalog(&["index", "check", r]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("equals a rebuild (sidecar version 1"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        std::fs::read(&index).expect("index"),
        before,
        "check writes nothing"
    );
    let listed = makalog(&["invocations", r, "--session", "vector-events", "--json"]);
    assert_eq!(
        text(&listed.stdout),
        std::fs::read_to_string(vector.join("expected-invocations.jsonl")).expect("expected")
    );
    assert_eq!(makalog(&["index", "rebuild", r]).status.code(), Some(0));
    let after = std::fs::read(&index).expect("index");
    assert_eq!(
        u16::from_le_bytes([after[8], after[9]]),
        makalog::index::SIDECAR_VERSION,
        "rebuilt in this build's version"
    );
    let out = makalog(&["index", "check", r]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("sessions/vector-events/index: equals a rebuild\n"),
        "{}",
        text(&out.stdout)
    );
}
