//! The CLI beside a process holding the owner lease. Its own test binary, its tests one at a
//! time: a child another test spawns inherits the lease's descriptor until it execs, and holds
//! the lock that long, so tests that take the lease must not overlap with spawning ones.

mod common;

use common::{demo_root, last_record, makalog, text};
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, MutexGuard};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn index_rebuild_needs_the_owner_lease_and_check_does_not() {
    let _serial = one_at_a_time();
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("acquire")
        .expect("free");
    assert_eq!(makalog(&["index", "rebuild", r]).status.code(), Some(2));
    assert_eq!(makalog(&["index", "check", r]).status.code(), Some(0));
    assert_eq!(
        makalog(&["invocations", r, "--session", "demo-1"])
            .status
            .code(),
        Some(0)
    );
    drop(owner);
    assert_eq!(makalog(&["index", "rebuild", r]).status.code(), Some(0));
}

#[test]
fn verify_on_a_live_root_notes_a_write_in_flight_and_on_a_copy_reports_it() {
    let _serial = one_at_a_time();
    let (_t, root) = demo_root();
    let (last, seg, data_end) = last_record(&root, "demo-3");
    // The start of a frame whose write has not finished: its header, part of its payload.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    f.set_len(data_end).expect("cut");
    let mut partial = 300u32.to_le_bytes().to_vec();
    partial.extend_from_slice(&[0x11, 0x22, 0x33, 0x44]);
    partial.extend_from_slice(&(last.seq + 1).to_le_bytes());
    partial.push(makalog::format::RecordKind::Message as u8);
    partial.extend_from_slice(b"{\"partly\":");
    f.write_all_at(&partial, data_end).expect("write");
    let r = root.to_str().expect("utf8");
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("acquire")
        .expect("free");
    let out = makalog(&["verify", r]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "owned by a live process: {stdout}"
    );
    assert!(
        stdout.contains(&format!("note: {} at byte {data_end}", last.file.display()))
            && stdout.contains("write in flight"),
        "{stdout}"
    );
    drop(owner);
    let out = makalog(&["verify", r]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "no live owner: {stdout}");
    assert!(
        stdout.contains(&format!(
            "{} at byte {data_end}: torn tail",
            last.file.display()
        )),
        "{stdout}"
    );
}

/// A roll caught between the new segment's creation and its header's last byte: on a live root
/// `verify` notes a create in flight and `dump` exits clean; on a copy nobody owns, both report
/// the torn create (`dump` exited clean there, where `verify` found it).
#[test]
fn a_roll_in_flight_is_a_note_on_a_live_root_and_a_torn_create_on_a_copy() {
    let _serial = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let r = root.to_str().expect("utf8");
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("create")
        .expect("free");
    let config = makalog::segment::WriterConfig {
        segment_size: 2048,
        ..makalog::segment::WriterConfig::default()
    };
    let (w, _) = makalog::segment::SegmentWriter::open(&owner, "s", config).expect("writer");
    for i in 0..20u8 {
        let payload = vec![b'a' + i; 200];
        w.append(
            makalog::format::RecordKind::RunSeal,
            &payload,
            makalog::segment::Durability::Durable,
        )
        .expect("append");
    }
    w.close().expect("close");
    let dir = root.join("sessions").join("s");
    let mut segments: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 2, "the log rolled");
    let last = segments.last().expect("a segment");
    common::cut_at(last, 100);
    let name = last
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();

    let out = makalog(&["verify", r]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "a live root: {stdout}");
    assert!(
        stdout.contains(&format!("note: sessions/s/{name} at byte 0"))
            && stdout.contains("create in flight"),
        "{stdout}"
    );
    let out = makalog(&["dump", r, "--session", "s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    drop(owner);

    let out = makalog(&["verify", r]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "no live owner: {stdout}");
    assert!(
        stdout.contains(&format!("sessions/s/{name} at byte 0: torn create")),
        "{stdout}"
    );
    let out = makalog(&["dump", r, "--session", "s"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("torn create"), "{stderr}");
}
