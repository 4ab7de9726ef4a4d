use super::super::query_plan::aliases;
use super::*;
use crate::import::source::RUNTIME_DB;

/// A copy of the original's ledger (the compat fixture) in a new directory, `edit` run on it.
fn fixture_copy(edit: &str) -> (tempfile::TempDir, Connection) {
    let t = tempfile::tempdir().expect("tempdir");
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/compat/maka-sqlite")
        .join(RUNTIME_DB);
    let to = t.path().join(RUNTIME_DB);
    std::fs::copy(from, &to).expect("copy");
    let conn = Connection::open(&to).expect("open");
    conn.execute_batch(edit).expect("edit");
    (t, conn)
}

/// Every table the repeated queries read, with `rows` rows, and `sessions` sessions.
fn counts(conn: &Connection, sessions: u64, rows: u64) -> Vec<Table> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .expect("tables");
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("names")
        .collect::<rusqlite::Result<_>>()
        .expect("names");
    names
        .into_iter()
        .map(|name| Table {
            file: RUNTIME_DB,
            rows: if name == "session_metadata" {
                sessions
            } else {
                rows
            },
            name,
        })
        .collect()
}

/// SQL rebuilding each of `tables` without its keys and indexes, as `CREATE TABLE … AS
/// SELECT` copies it.
fn without_keys(tables: &[&str]) -> String {
    let mut sql = String::from("PRAGMA foreign_keys = OFF;");
    for t in tables {
        sql.push_str(&format!(
            "ALTER TABLE {t} RENAME TO k; CREATE TABLE {t} AS SELECT * FROM k; DROP TABLE k;"
        ));
    }
    sql
}

/// The events and ordinals without their keys.
fn keyless() -> String {
    without_keys(&["runtime_events", "runtime_session_event_ordinals"])
}

/// Indexes on `session_id` alone for the events and ordinals.
const BY_SESSION: &str = "CREATE INDEX events_by_session ON runtime_events(session_id);
    CREATE INDEX ordinals_by_session ON runtime_session_event_ordinals(session_id);";

/// One session of 20,000 events and their ordinals.
const LONG_SESSION: &str = "CREATE TEMP TABLE n AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) SELECT i FROM n;
    INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, payload_json, committed_at)
        SELECT 'long-' || i, 'long', 'inv-long', 'run-long', 'turn-long', i, 'text', '{}', i FROM n;
    INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) SELECT 'long', i, 'long-' || i FROM n;";

#[test]
fn aliases_name_tables_not_subqueries_or_keywords() {
    let a = aliases(messages::MESSAGES);
    assert_eq!(a["m"], "session_messages");
    assert_eq!(a["session_message_payloads"], "session_message_payloads");
    assert!(!a.contains_key("p"), "p is a subquery: {a:?}");
    assert!(!a.contains_key("WHERE"), "{a:?}");
    let a = aliases(events::ORPHAN_ORDINALS);
    assert_eq!(a["o"], "runtime_session_event_ordinals");
    assert_eq!(a["e"], "runtime_events");
}

/// On the original's own schema no repeated query reads more than the rows it takes, at
/// any size: a real ledger is never refused. (The refusal of a session's partial segments
/// read every segment for each such session until it went through the session's snapshots.)
#[test]
fn on_the_originals_schema_nothing_is_read_beyond_what_is_taken() {
    let (_t, conn) = fixture_copy("");
    let excess = excess_reads(&conn, &counts(&conn, 1 << 20, 1 << 40)).expect("plans");
    assert!(excess.is_empty(), "{excess:?}");
}

/// Events and ordinals without their keys: each session's queries read both tables whole,
/// one for each ordinal: refused at 1,000 sessions of a million rows, a small copy taken.
#[test]
fn a_copy_without_keys_is_refused_by_its_size() {
    let (t, conn) = fixture_copy(&keyless());
    let path = t.path().join(RUNTIME_DB);
    let refused = check(&conn, &path, &counts(&conn, 1_000, 1_000_000));
    assert!(
        matches!(&refused, Err(SourceError::Unindexed { table, .. }) if table.starts_with("runtime_")),
        "{refused:?}"
    );
    check(&conn, &path, &counts(&conn, 7, 30)).expect("a small copy");
}

/// Every table the repeated queries read, with the rows it holds.
fn held(conn: &Connection) -> Vec<Table> {
    counts(conn, 0, 0)
        .into_iter()
        .map(|t| Table {
            rows: conn
                .query_row(&format!("SELECT count(*) FROM \"{}\"", t.name), [], |r| {
                    r.get::<_, i64>(0)
                })
                .expect("count") as u64,
            ..t
        })
        .collect()
}

/// With an index on `session_id` alone, each event of a session looks up its ordinal among all
/// the session's ordinals, and each ordinal its event: one session of 20,000 events among the
/// fixture's few reads 4 × 10⁸ rows though nothing is scanned (116 s measured). Such lookups
/// were counted as nothing, then by the average session, which one long session hides.
#[test]
fn a_join_on_a_whole_sessions_rows_is_counted_by_the_longest_session() {
    let edit = format!("{}{BY_SESSION}{LONG_SESSION}", keyless());
    let (t, conn) = fixture_copy(&edit);
    let excess = excess_reads(&conn, &held(&conn)).expect("plans");
    let ordinals = excess
        .get("runtime_session_event_ordinals")
        .copied()
        .unwrap_or(0);
    assert!(ordinals >= 20_000 * 20_000, "{excess:?}");
    let path = t.path().join(RUNTIME_DB);
    assert!(check(&conn, &path, &held(&conn)).is_err());
}

/// Messages found by an index on `sequence` alone (and one by session and time): each
/// session's check of its payloads looks each message up among every session's messages of
/// that sequence.
#[test]
fn a_lookup_by_a_column_that_is_no_key_is_counted() {
    let edit = without_keys(&["session_messages"])
        + "CREATE INDEX messages_by_sequence ON session_messages(sequence);
        CREATE INDEX messages_by_time ON session_messages(session_id, message_ts);";
    let (_t, conn) = fixture_copy(&edit);
    let excess = excess_reads(&conn, &counts(&conn, 10_000, 1_000_000)).expect("plans");
    assert!(
        excess
            .get("session_messages")
            .is_some_and(|n| *n > 1_000_000),
        "{excess:?}"
    );
}

/// Statistics taken while the ordinals were few make SQLite read them whole for each event
/// (a nested loop, no automatic index, and no correlated subquery in the plan): counted per
/// event, where it was counted once per session.
#[test]
fn a_nested_loop_join_is_counted_per_row_taken() {
    let edit = without_keys(&["runtime_session_event_ordinals"]) + "ANALYZE;";
    let (_t, conn) = fixture_copy(&edit);
    let steps = steps(&conn, events::EVENTS).expect("plan");
    let ordinals = steps
        .iter()
        .find(|s| s.table == "runtime_session_event_ordinals")
        .expect("the ordinals are read");
    assert_eq!(ordinals.lookup, Lookup::Scan, "{steps:?}");
    assert!(ordinals.nested, "{steps:?}");
    let excess = excess_reads(&conn, &counts(&conn, 30, 1_000_000)).expect("plans");
    assert!(
        excess["runtime_session_event_ordinals"] >= 1_000_000 * 1_000_000,
        "{excess:?}"
    );
}

/// The columns a search holds equal, from its plan's last parenthesized group: a skip-scan's
/// `ANY(…)` and a range are not among them (the last `(` was taken for the constraint, and a
/// skip-scan's left none, which made the check fail on a `GROUP BY` of nothing), and an index
/// named like a constraint, which comes before it, is not read for one.
#[test]
fn a_searchs_columns_are_read_from_its_last_parenthesized_group() {
    use super::super::query_plan::constrained;
    let cases: [(&str, &[&str]); 6] = [
        (
            "SEARCH m USING COVERING INDEX session_metadata_by_parent (ANY(parent_session_id) AND session_id=?)",
            &["session_id"],
        ),
        (
            "SEARCH o USING INDEX x (event_id=? AND session_id=?) LEFT-JOIN",
            &["event_id", "session_id"],
        ),
        ("SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", &["rowid"]),
        ("SEARCH t USING INDEX i (x=? AND y>? AND y<?)", &["x"]),
        ("SEARCH t USING INDEX i (y>?)", &[]),
        (
            "SEARCH o USING INDEX o (event_id=?) (session_id=?)",
            &["session_id"],
        ),
    ];
    for (detail, want) in cases {
        assert_eq!(constrained(detail), want, "{detail}");
    }
    use super::super::query_plan::lookup_of;
    assert_eq!(
        lookup_of("SEARCH t USING INDEX i (y>? AND y<?)"),
        Some(Lookup::Scan),
        "a search by a range alone reads like a scan"
    );
    assert_eq!(lookup_of("USE TEMP B-TREE FOR ORDER BY"), None);
}

/// The most rows sharing a value: NULL equals no value a lookup is given, so a hundred rows
/// of NULL share none.
#[test]
fn rows_of_null_share_no_value() {
    let conn = Connection::open_in_memory().expect("memory");
    conn.execute_batch(
        "CREATE TABLE t (a TEXT, b TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
             INSERT INTO t SELECT NULL, 'x' FROM n;
         INSERT INTO t VALUES ('v', 'x'), ('v', 'y');",
    )
    .expect("rows");
    let mut sharing = Sharing::new(&conn);
    assert_eq!(sharing.most("t", &["a".to_owned()]).expect("most"), 2);
    assert_eq!(sharing.most("t", &["b".to_owned()]).expect("most"), 101);
    assert_eq!(
        sharing.most("t", &["nosuch".to_owned()]).expect("most"),
        102,
        "a name the table has not is no column: every row"
    );
}

/// `session_metadata` rebuilt without its key but with the original's other indexes and
/// statistics: SQLite skip-scans an index to find a session's header. A cheap copy to read,
/// imported, where the check failed with an SQL error.
#[test]
fn a_skip_scan_is_read_and_the_copy_taken() {
    let edit = without_keys(&["session_metadata"])
        + "CREATE INDEX session_metadata_by_recency ON session_metadata(is_archived, last_message_at DESC, last_used_at DESC, session_id);
        CREATE INDEX session_metadata_by_parent ON session_metadata(parent_session_id, session_id);
        CREATE INDEX session_metadata_by_revision ON session_metadata(revision_root_session_id, revision_index, session_id);
        CREATE TEMP TABLE n AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) SELECT i FROM n;
        CREATE TEMP TABLE one AS SELECT * FROM session_metadata LIMIT 1;
        INSERT INTO session_metadata SELECT 'more-' || n.i, one.payload_json, one.created_at, one.last_used_at, one.last_message_at, one.name, one.is_flagged, one.is_archived, one.parent_session_id, one.revision_root_session_id, one.revision_index, one.has_unread, one.backend, one.llm_connection_slug, one.model, one.metadata_version, one.committed_at, one.subagent_parent_session_id, one.subagent_parent_run_id, one.subagent_tool_call_id, one.subagent_swarm_id, one.subagent_item_id, one.subagent_request_fingerprint, one.subagent_initial_turn_id, one.subagent_initial_run_id, one.external_adapter_id, one.external_source_session_id FROM n, one;
        ANALYZE;";
    let (t, conn) = fixture_copy(&edit);
    let skip_scans = repeated().iter().any(|r| {
        super::super::query_plan::plan(&conn, &r.sql)
            .expect("plan")
            .iter()
            .any(|(_, _, detail)| detail.contains("ANY("))
    });
    assert!(skip_scans, "some lookup skip-scans an index");
    let path = t.path().join(RUNTIME_DB);
    check(&conn, &path, &held(&conn)).expect("taken");
}

/// A unique index over part of a table (`WHERE ordinal = 1`) is no key of it: the copy of the
/// long session with indexes on `session_id` alone stays refused with such indexes added.
#[test]
fn a_partial_unique_index_is_no_key() {
    let partial = "CREATE UNIQUE INDEX one_ordinal ON runtime_session_event_ordinals(session_id) WHERE ordinal = 1;
        CREATE UNIQUE INDEX one_event ON runtime_events(session_id) WHERE event_seq = 1 AND session_id = 'none';";
    let edit = format!("{}{BY_SESSION}{partial}{LONG_SESSION}", keyless());
    let (t, conn) = fixture_copy(&edit);
    let path = t.path().join(RUNTIME_DB);
    assert!(check(&conn, &path, &held(&conn)).is_err());
}

/// A message's chunks are looked up for each chunked message (each payload row), not each
/// message: a million messages of which ten are chunked, with chunks found by session alone,
/// read ten sessions' chunks, where each message was counted.
#[test]
fn chunk_lookups_are_counted_per_chunked_message() {
    let edit = without_keys(&["session_message_chunks"])
        + "CREATE INDEX chunks_by_session ON session_message_chunks(session_id);
        CREATE TEMP TABLE n AS WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 15) SELECT i FROM n;
        INSERT INTO session_message_chunks SELECT 'long', 1, i, x'00', printf('%.*c', 64, '0') FROM n;";
    let (t, conn) = fixture_copy(&edit);
    let mut tables = counts(&conn, 10, 10);
    for t in &mut tables {
        if t.name == "session_messages" {
            t.rows = 1_000_000_000;
        }
    }
    let excess = excess_reads(&conn, &tables).expect("plans");
    let chunks = excess.get("session_message_chunks").copied().unwrap_or(0);
    assert!(chunks > 0 && chunks <= 2 * 10 * 16, "{excess:?}");
    check(&conn, &t.path().join(RUNTIME_DB), &tables).expect("taken");
}
