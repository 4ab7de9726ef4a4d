//! `makalog import-sqlite` on rows the planner took and the stores refused only at write time:
//! each stopped the import midway, at every rerun, leaving later sessions and claims unwritten.
//! Each is now refused by its key, the rest imported.
#![cfg(feature = "sqlite")]

mod common;

use common::{find, fixture_copy, import, makalog, s, text};

/// A start rejection imported into a root of format version 2 (which holds no turn rejection
/// record): the session's writer refused it midway, every rerun stopped there, and the later
/// sessions and the graph claims were never imported. It is refused by its key, with the rest.
#[test]
fn a_start_rejection_for_a_version_2_root_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let sid = "ac93ae77-6d35-4541-8bf3-d18391bb6a18";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    let record = serde_json::json!({
        "schemaVersion": 1, "sessionId": sid, "turnId": "fixture-f2-turn-9",
        "execution": {"kind": "external_message"},
        "skillInvocation": {"loaded": [], "failed": [{"name": "deploy", "reason": "not_found"}], "receipts": []},
        "rejectedAt": 1_796_111_992_000u64,
    });
    conn.execute(
        "INSERT INTO core_root_turn_start_rejections VALUES (?1, 'fixture-f2-turn-9', 1796111992000, ?2)",
        [sid, &record.to_string()],
    )
    .expect("a rejection");
    drop(conn);
    let root = t.path().join("root");
    std::fs::create_dir(&root).expect("root");
    std::fs::write(
        root.join(".makalog-root.json"),
        format!(
            r#"{{"schemaVersion":1,"kind":"interactive","rootId":"{}","formatVersion":2}}"#,
            "cd".repeat(32)
        ),
    )
    .expect("a version 2 root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    let rejections = find(
        &report["tables"],
        "table",
        "core_root_turn_start_rejections",
    );
    let refused = rejections["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 1, "{rejections}");
    assert_eq!(refused[0]["key"], format!("{sid}/fixture-f2-turn-9"));
    assert!(
        refused[0]["reason"]
            .as_str()
            .expect("why")
            .contains("needs format version 3"),
        "{refused:?}"
    );
    let sessions = find(&report["tables"], "table", "session_metadata");
    assert_eq!(sessions["imported"], 5, "every session: {sessions}");
    let (again, report, err) = import(&db, &root);
    assert_eq!(again, 1, "the same row, refused again: {err}");
    assert_eq!(report["written"]["nothingNew"], true, "{report}");
    let out = makalog(&["verify", s(&root)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// A child header nested 127 levels deep, which its record takes: its spawn claim, one level
/// deeper, was refused by the claims log midway, at every rerun. The spawn row is refused by
/// its key and the child imported under a plain id claim, as for a spawn claim too big.
#[test]
fn a_spawn_claim_nested_past_what_replay_reads_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let child = "977fab16-13dd-4a4e-9e7b-dd0c28714231";
    let nested = format!("{}{{}}{}", r#"{"a":"#.repeat(125), "}".repeat(125));
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute(
        "UPDATE session_metadata SET payload_json = json_set(payload_json, '$.externalOrigin', json(?1)) WHERE session_id = ?2",
        [&nested, child],
    )
    .expect("a deep origin");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    let spawns = find(&report["tables"], "table", "subagent_spawns");
    assert_eq!(spawns["imported"], 2, "{spawns}");
    let reason = spawns["refused"][0]["reason"].as_str().expect("why");
    assert!(reason.contains("nests 128 levels"), "{spawns}");
    assert_eq!(
        find(&report["tables"], "table", "session_metadata")["imported"],
        5
    );
    let out = makalog(&["verify", s(&root)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// A graph claim cancelled with a reason longer than a claim may hold: the claim was written,
/// then its status refused by the claims log, at every rerun, and the deleted sessions' ids
/// after it never claimed (so a later session could take one). The row is refused by its key.
#[test]
fn a_cancellation_reason_too_long_for_the_claims_log_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute(
        "UPDATE agent_graph_intent_claims SET admission_status = 'cancelled', cancellation_reason = printf('%.*c', 5000000, 'x') WHERE graph_id = 'graph-fixture-d'",
        [],
    )
    .expect("a long reason");
    conn.execute(
        "INSERT INTO session_metadata_tombstones (session_id, deleted_at, retirement_unit_id, cleanup_pending) VALUES ('gone-1', 1796111990000, NULL, 0)",
        [],
    )
    .expect("a deleted session");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    let graph = find(&report["tables"], "table", "agent_graph_intent_claims");
    assert_eq!(graph["imported"], 1, "{graph}");
    let refused = &graph["refused"][0];
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("exceeds the bound")),
        "{graph}"
    );
    let tombstones = find(&report["tables"], "table", "session_metadata_tombstones");
    assert_eq!(tombstones["imported"], 1, "{tombstones}");
    let out = makalog(&["claims", s(&root)]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("gone-1"),
        "the deleted id is claimed: {stdout}"
    );
    assert!(
        !stdout.contains("graph-fixture-d"),
        "the refused claim is not written: {stdout}"
    );
}
