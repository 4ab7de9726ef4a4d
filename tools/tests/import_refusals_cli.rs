//! `makalog import-sqlite` refusing with nothing written (another schema, a busy root, other
//! sessions under the source's ids), reporting events the canonical decoder refuses without
//! altering them, and resuming a SIGKILLed import to the root an uninterrupted one leaves.
#![cfg(feature = "sqlite")]

mod common;

use common::sqlite_gen::{fixture_dir, generate, Shape};
use common::{assert_clean, import, json_lines, makalog, s, snapshot, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fixture imported into a fresh root.
fn imported_fixture() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("root");
    let (code, _, err) = import(&fixture_dir(), &root);
    assert_eq!(code, 0, "{err}");
    (t, root)
}

/// A writable copy of the fixture's runtime database.
fn fixture_copy(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    std::fs::create_dir_all(&db).expect("dir");
    std::fs::copy(
        fixture_dir().join("runtime.sqlite"),
        db.join("runtime.sqlite"),
    )
    .expect("copy");
    db
}

#[test]
fn a_database_of_another_schema_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute(
        "UPDATE operational_schema_migrations SET version = 13 WHERE scope = 'runtime'",
        [],
    )
    .expect("migrate");
    drop(conn);
    let root = t.path().join("root");
    let (code, _, err) = import(&db, &root);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown schema") && err.contains("runtime 13"),
        "{err}"
    );
    assert!(!root.exists(), "no root was created");
    let (code, _, err) = import(t.path(), &root);
    assert_eq!(code, 2, "a directory without runtime.sqlite: {err}");
    assert!(!root.exists());
    std::fs::write(db.join("runtime.sqlite"), vec![0x5a; 8192]).expect("garbage");
    let (code, _, err) = import(&db, &root);
    assert_eq!(code, 2, "a file that is not a database: {err}");
    assert!(
        err.contains("runtime.sqlite") && err.contains("not a database"),
        "{err}"
    );
    assert!(!root.exists());
}

#[test]
fn a_root_another_process_owns_is_refused_with_nothing_written() {
    let (_t, root) = imported_fixture();
    let other = tempfile::tempdir().expect("tempdir");
    let fresh = other.path().join("root");
    let lease = makalog::root::try_acquire_owner(&fresh)
        .expect("acquire")
        .expect("free");
    let before = snapshot(&fresh);
    let (code, _, err) = import(&fixture_dir(), &fresh);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("busy"), "{err}");
    assert_eq!(before, snapshot(&fresh), "nothing written");
    drop(lease);
    assert!(root.exists());
}

#[test]
fn a_target_holding_other_sessions_under_the_same_ids_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("root");
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        let id = "46a0c9bf-503c-46d1-a75e-9c3440d51a33";
        stores
            .sessions
            .create(serde_json::json!({
                "schemaVersion": 1, "id": id, "workspaceRoot": "/other", "cwd": "/other",
                "name": "another session", "llmConnectionSlug": "fake", "model": "fake-model",
                "createdAt": 1, "lastUsedAt": 1, "titleIsManual": false, "isFlagged": false,
                "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
                "status": "active", "backend": "fake", "permissionMode": "ask"
            }))
            .expect("create");
        stores.close().expect("close");
    }
    let before = snapshot(&root);
    let (code, _, err) = import(&fixture_dir(), &root);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("import refused") && err.contains("46a0c9bf"),
        "{err}"
    );
    let files = |s: &BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        s.iter()
            .filter(|(p, _)| !p.ends_with("owner.lock"))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect()
    };
    assert_eq!(files(&before), files(&snapshot(&root)), "nothing written");
}

#[test]
fn events_the_canonical_decoder_refuses_are_reported_never_altered() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let first = "9849081c-0bfc-4ba4-87de-6891cc4a1832";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute(
        "UPDATE runtime_events SET payload_json = replace(payload_json, 'Draft a release note', 'Draft \\ud800 note') WHERE event_id = ?1",
        [first],
    )
    .expect("a lone surrogate");
    let stored: String = conn
        .query_row(
            "SELECT payload_json FROM runtime_events WHERE event_id = ?1",
            [first],
            |r| r.get(0),
        )
        .expect("read");
    assert!(stored.contains("\\ud800"));
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "rows were refused: {err}");
    let table = |name: &str| {
        report["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|t| t["table"] == name)
            .cloned()
            .expect(name)
    };
    let events = table("runtime_events");
    let refused = events["refused"].as_array().expect("refused");
    assert_eq!(refused[0]["key"], first);
    assert!(
        refused[0]["reason"]
            .as_str()
            .expect("why")
            .contains("canonical decoder refuses"),
        "{refused:?}"
    );
    // The invocation's later events cannot keep their sequence numbers: reported, not renumbered.
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[1..].iter().all(|r| r["reason"]
        .as_str()
        .expect("why")
        .contains("cannot be kept")));
    assert_eq!(events["imported"], 25);
    assert_eq!(table("runtime_session_event_ordinals")["notImported"], 3);
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    let after: String = conn
        .query_row(
            "SELECT payload_json FROM runtime_events WHERE event_id = ?1",
            [first],
            |r| r.get(0),
        )
        .expect("read");
    assert_eq!(after, stored, "the source is read-only");
    let storage = makalog::storage::RealStorage::unmapped(&root);
    let reader = makalog::store::ReadOnlySessions::new(&storage);
    let kept = reader
        .read_session_runtime_events("46a0c9bf-503c-46d1-a75e-9c3440d51a33")
        .expect("events");
    assert!(kept
        .iter()
        .all(|e| e.invocation_id() != "abc4c8e9-4e52-45b0-93f2-92d4f84182b6"));
    assert_eq!(makalog(&["verify", s(&root)]).status.code(), Some(0));
}

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

#[test]
fn a_damaged_database_is_refused_or_reported_never_a_panic() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let original = std::fs::read(db.join("runtime.sqlite")).expect("read");
    let flips = 64;
    let mut codes = BTreeMap::new();
    for i in 0..flips {
        // Spread over the whole file: page headers, b-tree cells, row text.
        let at = 100 + i * (original.len() - 200) / flips;
        let mut bytes = original.clone();
        bytes[at] ^= 0x5a;
        std::fs::write(db.join("runtime.sqlite"), &bytes).expect("write");
        let root = t.path().join(format!("root-{i}"));
        let (code, _, err) = import(&db, &root);
        assert!(
            [0, 1, 2].contains(&code),
            "flip at {at}: exit {code}: {err}"
        );
        assert!(!err.contains("panicked"), "flip at {at}: {err}");
        *codes.entry(code).or_insert(0) += 1;
        if root.exists() {
            let verify = makalog(&["verify", s(&root)]);
            assert_eq!(
                verify.status.code(),
                Some(0),
                "flip at {at}: {}",
                text(&verify.stdout)
            );
        }
    }
    println!("exit codes over {flips} flipped bytes: {codes:?}");
}
