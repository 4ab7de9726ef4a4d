//! What the queries the importer repeats (once per session, message or snapshot) would read of
//! this source beyond the rows they take. The original's tables have an index for each of
//! them; a copy without those indexes (`CREATE TABLE … AS SELECT` keeps none) makes each run
//! read whole tables, or a whole session's rows for each row it joins, so an import would cost
//! its sessions times its rows. Such a source is refused before a row is read when SQLite's
//! plans say those reads would pass [`SCAN_BOUND`]; a small one is imported as it is.

use super::query_plan::{steps, Lookup};
use super::source::{SourceError, Table};
use super::{events, lifecycle, messages, rows, session, snapshots};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

/// The most rows the repeated queries may read beyond those they take: some seconds of
/// SQLite's reading (a copy reading 2 × 10⁸ took 22 s here), where a copy of a real ledger
/// without its indexes would take hours.
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

/// Refuses a source whose repeated queries would read more than [`SCAN_BOUND`] rows beyond
/// those they take, naming the table they would read most; `tables` gives the row counts.
pub fn check(conn: &Connection, path: &Path, tables: &[Table]) -> Result<(), SourceError> {
    let fail = |e: rusqlite::Error| SourceError::Sqlite {
        file: path.to_owned(),
        what: e.to_string(),
    };
    let by_table = excess_reads(conn, tables).map_err(fail)?;
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

/// By table, the rows the repeated queries would read beyond those they take, estimated from
/// SQLite's plans and the tables' row counts. Per run of a query: a whole-table read (a scan,
/// or an automatic index, which SQLite builds once a run), and a lookup of one session's rows
/// where a query runs per message or snapshot. Per row a query takes (over all its runs, the
/// rows of its outermost table): a table read in a join or a correlated subquery, whole or a
/// session's rows at a time. A lookup by a key, and a read every import makes anyway (a query
/// run once reading a table once; each session reading its own rows) counts nothing.
fn excess_reads(conn: &Connection, tables: &[Table]) -> rusqlite::Result<HashMap<String, u128>> {
    let rows: HashMap<&str, u64> = tables
        .iter()
        .filter(|t| t.file == super::source::RUNTIME_DB)
        .map(|t| (t.name.as_str(), t.rows))
        .collect();
    let count = |table: &str| u128::from(rows.get(table).copied().unwrap_or(0));
    let sessions = count("session_metadata").max(1);
    let mut by_table: HashMap<String, u128> = HashMap::new();
    for r in repeated() {
        let runs = r.per_row_of.map_or(1, count);
        let per_session = r.per_row_of == Some("session_metadata");
        let taken = super::query_plan::outermost(&r.sql).map_or(0, |t| count(&t));
        for step in steps(conn, &r.sql)? {
            let whole = count(&step.table);
            let of_a_session = whole / sessions;
            let repeated = r.per_row_of.is_some();
            let reads = match step.lookup {
                Lookup::AutomaticIndex if repeated => runs.saturating_mul(whole),
                Lookup::Scan if step.nested => taken.saturating_mul(whole),
                Lookup::Scan if repeated => runs.saturating_mul(whole),
                // A lookup of a session's rows that finds one (`session_metadata`'s) is a key's.
                Lookup::SessionRows if step.nested && of_a_session > 1 => {
                    taken.saturating_mul(of_a_session)
                }
                Lookup::SessionRows if !step.nested && repeated && !per_session => {
                    runs.saturating_mul(of_a_session)
                }
                _ => 0,
            };
            if reads > 0 {
                let n = by_table.entry(step.table).or_default();
                *n = n.saturating_add(reads);
            }
        }
    }
    Ok(by_table)
}

#[cfg(test)]
#[path = "plans_tests.rs"]
mod tests;
