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

/// A query the importer repeats, and what it runs once for.
struct Repeated {
    sql: String,
    per: Per,
}

/// What a query runs once for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Per {
    /// The whole import.
    Once,
    /// Each session, taking its rows.
    Session,
    /// Each row of `table`, taking the rows whose `by` columns hold that row's values.
    Row {
        table: &'static str,
        by: &'static [&'static str],
    },
}

fn repeated() -> &'static [Repeated] {
    static ALL: OnceLock<Vec<Repeated>> = OnceLock::new();
    ALL.get_or_init(|| {
        let of = |per, sql: &str| Repeated {
            sql: sql.to_owned(),
            per,
        };
        // Run for each chunked message: those with a payload row.
        let message = Per::Row {
            table: "session_message_payloads",
            by: &["session_id", "sequence"],
        };
        let snapshot = Per::Row {
            table: "runtime_partial_snapshots",
            by: &["stream_key"],
        };
        let mut all = vec![
            of(Per::Session, session::HEADER),
            of(Per::Session, lifecycle::RUNS),
            of(Per::Session, lifecycle::RUN_EVENTS),
            of(Per::Session, events::EVENTS),
            of(Per::Session, events::ORPHAN_ORDINALS),
            of(Per::Session, snapshots::SNAPSHOTS),
            of(snapshot, snapshots::SEGMENTS),
            of(Per::Session, messages::CHUNKED),
            of(Per::Session, messages::MESSAGES),
            of(Per::Session, messages::ORPHAN_PAYLOADS),
            of(Per::Session, messages::ORPHAN_CHUNKS),
            of(message, messages::CHUNK_SHAPES),
            of(message, messages::CHUNK_DATA),
        ];
        for (table, at) in lifecycle::TURN_TABLES {
            all.push(of(Per::Session, &lifecycle::turn_sql(table, at)));
        }
        let (of_session, headless) = rows::queries();
        all.extend(of_session.iter().map(|sql| of(Per::Session, sql)));
        all.extend(headless.iter().map(|sql| of(Per::Once, sql)));
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
/// SQLite's plans and the tables' rows. Per run of a query: a whole-table read (a scan, or an
/// automatic index, which SQLite builds once a run), and a lookup reading more than the rows
/// the run takes (a session's chunks for each message). Per row a query takes (over all its
/// runs, the rows of its outermost table): a table read in a join or a correlated subquery,
/// whole, or as many rows as the most that share the lookup's values (a session's rows, by an
/// index on `session_id` alone). A lookup by a unique key, and a read every import makes anyway
/// (a query run once reading a table once; a run reading the rows it takes) count nothing.
fn excess_reads(conn: &Connection, tables: &[Table]) -> rusqlite::Result<HashMap<String, u128>> {
    let rows: HashMap<&str, u64> = tables
        .iter()
        .filter(|t| t.file == super::source::RUNTIME_DB)
        .map(|t| (t.name.as_str(), t.rows))
        .collect();
    let count = |table: &str| u128::from(rows.get(table).copied().unwrap_or(0));
    let mut sharing = Sharing::new(conn);
    let mut by_table: HashMap<String, u128> = HashMap::new();
    for r in repeated() {
        let runs = match r.per {
            Per::Once => 1,
            Per::Session => count("session_metadata"),
            Per::Row { table, .. } => count(table),
        };
        let taken = super::query_plan::outermost(&r.sql).map_or(0, |t| count(&t));
        for step in steps(conn, &r.sql)? {
            let whole = count(&step.table);
            let reads = match (&step.lookup, step.nested, r.per) {
                (Lookup::Scan, true, _) => taken.saturating_mul(whole),
                (Lookup::Scan | Lookup::AutomaticIndex, _, Per::Once) => 0,
                (Lookup::Scan | Lookup::AutomaticIndex, _, _) => runs.saturating_mul(whole),
                (Lookup::Search(by), true, _) => match sharing.most(&step.table, by)? {
                    1 => 0,
                    most => taken.saturating_mul(most),
                },
                (Lookup::Search(by), false, Per::Row { by: takes, .. })
                    if !takes.iter().all(|c| by.iter().any(|b| b == c)) =>
                {
                    runs.saturating_mul(sharing.most(&step.table, by)?)
                }
                (Lookup::Search(_), false, _) => 0,
            };
            if reads > 0 {
                let n = by_table.entry(step.table).or_default();
                *n = n.saturating_add(reads);
            }
        }
    }
    Ok(by_table)
}

/// The most rows of a table that share values of some columns: 1 where the columns hold a
/// unique index's (no row is read then); otherwise counted, which reads the table once (only
/// a copy without the original's keys comes to that).
struct Sharing<'a> {
    conn: &'a Connection,
    known: HashMap<(String, Vec<String>), u128>,
}

impl<'a> Sharing<'a> {
    fn new(conn: &'a Connection) -> Self {
        Sharing {
            conn,
            known: HashMap::new(),
        }
    }

    fn most(&mut self, table: &str, columns: &[String]) -> rusqlite::Result<u128> {
        let key = (table.to_owned(), columns.to_vec());
        if let Some(n) = self.known.get(&key) {
            return Ok(*n);
        }
        // Only the table's own columns: a plan's text is parsed, and an index may be named
        // like a constraint.
        let own = self.columns(table)?;
        let columns: Vec<String> = columns
            .iter()
            .filter(|c| *c == "rowid" || own.contains(*c))
            .cloned()
            .collect();
        let n = if columns.iter().any(|c| c == "rowid") || self.unique(table, &columns)? {
            1
        } else if columns.is_empty() {
            let n: i64 = self.conn.query_row(
                &format!("SELECT count(*) FROM {}", quote(table)),
                [],
                |r| r.get(0),
            )?;
            u128::try_from(n).unwrap_or(0)
        } else {
            let quoted: Vec<String> = columns.iter().map(|c| quote(c)).collect();
            // NULL equals no value a lookup is given.
            let sql = format!(
                "SELECT max(n) FROM (SELECT count(*) AS n FROM {} WHERE {} GROUP BY {})",
                quote(table),
                quoted
                    .iter()
                    .map(|c| format!("{c} IS NOT NULL"))
                    .collect::<Vec<_>>()
                    .join(" AND "),
                quoted.join(", ")
            );
            let most: Option<i64> = self.conn.query_row(&sql, [], |r| r.get(0))?;
            u128::try_from(most.unwrap_or(0)).unwrap_or(0)
        };
        self.known.insert(key, n);
        Ok(n)
    }

    /// The table's columns.
    fn columns(&self, table: &str) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")?;
        let names = stmt.query_map([table], |r| r.get(0))?;
        names.collect()
    }

    /// Whether `columns` hold every column of one of the table's unique indexes (over the
    /// whole table: a partial one is unique only among the rows it holds).
    fn unique(&self, table: &str, columns: &[String]) -> rusqlite::Result<bool> {
        let mut list = self.conn.prepare(
            "SELECT name FROM pragma_index_list(?1) WHERE \"unique\" = 1 AND partial = 0",
        )?;
        let indexes: Vec<String> = list
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut info = self
            .conn
            .prepare("SELECT name FROM pragma_index_info(?1)")?;
        for index in indexes {
            let keyed: Vec<Option<String>> = info
                .query_map([&index], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            // An index on an expression has a column without a name, which no lookup names.
            if keyed
                .iter()
                .all(|k| k.as_ref().is_some_and(|k| columns.contains(k)))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
#[path = "plans_tests.rs"]
mod tests;
