//! `makalog import-sqlite DB_DIR ROOT`: imports a ledger the original runtime wrote (its
//! `runtime.sqlite`, and `memory.sqlite` beside it) into a makalog root, through the stores.
//!
//! The databases are opened read-only. Every row of every table is accounted for in the
//! report: imported, or not, with the reason (a table makalog does not model; a row that does
//! not decode, by primary key). Importing is idempotent and resumable (see
//! `makalog::import`). Refused, with nothing written: a database of another schema, a root
//! another process owns, a target holding other data under the source's ids.

mod events;
mod graph;
mod lifecycle;
mod messages;
mod order;
mod plans;
mod query_plan;
mod report;
mod rows;
mod schema;
mod session;
mod snapshots;
mod source;
mod sql;

use makalog::import::{ImportOutcome, SessionPlan, Target};
use makalog::root::Owner;
use makalog::storage::RealStorage;
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use report::Report;
use serde_json::json;
use source::Source;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Why an import stopped.
enum Stop {
    /// Refused before anything was written: exit 2.
    Refused(String),
    /// Failed while writing (what was written stays, and a rerun resumes): exit 1.
    Failed(String),
}

pub fn run(db_dir: &Path, root: &Path, json: bool) -> ExitCode {
    match import(db_dir, root) {
        Ok((report, outcome)) => print(&report, &outcome, db_dir, root, json),
        Err(Stop::Refused(why)) => {
            tell!("makalog import-sqlite: {why}");
            ExitCode::from(2)
        }
        Err(Stop::Failed(why)) => {
            tell!("makalog import-sqlite: {why}; what was written is kept, and running the import again (once the cause is mended) resumes it");
            ExitCode::from(1)
        }
    }
}

fn import(db_dir: &Path, root: &Path) -> Result<(Report, ImportOutcome), Stop> {
    let refused = |e: &dyn std::fmt::Display| Stop::Refused(e.to_string());
    let source = Source::open(db_dir).map_err(|e| refused(&e))?;
    let conn = &source.runtime;
    let sql = |e: rusqlite::Error| Stop::Refused(source.error(e).to_string());
    let tables = source.tables().map_err(|e| refused(&e))?;
    plans::check(conn, &db_dir.join(source::RUNTIME_DB), &tables).map_err(|e| refused(&e))?;
    let mut report = Report::new(&tables);
    let ids = session::session_ids(conn, &mut report).map_err(sql)?;
    let claims = session::claims(conn, &mut report).map_err(sql)?;
    let graph = graph::graph_claims(conn, &mut report).map_err(sql)?;

    let storage = Arc::new(RealStorage::new(root));
    if let Some(why) = not_a_target(&storage, root) {
        return Err(Stop::Refused(format!(
            "{}: {why}; nothing was imported",
            root.display()
        )));
    }
    let owner = match Owner::try_acquire_creating(storage) {
        Ok(Some(owner)) => owner,
        Ok(None) => {
            return Err(Stop::Refused(format!(
                "{}: root is busy: another process owns it for writing; nothing was imported",
                root.display()
            )))
        }
        Err(e) => return Err(refused(&e)),
    };
    // The version the root's new sessions are written in: a record of a kind it cannot hold
    // is refused with its row.
    let version = owner.marker().format_version;
    let stores = open_execution_stores_for_write(&owner).map_err(|e| refused(&e))?;
    let planning = session::Planning {
        conn,
        claims: &claims,
        version,
    };
    let outcome = write(&stores, &planning, &ids, &graph, &mut report);
    let closed = stores.close();
    let outcome = outcome?;
    closed.map_err(|e| Stop::Failed(e.to_string()))?;
    rows::refuse_headless(conn, &mut report)
        .map_err(|e| Stop::Failed(source.error(e).to_string()))?;
    Ok((report, outcome))
}

/// Why ROOT cannot take an import: a directory that holds files but is not a makalog root (the
/// original's own storage directory, say). A missing directory or a root is a target.
fn not_a_target(storage: &RealStorage, root: &Path) -> Option<String> {
    let entries = std::fs::read_dir(root).ok()?.count();
    match makalog::root::read_marker(storage) {
        Ok(_) => None,
        Err(_) if entries == 0 => None,
        Err(e) => Some(format!(
            "a directory that is not empty and not a makalog root ({e})"
        )),
    }
}

/// Checks the whole target first (every session's id claim, and the records of the sessions
/// it already holds), then plans and writes a session at a time.
fn write(
    stores: &ExecutionStores,
    source: &session::Planning,
    ids: &[String],
    graph: &[makalog::import::GraphClaimPlan],
    report: &mut Report,
) -> Result<ImportOutcome, Stop> {
    let (conn, claims) = (source.conn, source.claims);
    let sql = |e: rusqlite::Error| Stop::Refused(format!("runtime.sqlite: {e}"));
    let refused = |e: makalog::Error| Stop::Refused(format!("{e}; nothing was imported"));
    let target = Target::new(stores).map_err(refused)?;
    let plan = |id: &str, report: &mut Report| -> Result<Option<SessionPlan>, Stop> {
        session::plan(source, id, report).map_err(sql)
    };
    // What the checks count is thrown away: one blank report takes it all (one a session cost
    // the source's tables, which it names, times its sessions).
    let mut scratch = report.blank();
    for id in ids {
        // An id the stores cannot take is refused with its session when it is planned.
        if makalog::format::validate_session_id(id).is_err() {
            continue;
        }
        if target.holds(id).map_err(refused)? {
            if let Some(p) = plan(id, &mut scratch)? {
                target.check_session(&p).map_err(refused)?;
            }
        } else if let Some(claim) =
            session::id_claim_of(conn, id, claims, &mut scratch).map_err(sql)?
        {
            target.check_id(id, &claim).map_err(refused)?;
        }
    }
    target.check_graph_claims(graph).map_err(refused)?;

    let failed = |e: makalog::Error| Stop::Failed(e.to_string());
    let bar = crate::progress::bar("importing sessions", ids.len() as u64);
    let mut outcome = ImportOutcome::default();
    // Once writing has begun, a failure to read the source leaves what was written: a rerun
    // resumes.
    let midway = |stop: Stop| match stop {
        Stop::Refused(why) => Stop::Failed(why),
        failed => failed,
    };
    for id in ids {
        if let Some(p) = plan(id, report).map_err(midway)? {
            let have = target.check_session(&p).map_err(failed)?;
            target
                .write_session(&p, have, &mut outcome)
                .map_err(failed)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    target
        .write_graph_claims(graph, &mut outcome)
        .map_err(failed)?;
    let planned: std::collections::HashSet<&String> = ids.iter().collect();
    session::refuse_orphan_spawns(claims, &planned, report);
    // Ids without a session: create claims, and deleted sessions' ids (claimed when first
    // taken: a create claim's time when there is one, else the deletion's).
    let mut bare: BTreeMap<&String, u64> = BTreeMap::new();
    for (table, ids) in [
        ("session_create_claims", &claims.creates),
        ("session_metadata_tombstones", &claims.tombstones),
    ] {
        let mut taken = 0;
        for (id, at) in ids {
            // A session's own id claim takes a create claim's id. A tombstone's is claimed
            // whatever the source holds under it (a session row that was refused claims
            // nothing); one already taken is left as it is.
            if planned.contains(id) && table == "session_create_claims" {
                continue;
            }
            match makalog::format::validate_session_id(id) {
                Ok(()) => {
                    bare.entry(id).or_insert(*at);
                    taken += 1;
                }
                Err(why) => report.refused(table, id.clone(), why),
            }
        }
        report.imported(table, taken);
    }
    let valid: Vec<(String, u64)> = bare.into_iter().map(|(id, at)| (id.clone(), at)).collect();
    target
        .write_bare_ids(&valid, &mut outcome)
        .map_err(failed)?;
    Ok(outcome)
}

fn print(
    report: &Report,
    outcome: &ImportOutcome,
    db_dir: &Path,
    root: &Path,
    json: bool,
) -> ExitCode {
    let unaccounted = report.unaccounted();
    let refused: usize = report.tables.iter().map(|t| t.refused.len()).sum();
    if json {
        let mut v = report.to_json();
        v["source"] = json!(db_dir.display().to_string());
        v["root"] = json!(root.display().to_string());
        v["written"] = json!({
            "records": outcome.records_written, "recordsPresent": outcome.records_present,
            "sessions": outcome.sessions_written, "claims": outcome.claims_written,
            "claimsPresent": outcome.claims_present, "nothingNew": outcome.wrote_nothing(),
        });
        say!("{v}");
    } else {
        say!("import {} -> {}", db_dir.display(), root.display());
        report.print_text();
        if outcome.wrote_nothing() {
            say!(
                "nothing new: the root already held all {} records and {} claims",
                outcome.records_present,
                outcome.claims_present
            );
        } else {
            say!(
                "wrote {} records in {} sessions and {} claims ({} records and {} claims were already there)",
                outcome.records_written,
                outcome.sessions_written,
                outcome.claims_written,
                outcome.records_present,
                outcome.claims_present
            );
        }
    }
    for t in &unaccounted {
        tell!(
            "makalog import-sqlite: {} of {}: {} rows unaccounted for",
            t.table,
            t.file,
            t.unaccounted()
        );
    }
    if unaccounted.is_empty() && refused == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
