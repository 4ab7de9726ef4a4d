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
             VALUES ('gone-1', 1796111990000, 0), ('../gone', 1796111990001, 0),
                 ('gone-2', 1796111990002, 0);
         CREATE TEMP TABLE one AS SELECT * FROM session_metadata LIMIT 1;
         UPDATE one SET session_id = 'gone-2', payload_json = '{}';
         INSERT INTO session_metadata SELECT * FROM one;",
    )
    .expect("tombstones");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(
        code, 1,
        "one tombstone names no valid id, one session row is refused: {err}"
    );
    let tombstones = find(&report["tables"], "table", "session_metadata_tombstones");
    assert_eq!(tombstones["imported"], 2, "{tombstones}");
    assert_eq!(tombstones["refused"][0]["key"], "../gone", "{tombstones}");
    assert!(tombstones["notModeled"].is_null(), "{tombstones}");
    let claims = common::json_lines(&["claims", s(&root), "--json"]);
    for id in ["gone-1", "gone-2"] {
        assert!(
            claims.iter().any(|c| c["claim"]["sessionId"] == id),
            "the deleted id {id} is claimed (gone-2 also has a session row, refused)"
        );
    }
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
    for id in ["gone-1", "gone-2"] {
        header["id"] = id.into();
        match stores.sessions.create(header.clone()) {
            Err(makalog::Error::ClaimConflict { .. }) => {}
            other => panic!("a deleted session's id {id} is not used again: {other:?}"),
        }
    }
}
