//! What the queries the importer repeats (once per session, message or snapshot) would read of
//! this source. The original's tables have an index for each of them; a copy without those
//! indexes (`CREATE TABLE … AS SELECT` keeps none) makes each run read whole tables, so an
//! import would cost its sessions times its rows. Such a source is refused before a row is read
//! when those reads would pass [`SCAN_BOUND`]; a small one is imported as it is.

use super::source::{SourceError, Table};
use super::{events, lifecycle, messages, rows, session, snapshots};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

/// The most rows the repeated queries may read by whole-table scans: some seconds of SQLite's
/// reading, where an unindexed copy of a real ledger would take hours.
pub const SCAN_BOUND: u128 = 1 << 27;

/// A query the importer runs once per row of a table (or once).
struct Repeated {
    sql: String,
    per_row_of: Option<&'static str>,
}

fn repeated() -> &'static [Repeated] {
    static ALL: OnceLock<Vec<Repeated>> = OnceLock::new();
    ALL.get_or_init(|| {
        let per = |table, sql: &str| Repeated {
            sql: sql.to_owned(),
            per_row_of: table,
        };
        let sessions = Some("session_metadata");
        let mut all = vec![
            per(sessions, session::HEADER),
            per(sessions, lifecycle::RUNS),
            per(sessions, lifecycle::RUN_EVENTS),
            per(sessions, events::EVENTS),
            per(sessions, events::ORPHAN_ORDINALS),
            per(sessions, snapshots::SNAPSHOTS),
            per(Some("runtime_partial_snapshots"), snapshots::SEGMENTS),
            per(sessions, messages::CHUNKED),
            per(sessions, messages::MESSAGES),
            per(sessions, messages::ORPHAN_PAYLOADS),
            per(sessions, messages::ORPHAN_CHUNKS),
            per(Some("session_messages"), messages::CHUNK_SHAPES),
            per(Some("session_messages"), messages::CHUNK_DATA),
        ];
        for (table, at) in lifecycle::TURN_TABLES {
            all.push(per(sessions, &lifecycle::turn_sql(table, at)));
        }
        let (of_session, headless) = rows::queries();
        all.extend(of_session.iter().map(|sql| per(sessions, sql)));
        all.extend(headless.iter().map(|sql| per(None, sql)));
        all
    })
}

/// Whether `sql` is one of the queries checked here: every query with a parameter must be.
pub fn is_checked(sql: &str) -> bool {
    repeated().iter().any(|r| r.sql == sql)
}

/// Refuses a source whose repeated queries would read more than [`SCAN_BOUND`] rows by
/// whole-table scans, naming the table they would read most; `tables` gives the row counts.
pub fn check(conn: &Connection, path: &Path, tables: &[Table]) -> Result<(), SourceError> {
    let rows: HashMap<&str, u64> = tables
        .iter()
        .filter(|t| t.file == super::source::RUNTIME_DB)
        .map(|t| (t.name.as_str(), t.rows))
        .collect();
    let count = |table: &str| u128::from(rows.get(table).copied().unwrap_or(0));
    let fail = |e: rusqlite::Error| SourceError::Sqlite {
        file: path.to_owned(),
        what: e.to_string(),
    };
    let mut by_table: HashMap<String, u128> = HashMap::new();
    for r in repeated() {
        let runs = r.per_row_of.map_or(1, count);
        // A correlated subquery runs for each row its query takes, which over all runs are
        // at most the rows of the query's outermost table.
        let outer = outermost(&r.sql).map_or(0, |t| count(&t));
        for scan in scans(conn, &r.sql).map_err(fail)? {
            // A query run once reads each table it scans once, as the import must anyway.
            let reads = match (scan.correlated, r.per_row_of) {
                (true, _) => outer,
                (false, Some(_)) => runs,
                (false, None) => continue,
            };
            let n = by_table.entry(scan.table.clone()).or_default();
            *n = n.saturating_add(reads.saturating_mul(count(&scan.table)));
        }
    }
    let total = by_table.values().fold(0u128, |a, n| a.saturating_add(*n));
    match by_table
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
    {
        Some((table, _)) if total > SCAN_BOUND => Err(SourceError::Unindexed {
            file: path.to_owned(),
            table,
            reads: total,
        }),
        _ => Ok(()),
    }
}

/// A table a step of SQLite's plan reads whole each time it runs: a `SCAN`, or an automatic
/// index (built from the whole table); `correlated` when the step is in a subquery run once
/// per row of its query.
struct Scan {
    table: String,
    correlated: bool,
}

fn scans(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<Scan>> {
    let aliases = aliases(sql);
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let n = stmt.parameter_count();
    let steps: Vec<(i64, i64, String)> = stmt
        .query_map(
            rusqlite::params_from_iter(std::iter::repeat_n("", n)),
            |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let by_id: HashMap<i64, (i64, &str)> = steps
        .iter()
        .map(|(id, parent, d)| (*id, (*parent, d.as_str())))
        .collect();
    // Whether a step lies under a correlated subquery; the walk takes at most one step per
    // step of the plan.
    let correlated = |mut id: i64| {
        for _ in 0..steps.len() {
            match by_id.get(&id) {
                Some((_, d)) if d.starts_with("CORRELATED ") => return true,
                Some((parent, _)) => id = *parent,
                None => return false,
            }
        }
        false
    };
    Ok(steps
        .iter()
        .filter(|(_, _, d)| d.starts_with("SCAN ") || d.contains(" AUTOMATIC "))
        .filter_map(|(_, parent, d)| {
            let table = aliases.get(d.split_whitespace().nth(1)?)?;
            Some(Scan {
                table: table.clone(),
                correlated: correlated(*parent),
            })
        })
        .collect())
}

/// The table of `sql`'s outermost `FROM`.
fn outermost(sql: &str) -> Option<String> {
    let mut tokens = tokens(sql);
    tokens.find(|t| t.eq_ignore_ascii_case("FROM"))?;
    tokens.next().filter(|t| is_name(t)).map(str::to_owned)
}

fn tokens(sql: &str) -> impl Iterator<Item = &str> {
    sql.split(|c: char| c.is_whitespace() || c == ',' || c == ')')
        .filter(|t| !t.is_empty())
}

/// The tables `sql` reads, by the name or alias its plan calls them (`FROM t`, `JOIN t a`).
/// A subquery in parentheses is no table: its own tables are named inside it.
fn aliases(sql: &str) -> HashMap<String, String> {
    const NOT_ALIAS: [&str; 8] = [
        "WHERE", "ON", "LEFT", "JOIN", "ORDER", "GROUP", "LIMIT", "INNER",
    ];
    let tokens: Vec<&str> = tokens(sql).collect();
    let mut out = HashMap::new();
    for (i, w) in tokens.iter().enumerate() {
        if !(w.eq_ignore_ascii_case("FROM") || w.eq_ignore_ascii_case("JOIN")) {
            continue;
        }
        let Some(table) = tokens.get(i + 1).filter(|t| is_name(t)) else {
            continue;
        };
        out.insert(table.to_string(), table.to_string());
        if let Some(alias) = tokens
            .get(i + 2)
            .filter(|t| is_name(t) && !NOT_ALIAS.iter().any(|k| t.eq_ignore_ascii_case(k)))
        {
            out.insert(alias.to_string(), table.to_string());
        }
    }
    out
}

fn is_name(t: &str) -> bool {
    t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// On the original's own schema (the ledger it wrote) no repeated query reads a table
    /// whole, and each query run once reads one table once: a real ledger of any size passes.
    /// (The refusal of a session's partial segments scanned them all until it went through
    /// the session's snapshots.)
    #[test]
    fn on_the_originals_schema_no_repeated_query_scans() {
        let db = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/compat/maka-sqlite/runtime.sqlite");
        let conn = Connection::open_with_flags(
            format!("file:{}?immutable=1", db.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .expect("the original's ledger");
        for r in repeated() {
            let repeats: Vec<String> = scans(&conn, &r.sql)
                .expect("plan")
                .into_iter()
                .filter(|s| s.correlated || r.per_row_of.is_some())
                .map(|s| s.table)
                .collect();
            assert!(repeats.is_empty(), "{}: scans {repeats:?}", r.sql);
        }
    }

    /// The same query planned over a table with the original's key and over a copy without:
    /// the first reads nothing whole, the second the table, in the subquery run per row.
    #[test]
    fn a_scan_is_found_only_where_an_index_is_missing() {
        let conn = Connection::open_in_memory().expect("memory");
        conn.execute_batch(
            "CREATE TABLE session_messages (session_id TEXT, sequence INTEGER, message_ts INTEGER, record_json TEXT, PRIMARY KEY (session_id, sequence));
             CREATE TABLE session_message_payloads (session_id TEXT, sequence INTEGER, record_bytes INTEGER, sha256 TEXT, PRIMARY KEY (session_id, sequence));",
        )
        .expect("keyed");
        assert!(scans(&conn, messages::ORPHAN_PAYLOADS)
            .expect("plan")
            .is_empty());
        conn.execute_batch(
            "ALTER TABLE session_messages RENAME TO keyed; CREATE TABLE session_messages AS SELECT * FROM keyed; DROP TABLE keyed;",
        )
        .expect("keyless");
        let scanned = scans(&conn, messages::ORPHAN_PAYLOADS).expect("plan");
        assert!(
            scanned
                .iter()
                .any(|s| s.table == "session_messages" && s.correlated),
            "the subquery for each payload reads the messages whole"
        );
    }
}
