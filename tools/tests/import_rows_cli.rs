//! `makalog import-sqlite` on sources with rows the stores would refuse: each reported by its
//! key, never altered, the rest imported and the root clean; and a damaged database, which
//! never panics the import.
#![cfg(feature = "sqlite")]

mod common;

use common::{find, fixture_copy, import, makalog, s, text};
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    let table = |name: &str| find(&report["tables"], "table", name);
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
        .read_runtime_events("46a0c9bf-503c-46d1-a75e-9c3440d51a33")
        .expect("events");
    assert!(kept
        .events
        .iter()
        .all(|e| e.invocation_id() != "abc4c8e9-4e52-45b0-93f2-92d4f84182b6"));
    assert_eq!(makalog(&["verify", s(&root)]).status.code(), Some(0));
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
        // Every bit: ASCII becomes a byte no UTF-8 text may hold, too.
        bytes[at] ^= 0xff;
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

#[test]
fn rows_the_stores_would_refuse_are_reported_by_key_and_the_rest_imported() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let f1 = "46a0c9bf-503c-46d1-a75e-9c3440d51a33";
    let f2 = "ac93ae77-6d35-4541-8bf3-d18391bb6a18";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(&format!(
        "UPDATE session_messages SET record_json = CAST(x'7bff7d' AS TEXT) WHERE session_id = '{f1}' AND sequence = 0;
         UPDATE session_messages SET record_json = json_set(record_json, '$.text', printf('%.*c', 5000000, 'x')) WHERE session_id = '{f1}' AND sequence = 2;
         UPDATE core_root_turn_admissions SET record_json = json_set(record_json, '$.sessionId', '{f2}') WHERE session_id = '{f1}' AND turn_id = 'fixture-f1-turn-1';
         UPDATE agent_graph_intent_claims SET admission_status = 'cancelled', cancellation_reason = '   ' WHERE graph_id = 'graph-fixture-d';"
    ))
    .expect("rows to refuse");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "rows were refused: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let refused = |table: &str| -> Vec<(String, String)> {
        let t = find(&report["tables"], "table", table);
        t["refused"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|x| {
                        (
                            x["key"].as_str().unwrap_or_default().to_owned(),
                            x["reason"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let messages = refused("session_messages");
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0].0, format!("{f1}/0"));
    assert!(messages[0].1.contains("not UTF-8"), "{messages:?}");
    assert_eq!(
        messages[1].0,
        format!("{f1}/2"),
        "an assistant message, 5 MB long"
    );
    assert!(
        messages[1].1.contains("more than a record may hold"),
        "{messages:?}"
    );
    let admissions = refused("core_root_turn_admissions");
    assert_eq!(admissions.len(), 1, "{admissions:?}");
    assert_eq!(admissions[0].0, format!("{f1}/fixture-f1-turn-1"));
    let claims = refused("agent_graph_intent_claims");
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert!(claims[0].1.contains("without a reason"), "{claims:?}");
    // The rest is imported, and the root is clean.
    let storage = makalog::storage::RealStorage::unmapped(&root);
    let reader = makalog::store::ReadOnlySessions::new(&storage);
    assert_eq!(reader.read_messages(f1, None).expect("messages").len(), 11);
    assert_eq!(
        report["tables"]
            .as_array()
            .expect("t")
            .iter()
            .map(|t| t["imported"].as_u64().unwrap_or(0))
            .sum::<u64>(),
        167 - 4
    );
    for args in [vec!["verify", s(&root)], vec!["index", "check", s(&root)]] {
        let out = makalog(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stdout)
        );
    }
}

/// A graph operator's spawn key holds `graph:<graphId>` and its workId in the swarm slots
/// (MAKA-MODEL §5): such a child's spawn row agrees with its header and is imported.
#[test]
fn a_graph_operators_spawn_is_imported_under_its_graph_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let child = "977fab16-13dd-4a4e-9e7b-dd0c28714231";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(&format!(
        "UPDATE session_metadata SET payload_json = json_set(payload_json, '$.subagentParent.graph', json('{{\"graphId\":\"graph-fixture-b\",\"workId\":\"work-b\",\"operatorId\":\"local-read\"}}')) WHERE session_id = '{child}';
         UPDATE subagent_spawns SET swarm_id = 'graph:graph-fixture-b', item_id = 'work-b' WHERE child_session_id = '{child}';"
    ))
    .expect("a graph parent");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 0, "{err}");
    let spawns = find(&report["tables"], "table", "subagent_spawns");
    assert_eq!(spawns["imported"], 3, "{spawns}");
    let claims = common::json_lines(&["claims", s(&root), "--json"]);
    let spawn = claims
        .iter()
        .find(|c| c["type"] == "subagent_spawn_claim" && c["claim"]["childSessionId"] == child)
        .expect("the child's spawn claim");
    assert_eq!(spawn["claim"]["swarmId"], "graph:graph-fixture-b");
    assert_eq!(spawn["claim"]["itemId"], "work-b");
}

/// A child whose header fits a segment's record while its spawn claim, which carries that
/// header, does not fit the claims log's: the spawn row is refused by its key, the child is
/// imported under a plain id claim, and everything else is imported (it was a failure midway,
/// after the other sessions were written, that no rerun could get past).
#[test]
fn a_spawn_claim_too_big_for_the_claims_log_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let max = makalog::format::DEFAULT_MAX_PAYLOAD as usize - makalog::model::RUNTIME_FIELDS_ROOM;
    let db = child_header_padded_to(t.path(), max);
    let child = CHILD;
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    assert!(report.is_object(), "a report: {err}");
    let spawns = find(&report["tables"], "table", "subagent_spawns");
    assert_eq!(spawns["imported"], 2, "{spawns}");
    let refused = &spawns["refused"][0];
    assert!(
        refused["key"]
            .as_str()
            .is_some_and(|k| k.contains("fixture-graph-tool-b")),
        "{spawns}"
    );
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("claim")),
        "{spawns}"
    );
    let storage = makalog::storage::RealStorage::unmapped(&root);
    let reader = makalog::store::ReadOnlySessions::new(&storage);
    let imported = reader
        .read_session(child)
        .expect("read")
        .expect("the child");
    assert_eq!(imported.canonical_json().len(), max);
    verifies_clean(&root);
}

/// A session whose header leaves less than the runtime's room under the bound (a turn on it
/// would fail to set its own fields) is refused by its key, as the store refuses a host such a
/// header; the rest is imported.
#[test]
fn a_header_leaving_no_room_for_the_runtimes_fields_is_refused_by_its_key() {
    let t = tempfile::tempdir().expect("tempdir");
    let max = makalog::format::DEFAULT_MAX_PAYLOAD as usize - makalog::model::RUNTIME_FIELDS_ROOM;
    let db = child_header_padded_to(t.path(), max + 1);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "a row was refused: {err}");
    let sessions = find(&report["tables"], "table", "session_metadata");
    assert_eq!(sessions["refused"][0]["key"], CHILD, "{sessions}");
    let reason = sessions["refused"][0]["reason"].as_str().expect("why");
    assert!(reason.contains("the runtime sets"), "{reason}");
    let storage = makalog::storage::RealStorage::unmapped(&root);
    let reader = makalog::store::ReadOnlySessions::new(&storage);
    assert!(reader.read_session(CHILD).expect("read").is_none());
    assert!(sessions["imported"].as_u64().expect("n") > 0, "{sessions}");
    verifies_clean(&root);
}

/// The fixture's graph child, whose header its spawn claim carries.
const CHILD: &str = "977fab16-13dd-4a4e-9e7b-dd0c28714231";

/// A copy of the fixture in `dir` whose graph child's header is padded (its name) to `len`
/// bytes of canonical JSON; the source's path.
fn child_header_padded_to(dir: &std::path::Path, len: usize) -> PathBuf {
    let db = fixture_copy(dir);
    let child = CHILD;
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    let payload: String = conn
        .query_row(
            "SELECT payload_json FROM session_metadata WHERE session_id = ?1",
            [child],
            |r| r.get(0),
        )
        .expect("the child's header");
    let header =
        makalog::model::SessionHeader::from_value(serde_json::from_str(&payload).expect("json"))
            .expect("header");
    let name = header.value()["name"].as_str().expect("name").len();
    let pad = len - (header.canonical_json().len() - name);
    conn.execute(
        "UPDATE session_metadata SET payload_json = json_set(payload_json, '$.name', printf('%.*c', ?1, 'x')) WHERE session_id = ?2",
        rusqlite::params![pad as i64, child],
    )
    .expect("a long name");
    db
}

/// `verify` and `index check` pass on the imported root.
fn verifies_clean(root: &std::path::Path) {
    for args in [vec!["verify", s(root)], vec!["index", "check", s(root)]] {
        let out = makalog(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stdout)
        );
    }
}
