//! `makalog import-sqlite` on sources with rows the stores would refuse: each reported by its
//! key, never altered, the rest imported and the root clean; and a damaged database, which
//! never panics the import.
#![cfg(feature = "sqlite")]

mod common;

use common::{find, fixture_copy, import, makalog, s, text};
use std::collections::BTreeMap;

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
    let db = fixture_copy(t.path());
    let child = "977fab16-13dd-4a4e-9e7b-dd0c28714231";
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
    let max = makalog::format::DEFAULT_MAX_PAYLOAD as usize;
    let pad = max - 100 - (header.canonical_json().len() - name);
    conn.execute(
        "UPDATE session_metadata SET payload_json = json_set(payload_json, '$.name', printf('%.*c', ?1, 'x')) WHERE session_id = ?2",
        rusqlite::params![pad as i64, child],
    )
    .expect("a long name");
    drop(conn);
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
    assert_eq!(imported.canonical_json().len(), max - 100);
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

/// A message the original kept in chunks (a payload row stating its length and digest, then
/// its chunks, each with its digest): joined and imported as the same message; refused by its
/// key when its chunks skip an index, a chunk's digest differs, or its payload states more
/// bytes than a message is joined from (refused on that statement, with its chunks unjoined);
/// a message row or payload row repeated (a source without its keys) is refused by its key.
#[test]
fn a_chunked_message_is_joined_and_its_defects_refused_by_its_key() {
    use sha2::{Digest, Sha256};
    let sid = "46a0c9bf-503c-46d1-a75e-9c3440d51a33";
    let hex = |b: &[u8]| -> String {
        Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect()
    };
    let cases = [
        ("joined", ""),
        (
            "skips an index",
            "UPDATE session_message_chunks SET chunk_index = 5 WHERE chunk_index = 1",
        ),
        (
            "a digest differs",
            "UPDATE session_message_chunks SET sha256 = printf('%.*c', 64, '0') WHERE chunk_index = 2",
        ),
        (
            "states too many bytes",
            "UPDATE session_message_payloads SET record_bytes = 117440512",
        ),
        (
            "its payload row repeated",
            "PRAGMA foreign_keys = OFF; ALTER TABLE session_message_payloads RENAME TO keyed;
             CREATE TABLE session_message_payloads AS SELECT * FROM keyed; DROP TABLE keyed;
             INSERT INTO session_message_payloads SELECT * FROM session_message_payloads;",
        ),
        (
            "its row and payload row repeated",
            "PRAGMA foreign_keys = OFF; ALTER TABLE session_message_payloads RENAME TO keyed;
             CREATE TABLE session_message_payloads AS SELECT * FROM keyed; DROP TABLE keyed;
             INSERT INTO session_message_payloads SELECT * FROM session_message_payloads;
             ALTER TABLE session_messages RENAME TO keyed;
             CREATE TABLE session_messages AS SELECT * FROM keyed; DROP TABLE keyed;
             INSERT INTO session_messages SELECT * FROM session_messages WHERE session_id = '46a0c9bf-503c-46d1-a75e-9c3440d51a33' AND sequence = 2;",
        ),
    ];
    let mut first: Option<String> = None;
    for (case, craft) in cases {
        let t = tempfile::tempdir().expect("tempdir");
        let db = fixture_copy(t.path());
        let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
        let stored: String = conn
            .query_row(
                "SELECT record_json FROM session_messages WHERE session_id = ?1 AND sequence = 2",
                [sid],
                |r| r.get(0),
            )
            .expect("a message");
        // Longer than the original keeps in one row (64 KiB): four chunks of at most 64 KiB.
        let mut value: serde_json::Value = serde_json::from_str(&stored).expect("json");
        value["text"] = serde_json::json!("x".repeat(200_000));
        let record = value.to_string();
        conn.execute(
            "INSERT INTO session_message_payloads VALUES (?1, 2, ?2, ?3)",
            rusqlite::params![sid, record.len() as i64, hex(record.as_bytes())],
        )
        .expect("payload");
        for (i, part) in record.as_bytes().chunks(65_536).enumerate() {
            conn.execute(
                "INSERT INTO session_message_chunks VALUES (?1, 2, ?2, ?3, ?4)",
                rusqlite::params![sid, i as i64, part, hex(part)],
            )
            .expect("chunk");
        }
        conn.execute(
            "UPDATE session_messages SET record_json = '{}' WHERE session_id = ?1 AND sequence = 2",
            [sid],
        )
        .expect("the record is in the chunks");
        conn.execute_batch(craft).expect(case);
        drop(conn);
        let root = t.path().join("root");
        let (code, report, err) = import(&db, &root);
        let messages = find(&report["tables"], "table", "session_messages");
        if case.ends_with("repeated") {
            assert_eq!(code, 1, "{case}: {err}");
            assert!(!err.contains("unaccounted"), "{case}: {err}");
            let payloads = find(&report["tables"], "table", "session_message_payloads");
            assert_eq!(
                payloads["refused"][0]["key"],
                format!("{sid}/2"),
                "{payloads}"
            );
            assert_eq!(payloads["imported"], 1, "{payloads}");
            let repeated_row = case == "its row and payload row repeated";
            assert_eq!(
                messages["notImported"],
                u64::from(repeated_row),
                "{messages}"
            );
            if repeated_row {
                assert_eq!(
                    messages["refused"][0]["key"],
                    format!("{sid}/2"),
                    "{messages}"
                );
            }
            let storage = makalog::storage::RealStorage::unmapped(&root);
            let read = makalog::store::ReadOnlySessions::new(&storage)
                .read_messages(sid, None)
                .expect("messages");
            let value: serde_json::Value = serde_json::from_str(&record).expect("json");
            let copies = read
                .iter()
                .filter(|m| m.value()["id"] == value["id"])
                .count();
            assert_eq!(copies, 1, "{case}: the message once");
            continue;
        }
        if case == "joined" {
            assert_eq!(code, 0, "{case}: {err}");
            assert_eq!(
                find(&report["tables"], "table", "session_message_chunks")["imported"],
                4
            );
            let storage = makalog::storage::RealStorage::unmapped(&root);
            let read = makalog::store::ReadOnlySessions::new(&storage)
                .read_messages(sid, None)
                .expect("messages");
            let value: serde_json::Value = serde_json::from_str(&record).expect("json");
            assert!(
                read.iter()
                    .any(|m| m.value()["id"] == value["id"] && m.value()["text"] == value["text"]),
                "{case}: the joined message is imported"
            );
            first = Some(record);
            continue;
        }
        assert_eq!(code, 1, "{case}: {err}");
        let refused = &messages["refused"][0];
        assert_eq!(refused["key"], format!("{sid}/2"), "{case}: {messages}");
        let reason = refused["reason"].as_str().expect("why");
        let expected = match case {
            "skips an index" => "skip index 1",
            "a digest differs" => "chunk 2 does not match its sha256",
            _ => "a message is joined from",
        };
        assert!(reason.contains(expected), "{case}: {reason}");
    }
    assert!(first.is_some());
}

/// A source rebuilt without its primary keys, holding two spawns of one key, two rows of one
/// session and two create claims of one id: the second spawn took the claim at write time and
/// failed the import midway, and every rerun was refused; a repeated session was planned twice
/// and its second header dropped unnamed; a repeated create claim was dropped unnamed. Each
/// later row is now refused by its key, and the rest imported.
#[test]
fn rows_repeating_a_key_in_a_source_without_its_keys_are_refused_by_their_keys() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let child = "c29832e3-288e-43d3-89dd-2042315d4b30";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF;
         ALTER TABLE subagent_spawns RENAME TO keyed; CREATE TABLE subagent_spawns AS SELECT * FROM keyed; DROP TABLE keyed;
         INSERT INTO subagent_spawns SELECT parent_session_id, parent_run_id, tool_call_id, swarm_id, item_id, request_fingerprint, '00-dup-child', initial_turn_id, initial_run_id, claimed_at + 1 FROM subagent_spawns WHERE child_session_id = '{child}';
         CREATE TEMP TABLE one AS SELECT * FROM session_metadata WHERE session_id = '{child}';
         UPDATE one SET session_id = '00-dup-child', payload_json = json_set(payload_json, '$.id', '00-dup-child');
         ALTER TABLE session_metadata RENAME TO keyed; CREATE TABLE session_metadata AS SELECT * FROM keyed; DROP TABLE keyed;
         INSERT INTO session_metadata SELECT * FROM one;
         INSERT INTO session_metadata SELECT * FROM session_metadata WHERE session_id = '46a0c9bf-503c-46d1-a75e-9c3440d51a33';
         ALTER TABLE session_create_claims RENAME TO keyed; CREATE TABLE session_create_claims AS SELECT * FROM keyed; DROP TABLE keyed;
         INSERT INTO session_create_claims (session_id, claimed_at) VALUES ('bare-1', 1796111990000), ('bare-1', 1796111990001);"
    ))
    .expect("a source without its keys");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 1, "rows were refused: {err}");
    let table = |name: &str| find(&report["tables"], "table", name);
    let spawns = table("subagent_spawns");
    assert_eq!(spawns["imported"], 3, "{spawns}");
    assert!(
        spawns["refused"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("spawn key is an earlier spawn's")),
        "{spawns}"
    );
    let sessions = table("session_metadata");
    assert_eq!(sessions["imported"], 6, "{sessions}");
    assert_eq!(
        sessions["refused"][0]["key"], "46a0c9bf-503c-46d1-a75e-9c3440d51a33",
        "{sessions}"
    );
    let creates = table("session_create_claims");
    assert_eq!(creates["imported"], 1, "{creates}");
    assert_eq!(creates["refused"][0]["key"], "bare-1", "{creates}");
    assert!(
        !err.contains("unaccounted"),
        "every row accounted for: {err}"
    );
    let (again, report, err) = import(&db, &root);
    assert_eq!(again, 1, "the same rows refused again, nothing more: {err}");
    assert_eq!(report["written"]["nothingNew"], true, "{report}");
    let out = makalog(&["verify", s(&root)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// Two spawns whose keys differ only in where a `/` falls between their parts (the run `R/A`
/// and the tool call `T`, the run `R` and the tool call `A/T`): the claims log keys spawns by
/// their five parts and takes both, but the importer compared them joined with `/` and refused
/// the second as an earlier spawn's key. Both are imported.
#[test]
fn spawns_whose_keys_differ_only_around_a_slash_are_both_imported() {
    let t = tempfile::tempdir().expect("tempdir");
    let db = fixture_copy(t.path());
    let child = "c29832e3-288e-43d3-89dd-2042315d4b30";
    let conn = rusqlite::Connection::open(db.join("runtime.sqlite")).expect("open");
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF;
         CREATE TEMP TABLE one AS SELECT * FROM session_metadata WHERE session_id = '{child}';
         UPDATE one SET session_id = 'second-child', payload_json = json_set(payload_json, '$.id', 'second-child', '$.subagentParent.spawnedBy.parentRunId', 'R', '$.subagentParent.spawnedBy.toolCallId', 'A/T');
         INSERT INTO session_metadata SELECT * FROM one;
         UPDATE session_metadata SET payload_json = json_set(payload_json, '$.subagentParent.spawnedBy.parentRunId', 'R/A', '$.subagentParent.spawnedBy.toolCallId', 'T') WHERE session_id = '{child}';
         INSERT INTO subagent_spawns SELECT parent_session_id, 'R', 'A/T', swarm_id, item_id, request_fingerprint, 'second-child', initial_turn_id, initial_run_id, claimed_at + 1 FROM subagent_spawns WHERE child_session_id = '{child}';
         UPDATE subagent_spawns SET parent_run_id = 'R/A', tool_call_id = 'T' WHERE child_session_id = '{child}';"
    ))
    .expect("two spawns");
    drop(conn);
    let root = t.path().join("root");
    let (code, report, err) = import(&db, &root);
    assert_eq!(code, 0, "{err}");
    let spawns = find(&report["tables"], "table", "subagent_spawns");
    assert_eq!(spawns["imported"], 4, "{spawns}");
    let out = makalog(&["claims", s(&root)]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("second-child"), "{stdout}");
}
