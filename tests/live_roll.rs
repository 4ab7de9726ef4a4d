//! A roll on a live root: the writer has sealed a segment and created the next, whose header
//! is not yet whole. `verify` and `heads` took that for damage, where they take a torn tail at
//! the end of a live owner's log for a write in flight; a create in flight is one too. On a copy
//! nobody owns, it is a torn create, as before.

mod support;

use makalog::forensics::session_head;
use makalog::segment::WriterConfig;
use makalog::storage::Storage;
use support::{segment_paths, temp_root};

#[test]
fn a_roll_in_flight_on_a_live_root_is_a_note_and_on_a_copy_a_finding() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 2048,
        ..WriterConfig::default()
    };
    support::write_n(&storage, "s", &config, 1, 40, 200);
    let root = storage.describe_root();
    let paths = segment_paths(&root, "s");
    assert!(paths.len() >= 2, "the log rolled");
    let last = paths.last().expect("a segment");
    // The segment just created, 100 bytes of its header written (the writer alone keeps no
    // sidecar that would vouch for records of it).
    std::fs::OpenOptions::new()
        .write(true)
        .open(last)
        .expect("open")
        .set_len(100)
        .expect("cut");
    assert!(!root.join("sessions/s/index").exists());
    let name = last
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();

    let owner = support::owner(&storage);
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains(&name) && n.contains("in flight")),
        "{:?}",
        report.notes
    );
    let (head, damaged) = session_head(&*storage, "s", true);
    assert!(
        head.is_some() && !damaged,
        "a live owner's roll is no damage"
    );
    drop(owner);

    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.contains(&name) && f.contains("torn create")),
        "{:?}",
        report.findings
    );
    let (_, damaged) = session_head(&*storage, "s", false);
    assert!(damaged, "on a copy nobody owns, a torn create");
}
