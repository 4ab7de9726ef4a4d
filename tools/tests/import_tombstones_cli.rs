//! `makalog import-sqlite` keeps what a deleted session's tombstone means: its id is taken for
//! good (MAKA-MODEL §5: a tombstoned new id is a conflict), as a claim without a session.
#![cfg(feature = "sqlite")]

mod common;

use common::{find, fixture_copy, import, s};

#[test]
fn a_deleted_sessions_id_stays_taken_after_import() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(
        "INSERT INTO session_metadata_tombstones(session_id, deleted_at, cleanup_pending)
             VALUES ('gone-1', 1796111990000, 0), ('../gone', 1796111990001, 0);",
    )
    .expect("tombstones");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "one tombstone names no valid id: {err}");
    let tombstones = find(&report["tables"], "table", "session_metadata_tombstones");
    assert_eq!(tombstones["imported"], 1, "{tombstones}");
    assert_eq!(tombstones["refused"][0]["key"], "../gone", "{tombstones}");
    assert!(tombstones["notModeled"].is_null(), "{tombstones}");
    let claims = common::json_lines(&["claims", s(&root), "--json"]);
    assert!(
        claims.iter().any(|c| c["claim"]["sessionId"] == "gone-1"),
        "the deleted id is claimed"
    );
    let owner = makalog::root::try_acquire_owner(&root)
        .expect("acquire")
        .expect("free");
    let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
    let mut header = stores
        .sessions
        .list_sessions()
        .expect("list")
        .into_iter()
        .find(|h| h.value().get("subagentSpawn").is_none())
        .expect("a root session")
        .value()
        .clone();
    header["id"] = "gone-1".into();
    match stores.sessions.create(header) {
        Err(makalog::Error::ClaimConflict { .. }) => {}
        other => panic!("a deleted session's id is not used again: {other:?}"),
    }
}
