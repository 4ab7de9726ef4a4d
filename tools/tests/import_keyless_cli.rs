//! `makalog import-sqlite` on chunked messages and on sources rebuilt without the original's
//! primary keys: rows joined, refused or repeated are each accounted for by their key.
#![cfg(feature = "sqlite")]

mod common;

use common::{find, fixture_copy, import, makalog, s, text};

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
