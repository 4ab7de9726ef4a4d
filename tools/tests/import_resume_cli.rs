//! `makalog import-sqlite` killed with SIGKILL halfway and run again: it ends with the records
//! and claims an uninterrupted import leaves, and a clean root.
#![cfg(feature = "sqlite")]

mod common;

use common::sqlite_gen::{generate, Shape};
use common::{assert_clean, import, json_lines, s};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Each session's records (kind, payload) and the claims, read back.
type Records = Vec<(u8, Vec<u8>)>;

fn contents(root: &Path) -> (BTreeMap<String, Records>, Vec<Value>) {
    let storage = makalog::storage::RealStorage::unmapped(root);
    let mut sessions = BTreeMap::new();
    for e in std::fs::read_dir(root.join("sessions")).expect("sessions") {
        let id = e.expect("entry").file_name().to_string_lossy().into_owned();
        let records = makalog::segment::SessionReader::open(&storage, &id, 1)
            .expect("reader")
            .map(|r| r.expect("record"))
            .map(|r| (r.kind as u8, r.payload.to_vec()))
            .collect();
        sessions.insert(id, records);
    }
    (sessions, json_lines(&["claims", s(root), "--json"]))
}

#[test]
fn an_import_killed_halfway_and_run_again_ends_as_an_uninterrupted_one() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = t.path().join("db");
    std::fs::create_dir_all(&db).expect("dir");
    let shape = Shape {
        sessions: 40,
        runs_per_session: 25,
        events_per_run: 8,
    };
    generate(&db, shape);
    let whole = t.path().join("whole");
    let (code, report, err) = import(&db, &whole);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["written"]["sessions"], 40);

    let killed = t.path().join("killed");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_makalog"))
        .args(["import-sqlite", s(&db), s(&killed)])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let sessions = killed.join("sessions");
    while std::fs::read_dir(&sessions).map_or(0, |d| d.count()) < 3 {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "killed before it finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let (code, resumed, err) = import(&db, &killed);
    assert_eq!(code, 0, "{err}");
    assert!(
        resumed["written"]["records"].as_u64().expect("n") > 0,
        "the kill left work to resume"
    );
    assert_eq!(
        contents(&killed),
        contents(&whole),
        "the same records and claims"
    );
    assert_clean(&killed);
}
