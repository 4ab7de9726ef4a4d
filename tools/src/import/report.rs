//! The import report: every table of the source, how many of its rows were imported and, for
//! the rest, why not: the table's reason for a table makalog does not model, each row's (by
//! primary key) for a row that was refused.

use super::source::Table;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The report's format name, in its JSON.
pub const REPORT_FORMAT: &str = "makalog-import-report/1";

/// Rows of one table not imported, each named by its primary key.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub key: String,
    pub reason: String,
}

/// One table's accounting.
#[derive(Debug, Clone)]
pub struct TableReport {
    pub file: &'static str,
    pub table: String,
    pub rows: u64,
    pub imported: u64,
    /// What its imported rows became.
    pub how: Option<&'static str>,
    /// Why none of its rows is imported: makalog does not model the table.
    pub not_modeled: Option<&'static str>,
    pub refused: Vec<Refusal>,
}

impl TableReport {
    /// Rows neither imported nor refused nor of a table not modeled: zero unless the importer
    /// missed some, which the tool reports as a failure.
    pub fn unaccounted(&self) -> i64 {
        let not_modeled = if self.not_modeled.is_some() {
            self.rows
        } else {
            0
        };
        self.rows as i64 - self.imported as i64 - self.refused.len() as i64 - not_modeled as i64
    }

    /// Rows not imported, for whatever reason.
    pub fn not_imported(&self) -> u64 {
        self.rows.saturating_sub(self.imported)
    }
}

/// Every table's accounting, in the source's order.
#[derive(Debug, Clone)]
pub struct Report {
    pub tables: Vec<TableReport>,
    /// Where each runtime table is in `tables`: counted once a row.
    runtime: HashMap<String, usize>,
}

/// What an imported table's rows become in makalog (tables of the runtime database).
fn imported_as(table: &str) -> Option<&'static str> {
    Some(match table {
        "session_metadata" => {
            "session headers (each session's latest; the original keeps no earlier version)"
        }
        "session_create_claims" => "session id claims",
        "session_metadata_tombstones" => {
            "id claims without a session: a deleted session's id is never used again"
        }
        "subagent_spawns" => "subagent spawn claims, each with its child's id claim",
        "core_agent_runs" => "run headers (each run's latest version)",
        "core_agent_run_events" => "run events, in sequence order",
        "core_root_turn_admissions" => "root-turn admissions",
        "core_root_turn_start_rejections" => "root-turn start rejections",
        "runtime_events" => {
            "canonical runtime events, in session order, each keeping its sequence number"
        }
        "runtime_session_event_ordinals" => {
            "the order each session's runtime events are written in"
        }
        "runtime_partial_snapshots" => {
            "live partial runtime events, their text joined from their segments"
        }
        "runtime_partial_segments" => "the text of their partial snapshot",
        "session_messages" => "stored messages, in sequence order",
        "session_message_payloads" | "session_message_chunks" => {
            "the record of their (large) message"
        }
        "agent_graph_intent_claims" => "agent-graph intent claims with their admission status",
        _ => return None,
    })
}

/// Why a table's rows are not imported.
fn not_modeled(file: &str, table: &str) -> &'static str {
    if file == super::source::MEMORY_DB {
        return "long-term memory: makalog does not model it";
    }
    match table {
        "operational_schema_migrations" | "session_metadata_schema" => {
            "the source's schema versions: checked before the import, not kept"
        }
        "sqlite_sequence" => "SQLite's own AUTOINCREMENT counters",
        "session_catalog_projection" | "session_catalog_state" => {
            "the session catalog, which makalog derives from session headers"
        }
        "core_agent_run_projections" => "a projection of run events, which makalog does not keep",
        "runtime_capabilities" => "the source's capability markers",
        _ => "makalog does not model this table",
    }
}

impl Report {
    /// A report of `tables`, nothing imported yet.
    pub fn new(tables: &[Table]) -> Report {
        let tables = tables
            .iter()
            .map(|t| {
                let how = (t.file == super::source::RUNTIME_DB)
                    .then(|| imported_as(&t.name))
                    .flatten();
                TableReport {
                    file: t.file,
                    table: t.name.clone(),
                    rows: t.rows,
                    imported: 0,
                    how,
                    not_modeled: how.is_none().then(|| not_modeled(t.file, &t.name)),
                    refused: Vec::new(),
                }
            })
            .collect::<Vec<TableReport>>();
        let runtime = tables
            .iter()
            .enumerate()
            .filter(|(_, t)| t.file == super::source::RUNTIME_DB)
            .map(|(i, t)| (t.table.clone(), i))
            .collect();
        Report { tables, runtime }
    }

    fn table(&mut self, table: &str) -> Option<&mut TableReport> {
        let i = *self.runtime.get(table)?;
        self.tables.get_mut(i)
    }

    /// The same tables with nothing counted: what a check that must not count uses. Made
    /// without the refusals counted so far, once for all the checks: copying them, or the
    /// tables once a session, made a large source quadratic.
    pub fn blank(&self) -> Report {
        let tables = self
            .tables
            .iter()
            .map(|t| TableReport {
                file: t.file,
                table: t.table.clone(),
                rows: t.rows,
                imported: 0,
                how: t.how,
                not_modeled: t.not_modeled,
                refused: Vec::new(),
            })
            .collect();
        Report {
            tables,
            runtime: self.runtime.clone(),
        }
    }

    /// Counts `n` rows of `table` as imported.
    pub fn imported(&mut self, table: &str, n: u64) {
        if let Some(t) = self.table(table) {
            t.imported += n;
        }
    }

    /// Records a row of `table` that was not imported, and why.
    pub fn refused(&mut self, table: &str, key: String, reason: String) {
        if let Some(t) = self.table(table) {
            t.refused.push(Refusal { key, reason });
        }
    }

    /// (rows, imported, not imported) over every table.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.tables.iter().fold((0, 0, 0), |(r, i, n), t| {
            (r + t.rows, i + t.imported, n + t.not_imported())
        })
    }

    /// Tables whose rows are not all accounted for.
    pub fn unaccounted(&self) -> Vec<&TableReport> {
        self.tables
            .iter()
            .filter(|t| t.unaccounted() != 0)
            .collect()
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        let (rows, imported, not_imported) = self.totals();
        let tables: Vec<Value> = self
            .tables
            .iter()
            .map(|t| {
                let mut v = json!({
                    "file": t.file, "table": t.table, "rows": t.rows,
                    "imported": t.imported, "notImported": t.not_imported(),
                });
                if let Some(how) = t.how {
                    v["importedAs"] = json!(how);
                }
                if let Some(why) = t.not_modeled {
                    v["notModeled"] = json!(why);
                }
                if !t.refused.is_empty() {
                    v["refused"] = t
                        .refused
                        .iter()
                        .map(|r| json!({"key": r.key, "reason": r.reason}))
                        .collect();
                }
                v
            })
            .collect();
        json!({
            "format": REPORT_FORMAT,
            "tables": tables,
            "totals": {"rows": rows, "imported": imported, "notImported": not_imported},
        })
    }

    /// The report as text: a line a table with rows, then each refused row (the first 20 of a
    /// table), then the totals.
    pub fn print_text(&self) {
        let width = self
            .tables
            .iter()
            .map(|t| t.table.len())
            .max()
            .unwrap_or(5)
            .max(5);
        say!(
            "{:<14} {:<width$} {:>8} {:>8} {:>8}  WHAT",
            "FILE",
            "TABLE",
            "ROWS",
            "IMPORTED",
            "NOT"
        );
        for t in self.tables.iter().filter(|t| t.rows > 0) {
            let what = match (t.how, t.not_modeled) {
                (Some(how), _) => how,
                (None, Some(why)) => why,
                (None, None) => "",
            };
            say!(
                "{:<14} {:<width$} {:>8} {:>8} {:>8}  {what}",
                t.file,
                t.table,
                t.rows,
                t.imported,
                t.not_imported()
            );
        }
        let empty = self.tables.iter().filter(|t| t.rows == 0).count();
        say!("({empty} tables with no rows not listed; --json lists every table)");
        for t in self.tables.iter().filter(|t| !t.refused.is_empty()) {
            say!("refused in {} ({} rows):", t.table, t.refused.len());
            for r in t.refused.iter().take(20) {
                say!("  {}: {}", r.key, r.reason);
            }
            if t.refused.len() > 20 {
                say!(
                    "  … and {} more (--json lists them all)",
                    t.refused.len() - 20
                );
            }
        }
        let (rows, imported, not_imported) = self.totals();
        say!("rows: {rows}, imported {imported}, not imported {not_imported}");
    }
}
