//! `makalog salvage`: a new root that verifies clean, holding every intact session as it was
//! and the valid prefix of the damaged ones, nothing recomputed, the source never written.

mod common;

use common::{copy_dir, demo_root, makalog, snapshot, text};
use std::os::unix::fs::FileExt;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// Every file of `dir` by its path relative to it.
fn files(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    snapshot(dir)
        .into_iter()
        .map(|(p, b)| (p.strip_prefix(dir).expect("under").to_path_buf(), b))
        .collect()
}

#[test]
fn a_clean_root_is_copied_whole_and_byte_for_byte() {
    let (t, root) = demo_root();
    let into = t.path().join("salvaged");
    let before = snapshot(&root);
    let out = makalog(&["salvage", s(&root), "--into", s(&into)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains(&format!("verify {}: clean", into.display())));
    assert_eq!(snapshot(&root), before, "the source is never written");
    let (src, dst) = (files(&root), files(&into));
    for (path, bytes) in &src {
        let name = path.to_string_lossy();
        if name == "owner.lock" || name == "open-runs" {
            assert!(!dst.contains_key(path), "{name} is not copied");
            continue;
        }
        assert_eq!(dst.get(path), Some(bytes), "{name} copied as it was");
    }
    assert_eq!(
        makalog(&["index", "check", s(&into)]).status.code(),
        Some(0)
    );
}

#[test]
fn a_damaged_session_keeps_its_valid_prefix_and_the_rest_is_reported_by_offset() {
    let (t, root) = demo_root();
    let damaged = t.path().join("damaged");
    copy_dir(&root, &damaged);
    let records = common::records(&root, "demo-2");
    let victim = &records[records.len() / 2];
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(damaged.join(&victim.file))
        .expect("open");
    f.write_all_at(b"\xff\xff", victim.offset + 20)
        .expect("damage");
    // A torn tail on the claims log too.
    let claims = std::fs::OpenOptions::new()
        .append(true)
        .open(damaged.join("claims.log"))
        .expect("claims");
    let claims_len = claims.metadata().expect("meta").len();
    claims
        .write_all_at(b"\x40\x00\x00\x00junk", claims_len)
        .expect("tear");
    assert_eq!(makalog(&["verify", s(&damaged)]).status.code(), Some(1));

    let before = snapshot(&damaged);
    let into = t.path().join("salvaged");
    let out = makalog(&["salvage", s(&damaged), "--into", s(&into)]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "something was left behind: {stdout}"
    );
    assert_eq!(snapshot(&damaged), before, "the source is never written");
    assert!(
        stdout.contains(&format!(
            "left {} from byte {}: ",
            victim.file.display(),
            victim.offset
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("left claims.log from byte {claims_len}: ")),
        "{stdout}"
    );
    assert_eq!(makalog(&["verify", s(&into)]).status.code(), Some(0));
    assert_eq!(
        makalog(&["index", "check", s(&into)]).status.code(),
        Some(0)
    );
    // Nothing was recomputed: every log of the salvaged root is the source's valid prefix (the
    // damaged session's and the torn claims log's too: the same records up to the damage).
    let out = makalog(&["diff", s(&damaged), s(&into)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    for line in stdout.lines().filter(|l| !l.starts_with(' ')) {
        assert!(
            line.contains(": the same;")
                || line.starts_with("demo-2: the same records up to damage")
                || line.starts_with("claims.log: the same records up to damage")
                || line.starts_with("2 of 9 logs differ or are damaged"),
            "{stdout}"
        );
    }
    let got = common::records(&into, "demo-2");
    assert_eq!(got.len() as u64, victim.seq - 1);
    assert_eq!(
        got.last().map(|r| r.chain),
        Some(records[got.len() - 1].chain)
    );

    let json = t.path().join("json");
    let out = makalog(&["salvage", s(&damaged), "--into", s(&json), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verifiesClean"], true);
    let demo2 = common::find(&v["sessions"], "session", "demo-2");
    assert_eq!(
        (demo2["kept"].as_u64(), demo2["intact"].as_bool()),
        (Some(victim.seq - 1), Some(false))
    );
}

#[test]
fn a_record_whose_frame_is_sound_but_payload_does_not_decode_is_left_behind() {
    let (t, root) = demo_root();
    let bad = t.path().join("bad");
    copy_dir(&root, &bad);
    let ack = common::append_raw(
        &bad,
        "demo-1",
        makalog::format::RecordKind::RuntimeEvent,
        b"{\"not\":\"an event\"}",
    );
    assert!(ack.seq > 1);
    let (last, _, _) = common::last_record(&bad, "demo-1");
    let into = t.path().join("salvaged");
    let out = makalog(&[
        "salvage",
        s(&bad),
        "--into",
        s(&into),
        "--session",
        "demo-1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "left {} from byte {}: ",
            last.file.display(),
            last.offset
        )) && stdout.contains("does not decode"),
        "{stdout}"
    );
    assert_eq!(makalog(&["verify", s(&into)]).status.code(), Some(0));
    let heads = text(&makalog(&["heads", s(&into)]).stdout);
    assert!(
        heads.contains("demo-1 ") && !heads.contains("demo-2 "),
        "only demo-1: {heads}"
    );
}

#[test]
fn salvage_refuses_an_existing_target_an_unknown_session_and_a_non_root_writing_nothing() {
    let (t, root) = demo_root();
    let existing = t.path().join("existing");
    std::fs::create_dir(&existing).expect("mkdir");
    std::fs::write(existing.join("keep"), b"mine").expect("write");
    let out = makalog(&["salvage", s(&root), "--into", s(&existing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("exists"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files(&existing).len(), 1, "nothing written into it");
    let into = t.path().join("new");
    for args in [
        vec![
            "salvage",
            s(&root),
            "--into",
            s(&into),
            "--session",
            "nobody",
        ],
        vec!["salvage", s(&root), "--into", s(&into), "--session", "../x"],
        vec!["salvage", s(&existing), "--into", s(&into)],
    ] {
        let out = makalog(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!into.exists(), "{args:?} wrote nothing");
    }
}

/// A log whose last segment, and a claims log, claim 1 GiB of zeros after their data (sparse
/// files: no data, and nothing to their maker): the new root gets the data and at most the
/// zeros a reader needs (the longest frame's worth), and spends no disk on zeros.
#[test]
fn a_huge_zero_tail_is_not_copied_out_densely() {
    use std::os::unix::fs::MetadataExt;
    let (t, root) = demo_root();
    let dir = root.join("sessions").join("demo-1");
    let mut segments: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segments.sort();
    let last = segments.last().expect("a segment").clone();
    let claims = root.join("claims.log");
    let mut data = Vec::new();
    for path in [&last, &claims] {
        data.push(std::fs::read(path).expect("read"));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        f.set_len(1 << 30).expect("grow");
    }
    let into = t.path().join("salvaged");
    let out = makalog(&["salvage", s(&root), "--into", s(&into)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("verify {}: clean", into.display())));
    let zeros_kept = makalog::storage::data_end::ZEROS_KEPT;
    for (path, had) in [&last, &claims].into_iter().zip(&data) {
        let copy = into.join(path.strip_prefix(&root).expect("under"));
        let meta = std::fs::metadata(&copy).expect("copied");
        let len = had.len() as u64;
        assert!(
            meta.len() >= len && meta.len() <= len + zeros_kept,
            "{}: {} bytes for {len} of data",
            copy.display(),
            meta.len()
        );
        assert!(
            meta.blocks() * 512 <= len + (1 << 20),
            "{}: {} bytes on disk for {len} of data",
            copy.display(),
            meta.blocks() * 512
        );
        let bytes = std::fs::read(&copy).expect("read");
        assert_eq!(&bytes[..had.len()], &had[..], "the data copied as it was");
        assert!(bytes[had.len()..].iter().all(|&b| b == 0));
    }
}
