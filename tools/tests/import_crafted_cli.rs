//! `makalog import-sqlite` on sources rebuilt without the original's unique keys: rows the
//! stores would refuse for a key another row holds are reported by key before anything is
//! written, never a failure midway that no rerun could get past.
#![cfg(feature = "sqlite")]

mod common;

use common::{assert_clean, find, fixture_copy, import};

/// A second runtime event under an id the session already holds (in another invocation):
/// the store keeps one event per id, so the row is refused, and the rest imported.
#[test]
fn a_runtime_event_reusing_an_id_of_its_session_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    let first = "9849081c-0bfc-4ba4-87de-6891cc4a1832";
    conn.execute_batch(&format!(
        "ALTER TABLE runtime_events RENAME TO keyed;
         CREATE TABLE runtime_events AS SELECT * FROM keyed;
         DROP TABLE keyed;
         INSERT INTO runtime_events
             SELECT event_id, session_id, 'inv-dup', 'run-dup', turn_id, 1, event_kind,
                 json_set(payload_json, '$.invocationId', 'inv-dup', '$.runId', 'run-dup'),
                 committed_at + 1
             FROM runtime_events WHERE event_id = '{first}';"
    ))
    .expect("a second event under one id");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    assert!(report.is_object(), "a report, not a failure midway: {err}");
    let events = find(&report["tables"], "table", "runtime_events");
    assert_eq!(events["rows"], 29, "{events}");
    assert_eq!(events["imported"], 28, "{events}");
    assert_eq!(events["refused"][0]["key"], first, "{events}");
    let ordinals = find(&report["tables"], "table", "runtime_session_event_ordinals");
    assert_eq!(
        ordinals["imported"], ordinals["rows"],
        "the ordinal is the first's"
    );
    assert_clean(&root);
}

/// A second graph intent claim on a target turn another claim holds (another intent, claimed
/// later): the claims log would refuse it after every session was written, and a rerun then
/// refused the whole source as conflicting with what the first run wrote. It is refused by its
/// key, the first claim kept.
#[test]
fn a_graph_claim_on_a_turn_another_claim_holds_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    let (first, second) = (
        "graph_claim_b8eef4a2abdcc494664dfba74da9c646",
        format!("graph_claim_{}", "e".repeat(32)),
    );
    conn.execute_batch(&format!(
        "ALTER TABLE agent_graph_intent_claims RENAME TO keyed;
         CREATE TABLE agent_graph_intent_claims AS SELECT * FROM keyed;
         DROP TABLE keyed;
         INSERT INTO agent_graph_intent_claims
             SELECT '{second}', schema_version, graph_id, 'graph_intent_{intent}',
                 intent_fingerprint, readiness_context_fingerprint, target_operator_id,
                 target_session_id, target_turn_id, target_run_id || '-2', claimed_at + 1,
                 admission_status, admission_updated_at, cancellation_reason
             FROM agent_graph_intent_claims WHERE claim_id = '{first}';",
        intent = "f".repeat(32)
    ))
    .expect("a second claim on one turn");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    assert!(report.is_object(), "a report, not a failure midway: {err}");
    let claims = find(&report["tables"], "table", "agent_graph_intent_claims");
    assert_eq!(claims["imported"], 2, "{claims}");
    assert_eq!(claims["refused"][0]["key"], second.as_str(), "{claims}");
    assert_clean(&root);
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "the same row refused again: {err}");
    assert_eq!(report["written"]["nothingNew"], true, "{report}");
}

/// Rows of a session the source holds no header for (an event, a run, a message, a segment of
/// no snapshot): each is refused by its key as naming no session. The query that finds them
/// compared each session table's `session_id` with itself (SQLite binds a bare name to the
/// innermost table), so it found none, and they were left unaccounted for.
#[test]
fn rows_of_a_session_without_a_header_are_refused_by_their_keys() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         CREATE TEMP TABLE e AS SELECT * FROM runtime_events LIMIT 1;
         UPDATE e SET event_id = 'ghost-event', session_id = 'ghost', invocation_id = 'ghost-invocation';
         INSERT INTO runtime_events SELECT * FROM e;
         CREATE TEMP TABLE r AS SELECT * FROM core_agent_runs LIMIT 1;
         UPDATE r SET session_id = 'ghost', run_id = 'ghost-run';
         INSERT INTO core_agent_runs SELECT * FROM r;
         CREATE TEMP TABLE m AS SELECT * FROM session_messages LIMIT 1;
         UPDATE m SET session_id = 'ghost';
         INSERT INTO session_messages SELECT * FROM m;
         CREATE TEMP TABLE g AS SELECT * FROM runtime_partial_segments LIMIT 1;
         UPDATE g SET stream_key = 'ghost-stream', segment_seq = 1;
         INSERT INTO runtime_partial_segments SELECT * FROM g;",
    )
    .expect("rows of a session without a header");
    drop(conn);
    let root = t.path().join("root");
    let report = import_refusing_rows(&db, &root);
    for (table, key) in [
        ("runtime_events", "ghost-event".to_owned()),
        ("core_agent_runs", "ghost/ghost-run".to_owned()),
        ("session_messages", format!("ghost/{}", first_sequence(&db))),
        ("runtime_partial_segments", "ghost-stream/1".to_owned()),
    ] {
        let t = find(&report["tables"], "table", table);
        assert_eq!(
            t["imported"].as_u64(),
            t["rows"].as_u64().map(|n| n - 1),
            "{t}"
        );
        assert_eq!(t["refused"][0]["key"], key.as_str(), "{t}");
        assert_eq!(
            t["refused"][0]["reason"], "its session is not in session_metadata",
            "{t}"
        );
    }
    assert_clean(&root);
}

/// The sequence of the message row the test above copies.
fn first_sequence(db: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.query_row(
        "SELECT sequence FROM session_messages WHERE session_id = 'ghost'",
        [],
        |r| r.get(0),
    )
    .expect("the copied message")
}

/// A session whose header row is refused: every row of it is refused with it, its partial
/// snapshots' segments too (found through its snapshots, by their keys, where the query
/// joining every segment to its snapshot read them all for each such session).
#[test]
fn every_row_of_a_session_whose_header_is_refused_is_refused_with_it() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let sid = "ac93ae77-6d35-4541-8bf3-d18391bb6a18";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute(
        "UPDATE session_metadata SET payload_json = 'not JSON' WHERE session_id = ?1",
        [sid],
    )
    .expect("a header that does not decode");
    drop(conn);
    let root = t.path().join("root");
    let report = import_refusing_rows(&db, &root);
    for (table, rows) in [
        ("runtime_partial_snapshots", 2),
        ("runtime_partial_segments", 2),
        ("runtime_events", 10),
        ("session_messages", 18),
        ("core_agent_runs", 4),
    ] {
        let t = find(&report["tables"], "table", table);
        let refused = t["refused"].as_array().expect("refused rows");
        assert_eq!(refused.len(), rows, "{t}");
        assert!(
            refused
                .iter()
                .all(|r| r["reason"] == "its session's header was not imported"),
            "{t}"
        );
    }
    assert_clean(&root);
}

/// Imports `db` into `root`: some rows refused (exit 1), every row accounted for; the report.
fn import_refusing_rows(db: &std::path::Path, root: &std::path::Path) -> serde_json::Value {
    let (code, report, err) = import(db, root);
    assert_eq!(code, 1, "rows were refused: {err}");
    assert!(
        !err.contains("unaccounted"),
        "every row accounted for: {err}"
    );
    report
}
