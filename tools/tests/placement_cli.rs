//! Where a segment's header places it, read by every tool as verify reads it (FORMAT.md,
//! "Reading and recovery": the session at byte 66, the first sequence number at 24, the first
//! segment's ordinal at 16 and its genesis chain at 32; a gap in ordinals a mismatch naming
//! both files). The record reader behind `dump`, `replay` and the read views reported every
//! such problem at byte 0, and an ordinal gap at byte 16 of one file.

mod common;

use common::{demo_root, makalog, text};
use std::path::{Path, PathBuf};

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut segs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segs.sort();
    segs
}

/// A session's first segment copied into another session's directory, in place of its own.
#[test]
fn another_sessions_segment_is_damage_at_byte_66_for_dump_as_for_verify() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let a = segments(&root.join("sessions/demo-2"));
    let b = segments(&root.join("sessions/demo-3"));
    for later in &b[1..] {
        std::fs::remove_file(later).expect("remove");
    }
    std::fs::copy(&a[0], &b[0]).expect("copy");
    let verify = text(&makalog(&["verify", r]).stdout);
    assert!(
        verify.contains("sessions/demo-3/00000000000000000001.seg at byte 66"),
        "{verify}"
    );
    let dump = makalog(&["dump", r, "--session", "demo-3"]);
    assert_eq!(dump.status.code(), Some(1));
    let err = text(&dump.stderr);
    assert!(err.contains("corrupt at byte 66"), "{err}");
}

/// A middle segment removed: the ordinals then go 0, 2, a mismatch of the two files (and the
/// sequence numbers leave a gap), as verify says.
#[test]
fn a_missing_middle_segment_is_a_mismatch_of_the_two_files_around_it() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let segs = segments(&root.join("sessions/demo-2"));
    assert!(segs.len() >= 3, "the demo rolls its sessions: {segs:?}");
    std::fs::remove_file(&segs[1]).expect("remove");
    let name = |p: &PathBuf| p.file_name().expect("name").to_string_lossy().into_owned();
    let dump = makalog(&["dump", r, "--session", "demo-2"]);
    assert_eq!(dump.status.code(), Some(1));
    let err = text(&dump.stderr);
    assert!(
        err.contains(&name(&segs[0])) && err.contains(&name(&segs[2])),
        "names both files: {err}"
    );
    assert!(!err.contains("corrupt at byte"), "{err}");
}

/// A session of one unsealed segment with a copy of it under a later, non-adjacent name: the
/// short ways to a read-only view (no sidecar: the first segment alone; a sidecar: the segments
/// its covers name) probed only the name after the last segment, so they answered cleanly from
/// the first where a rebuild from the segments and verify find damage. Either way, with or
/// without the sidecar, the answer is now the segments' own.
#[test]
fn a_stray_later_segment_is_seen_by_the_short_ways_as_by_a_rebuild() {
    for keep_sidecar in [false, true] {
        let (_t, root) = demo_root();
        let r = root.to_str().expect("utf8");
        let dir = root.join("sessions/helper-0");
        let segs = segments(&dir);
        assert_eq!(segs.len(), 1, "{segs:?}");
        std::fs::copy(&segs[0], dir.join("00000000000000000009.seg")).expect("copy");
        if !keep_sidecar {
            std::fs::remove_file(dir.join("index")).expect("no sidecar");
        }
        let rebuilt = makalog(&["messages", r, "--session", "helper-0", "--from-segments"]);
        assert_eq!(
            rebuilt.status.code(),
            Some(1),
            "sidecar kept: {keep_sidecar}"
        );
        for args in [
            vec!["messages", r, "--session", "helper-0"],
            vec!["runs", r, "--session", "helper-0"],
        ] {
            let out = makalog(&args);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{args:?}, sidecar kept: {keep_sidecar}: {}",
                text(&out.stdout)
            );
            assert_eq!(text(&out.stderr), text(&rebuilt.stderr), "{args:?}");
        }
    }
}
