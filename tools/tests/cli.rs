//! The `makalog` tool end to end: demo, verify (exit codes, findings), dump.

mod common;

use common::{demo_root, last_record, makalog, snapshot, text};
use std::os::unix::fs::FileExt;

#[test]
fn demo_writes_sessions_across_several_segments_and_verify_is_clean() {
    let (_t, root) = demo_root();
    for s in ["demo-1", "demo-2", "demo-3"] {
        let segs = std::fs::read_dir(root.join("sessions").join(s))
            .expect("session")
            .count();
        assert!(segs >= 3, "{s} has {segs} segments");
    }
    let out = makalog(&["verify", root.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("session demo-"))
            .count(),
        3
    );
    assert!(stdout.lines().any(
        |l| l.contains(", chain ") && l.split(", chain ").nth(1).is_some_and(|h| h.len() == 64)
    ));
}

#[test]
fn running_demo_again_extends_the_same_root_and_runs_no_claim_twice() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let count = || text(&makalog(&["dump", r]).stdout).lines().count();
    let runs = |s: &str| text(&makalog(&["runs", r, "--session", s]).stdout);
    let before = (count(), runs("graph-child-1"), runs("graph-child-2"));
    let again = makalog(&["demo", r]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let out = text(&again.stdout);
    assert!(
        out.contains("(same claim, run and summary), without the backend"),
        "{out}"
    );
    assert!(
        out.contains("1 interrupted run ended: ")
            && out.contains(" failed/app_restarted (stale_user_wait)"),
        "{out}"
    );
    assert!(count() > before.0, "new turns were written");
    assert_eq!(
        (runs("graph-child-1"), runs("graph-child-2")),
        (before.1, before.2),
        "a claimed intent runs once, however often the demo runs"
    );
}

#[test]
fn verify_reports_damage_with_file_and_offset_and_exits_1_without_writing() {
    let (_t, root) = demo_root();
    let seg = root.join("sessions/demo-2/00000000000000000001.seg");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    f.write_all_at(b"X", 600).expect("write");
    let before = snapshot(&root);
    let out = makalog(&["verify", root.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let finding = stdout
        .lines()
        .find(|l| l.starts_with("sessions/demo-2/00000000000000000001.seg at byte "))
        .unwrap_or_else(|| panic!("no finding line in {stdout}"));
    assert!(
        finding.contains("CRC") || finding.contains("chain"),
        "{finding}"
    );
    assert_eq!(before, snapshot(&root), "verify never writes");
}

/// A closed session's last record damaged (a flipped bit, no record after it) looks like a
/// write in flight, but its sidecar recorded it durable: the read commands report the damage
/// with file and offset and exit 1, as `dump` and `verify` do, instead of answering from the
/// records before it.
#[test]
fn read_commands_report_damage_to_a_record_the_sidecar_recorded_durable() {
    let (_t, root) = demo_root();
    let (last, seg, data_end) = last_record(&root, "demo-1");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    let mut byte = [0u8];
    std::fs::File::open(&seg)
        .expect("open")
        .read_exact_at(&mut byte, data_end - 2)
        .expect("read");
    f.write_all_at(&[byte[0] ^ 0x20], data_end - 2)
        .expect("write");
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let at = format!("{} at byte {}", last.file.display(), last.offset);
    for cmd in ["messages", "runs", "timeline", "invocations", "dump"] {
        let out = makalog(&[cmd, r, "--session", "demo-1"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(
            stderr.contains(&last.file.display().to_string())
                && stderr.contains(&format!("at byte {}:", last.offset)),
            "{cmd} names {at}: {stderr}"
        );
    }
    assert_eq!(before, snapshot(&root), "nothing written");
}

#[test]
fn read_commands_report_a_log_cut_cleanly_before_what_the_sidecar_recorded_durable() {
    let (_t, root) = demo_root();
    let (last, seg, _) = last_record(&root, "demo-1");
    // The last record removed whole: every frame left is sound, one record is gone.
    common::cut_at(&seg, last.offset);
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    for cmd in ["messages", "runs", "timeline", "invocations"] {
        let out = makalog(&[cmd, r, "--session", "demo-1"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(
            stderr.contains(&last.file.display().to_string())
                && stderr.contains(&format!("corrupt at byte {}:", last.offset))
                && stderr.contains("recorded as durable"),
            "{cmd} names where the log ends: {stderr}"
        );
    }
    assert_eq!(before, snapshot(&root), "nothing written");
}

#[test]
fn verify_exits_2_for_a_path_that_is_not_a_root_and_for_usage_errors() {
    let t = tempfile::tempdir().expect("tmp");
    let out = makalog(&["verify", t.path().to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a makalog root"));
    let missing = t.path().join("missing");
    assert_eq!(
        makalog(&["verify", missing.to_str().expect("utf8")])
            .status
            .code(),
        Some(2)
    );
    assert!(!missing.exists(), "verify creates nothing");
    assert_eq!(makalog(&["verify"]).status.code(), Some(2));
    assert_eq!(makalog(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn dump_prints_one_json_object_per_record() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let out = makalog(&["dump", r, "--session", "demo-1"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(lines.len() > 20);
    for (i, v) in lines.iter().enumerate() {
        assert_eq!(v["seq"].as_u64(), Some(i as u64 + 1));
        assert_eq!(v["session"], "demo-1");
        assert!(v["file"]
            .as_str()
            .is_some_and(|f| f.starts_with("sessions/demo-1/")));
        assert!(v["payload"].is_object());
    }
    assert_eq!(lines[0]["kind"], "session_header");
    let all = text(&makalog(&["dump", r]).stdout).lines().count();
    assert!(all > lines.len());
    assert_eq!(
        makalog(&["dump", r, "--session", "../etc"]).status.code(),
        Some(2)
    );
}

#[test]
fn claims_lists_graph_spawn_and_session_claims_in_text_and_json() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let out = makalog(&["claims", r]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("graph demo-graph intent graph_intent_"))
            .count(),
        3
    );
    assert!(stdout.contains("Cancelled (superseded by a newer plan)"));
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("spawn parent demo-1/parent-run"))
            .count(),
        3
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("session demo-"))
            .count(),
        3
    );
    let json = makalog(&["claims", r, "--graph", "demo-graph", "--json"]);
    let lines: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(lines
        .iter()
        .all(|l| l["type"] == "graph_intent_claim" && l["claim"]["graphId"] == "demo-graph"));
    assert_eq!(
        text(&makalog(&["claims", r, "--graph", "other"]).stdout),
        ""
    );
    let t = tempfile::tempdir().expect("tmp");
    assert_eq!(
        makalog(&["claims", t.path().to_str().expect("utf8")])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn verify_covers_the_claims_log() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let out = makalog(&["verify", r]);
    assert!(text(&out.stdout)
        .lines()
        .any(|l| l.starts_with("claims: ") && l.contains(" records, head seq ")));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(root.join("claims.log"))
        .expect("open");
    f.write_all_at(b"\xff", 300).expect("write");
    let out = makalog(&["verify", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout)
            .lines()
            .any(|l| l.starts_with("claims.log at byte ")),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        makalog(&["claims", r]).status.code(),
        Some(1),
        "claims reports the damage too"
    );
}

#[test]
fn verify_answers_at_once_on_fake_frame_headers_after_the_data_and_reports_them() {
    let (_t, root) = demo_root();
    let (last, seg, data_end) = last_record(&root, "demo-1");
    // 2 MiB of frame headers, one every 17 bytes, each with the next sequence number, a valid
    // kind and a length that fits the bytes left: a quadratic search would take hours.
    let garbage = 2usize << 20;
    let mut fake = Vec::with_capacity(garbage);
    while fake.len() + 17 <= garbage {
        let overhead = makalog::format::FrameLayout::NEW.overhead();
        let len = (garbage - fake.len()).saturating_sub(overhead) as u32;
        fake.extend_from_slice(&len.to_le_bytes());
        fake.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        fake.extend_from_slice(&(last.seq + 1).to_le_bytes());
        fake.push(makalog::format::RecordKind::Message as u8);
    }
    fake.resize(garbage, 0x5a);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    f.set_len(data_end).expect("cut");
    f.write_all_at(&fake, data_end).expect("write");
    let before = snapshot(&root);
    let out = makalog(&["verify", root.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    let prefix = format!("{} at byte {data_end}: ", last.file.display());
    let finding = stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no finding for {prefix} in {stdout}"));
    assert!(finding.contains("gave up"), "{finding}");
    assert_eq!(before, snapshot(&root), "verify never writes");
}

#[test]
fn verify_reports_a_runtime_event_the_store_could_not_read_though_its_frame_is_sound() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let (offset, file) = {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let (w, _) = makalog::segment::SegmentWriter::open(
            &owner,
            "demo-1",
            makalog::segment::WriterConfig::default(),
        )
        .expect("writer");
        let ack = w
            .append(
                makalog::format::RecordKind::RuntimeEvent,
                br#"{"not":"an event"}"#,
                makalog::segment::Durability::Durable,
            )
            .expect("append");
        // A stored message without its turn and text: the session's view refuses it too.
        let message = w
            .append(
                makalog::format::RecordKind::Message,
                br#"{"type":"user","id":"m","ts":1}"#,
                makalog::segment::Durability::Durable,
            )
            .expect("append");
        assert_eq!(message.ordinal, ack.ordinal, "both in the last segment");
        let name = makalog::segment::layout::segment_file_name(1);
        let files: Vec<_> = std::fs::read_dir(root.join("sessions/demo-1"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".seg"))
            .collect();
        let last = files.iter().max().cloned().unwrap_or(name);
        (
            (ack.offset, message.offset),
            format!("sessions/demo-1/{last}"),
        )
    };
    let (offset, message_offset) = offset;
    let out = makalog(&["verify", r]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("{file} at byte {offset}: runtime_event record"))
            && stdout.contains(&format!("{file} at byte {message_offset}: message record"))
            && stdout.contains("turnId"),
        "{stdout}"
    );
    // And the store indeed cannot read it.
    assert_eq!(
        makalog(&["invocations", r, "--session", "demo-1"])
            .status
            .code(),
        Some(1)
    );
}
