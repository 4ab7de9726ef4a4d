//! `makalog import-sqlite` refusing with nothing written: another schema, a file that is not a
//! database, a busy root, a directory that is not a root, other sessions or claims under the
//! source's ids, a copy without the indexes its per-session reads need.
#![cfg(feature = "sqlite")]

mod common;

use common::sqlite_gen::{fixture_dir, generate, Shape};
use common::{fixture_copy, import, snapshot};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// A view where the original has a table passes a check of columns alone; one over an endless
/// recursive query made the import read rows until memory ran out. Every table it reads must
/// be a table.
#[test]
fn a_view_in_place_of_a_table_is_refused_before_a_row_is_read() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(
        "DROP TABLE subagent_spawns;
         CREATE VIEW subagent_spawns(parent_session_id, parent_run_id, tool_call_id, swarm_id,
             item_id, request_fingerprint, child_session_id, initial_turn_id, initial_run_id,
             claimed_at)
         AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
         SELECT 'p', 'r', 't' || i, '', '', 'f', 'c' || i, 't', 'r', 0 FROM n;",
    )
    .expect("a view");
    drop(conn);
    let root = t.path().join("root");
    let (code, _, err) = import(&db, &root);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("subagent_spawns") && err.contains("not a table"),
        "{err}"
    );
    assert!(!root.exists(), "no root was created");
}

#[test]
fn a_root_another_process_owns_is_refused_with_nothing_written() {
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

/// Every file of `root` but the lock, with its bytes.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot(root)
        .into_iter()
        .filter(|(p, _)| !p.ends_with("owner.lock"))
        .collect()
}

/// Imports the fixture into `root`: refused (2) naming each of `names`, with no byte changed.
fn assert_refused_unchanged(root: &Path, names: &[&str]) {
    let before = files(root);
    let (code, _, err) = import(&fixture_dir(), root);
    assert_eq!(code, 2, "{err}");
    assert!(names.iter().all(|n| err.contains(n)), "{names:?}: {err}");
    assert_eq!(before, files(root), "nothing written");
}

/// A fresh root whose claims log holds what `claim` writes.
fn root_with_claims(dir: &Path, claim: impl Fn(&makalog::claims::ClaimsLog)) -> PathBuf {
    let root = dir.join("root");
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("acquire")
        .expect("free");
    let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
    claim(&stores.claims);
    stores.close().expect("close");
    root
}

#[test]
fn a_target_holding_a_source_spawn_for_another_child_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    // The fixture's first spawn key, claimed for a child the source does not have: the child
    // the source spawns there sorts last, so a check made only as sessions are written would
    // have written the others first.
    let root = root_with_claims(t.path(), |claims| {
        claims
            .claim_subagent_spawn(makalog::claims::SubagentSpawnClaim {
                parent_session_id: "46a0c9bf-503c-46d1-a75e-9c3440d51a33".into(),
                parent_run_id: "b9b189c8-83c1-4efc-b59e-65079b7beb39".into(),
                tool_call_id: "fixture-f1-turn-2-spawn".into(),
                swarm_id: String::new(),
                item_id: String::new(),
                request_fingerprint:
                    "cac5f1ca887cdbed4124ef39401b6e240b83cf06b53cba5101c5920c9f555f44".into(),
                child_session_id: "zz-another-child".into(),
                child_header: None,
            })
            .expect("spawn");
    });
    assert_refused_unchanged(&root, &["c29832e3", "other work"]);
}

#[test]
fn a_target_holding_a_claim_on_a_source_intents_target_turn_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = root_with_claims(t.path(), |claims| {
        claims
            .claim_agent_graph_intent_at(
                makalog::claims::AgentGraphIntentClaimRequest {
                    schema_version: 1,
                    claim_id: format!("graph_claim_{}", "0".repeat(32)),
                    graph_id: "another-graph".into(),
                    intent_id: format!("graph_intent_{}", "0".repeat(32)),
                    intent_fingerprint: format!("sha256:{}", "1".repeat(64)),
                    readiness_context_fingerprint: format!("sha256:{}", "2".repeat(64)),
                    target_operator_id: "local-read".into(),
                    target_session_id: "977fab16-13dd-4a4e-9e7b-dd0c28714231".into(),
                    target_turn_id: "fixture-graph-turn-b".into(),
                    target_run_id: "another-run".into(),
                },
                1,
            )
            .expect("claim");
    });
    assert_refused_unchanged(&root, &["graph-fixture-b", "another-graph"]);
}

#[test]
fn a_directory_that_is_not_a_root_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let before = snapshot(&db);
    // The original's own storage directory, say.
    let (code, _, err) = import(&db, &db);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a makalog root"), "{err}");
    assert_eq!(before, snapshot(&db), "nothing written");
}

#[test]
fn a_database_missing_a_column_the_importer_reads_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch("ALTER TABLE agent_graph_intent_claims DROP COLUMN cancellation_reason")
        .expect("drop a column");
    drop(conn);
    let root = t.path().join("root");
    let (code, _, err) = import(&db, &root);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no column cancellation_reason"), "{err}");
    assert!(!root.exists());
}

/// A copy of a ledger whose runtime events and ordinals lost their keys and indexes (as
/// `CREATE TABLE … AS SELECT` makes): each session's reads would scan both tables whole, and
/// the check of each ordinal would scan the events, about 2 × 10⁸ rows in all for 1,200
/// sessions of 10 events (for a real ledger's millions of rows, hours). It is refused, naming
/// the file and a table, with nothing written; once the original's indexes of the two tables
/// (their keys, and by session) are added to it, the same copy imports.
#[test]
fn a_copy_too_large_to_read_without_the_indexes_a_sessions_rows_are_found_by_is_refused() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = t.path().join("db");
    std::fs::create_dir_all(&db).expect("dir");
    let shape = Shape {
        sessions: 1200,
        runs_per_session: 1,
        events_per_run: 10,
    };
    generate(&db, shape);
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         ALTER TABLE runtime_events RENAME TO keyed; CREATE TABLE runtime_events AS SELECT * FROM keyed; DROP TABLE keyed;
         ALTER TABLE runtime_session_event_ordinals RENAME TO keyed; CREATE TABLE runtime_session_event_ordinals AS SELECT * FROM keyed; DROP TABLE keyed;",
    )
    .expect("a copy without keys");
    drop(conn);
    let before = snapshot(&db);
    let root = t.path().join("root");
    let (code, _, err) = import(&db, &root);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("runtime.sqlite")
            && err.contains("lacks an index")
            && (err.contains("(runtime_events the table read most)")
                || err.contains("(runtime_session_event_ordinals the table read most)")),
        "{err}"
    );
    assert!(!root.exists(), "no root was created");
    assert_eq!(before, snapshot(&db), "the source unchanged");

    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(
        "CREATE UNIQUE INDEX events_by_id ON runtime_events(event_id);
         CREATE INDEX runtime_events_by_session ON runtime_events(session_id, committed_at, event_id);
         CREATE UNIQUE INDEX ordinals_by_event ON runtime_session_event_ordinals(event_id);
         CREATE UNIQUE INDEX ordinals_by_session ON runtime_session_event_ordinals(session_id, ordinal);",
    )
    .expect("the original's indexes");
    drop(conn);
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["written"]["sessions"], 1200, "{report}");
}
