//! SQLite beside the sessions bench: the original's tables for sessions, runtime events and
//! their ordinals, filled and read as the host does.

use super::common::{self, sqlite_connection, BenchResult, INSERT_EVENT, RUNTIME_EVENTS_SCHEMA};
use super::{footprint, session_id, turn};
use makalog::event::RuntimeEvent;
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, Instant};

/// The original's tables this benchmark fills: sessions, runtime events and their ordinals.
pub fn sqlite_db(path: &Path) -> BenchResult<Connection> {
    let conn = sqlite_connection(path)?;
    conn.execute_batch(RUNTIME_EVENTS_SCHEMA)?;
    conn.execute_batch(
        "CREATE INDEX runtime_events_by_run ON runtime_events(session_id, run_id, event_seq);
         CREATE INDEX runtime_events_by_session ON runtime_events(session_id, committed_at, event_id);
         CREATE TABLE runtime_session_event_ordinals (
           session_id TEXT NOT NULL, ordinal INTEGER NOT NULL CHECK (ordinal > 0),
           event_id TEXT NOT NULL UNIQUE, PRIMARY KEY (session_id, ordinal)) WITHOUT ROWID;
         CREATE TABLE session_metadata (
           session_id TEXT PRIMARY KEY, payload_json TEXT NOT NULL, created_at INTEGER NOT NULL,
           last_used_at INTEGER NOT NULL, name TEXT NOT NULL, backend TEXT NOT NULL,
           model TEXT NOT NULL, committed_at INTEGER NOT NULL);",
    )?;
    Ok(conn)
}

pub fn sqlite_session_row(conn: &Connection, session: &str) -> BenchResult<()> {
    conn.prepare_cached(
        "INSERT INTO session_metadata (session_id, payload_json, created_at, last_used_at, name, \
         backend, model, committed_at) VALUES (?1, ?2, 1, 1, 'New session', 'fake', 'fake-model', 1)",
    )?
    .execute(rusqlite::params![
        session,
        format!("{{\"id\":\"{session}\",\"name\":\"New session\"}}")
    ])?;
    Ok(())
}

/// Inserts events with their per-invocation sequence and per-session ordinal.
pub fn sqlite_events(
    conn: &Connection,
    events: &[RuntimeEvent],
    first_ordinal: usize,
) -> BenchResult<()> {
    let mut insert = conn.prepare_cached(INSERT_EVENT)?;
    let mut ordinal = conn.prepare_cached(
        "INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) VALUES (?1, ?2, ?3)",
    )?;
    // Sequence numbers per invocation go on from the ordinal (one invocation per call but for
    // the large session, which passes all its events at once from ordinal 1).
    let mut seqs = std::collections::HashMap::<&str, i64>::new();
    for (k, e) in events.iter().enumerate() {
        let seq = seqs
            .entry(e.invocation_id())
            .or_insert(first_ordinal as i64 - 1);
        *seq += 1;
        common::insert_event(&mut insert, e, *seq)?;
        ordinal.execute(rusqlite::params![
            e.session_id(),
            (first_ordinal + k) as i64,
            e.id()
        ])?;
    }
    Ok(())
}

/// Bytes SQLite keeps for its database after a checkpoint: the main file and any WAL left.
pub fn sqlite_bytes(conn: &Connection, path: &Path) -> BenchResult<(u64, u64)> {
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    let mut out = footprint(path)?;
    let wal = path.with_extension("db-wal");
    if wal.exists() {
        let (a, b) = footprint(&wal)?;
        out.0 += a;
        out.1 += b;
    }
    Ok(out)
}

/// The same records in SQLite as the original writes them: the session's row, then each event
/// in its own transaction (each durable before the next, as makalog's are).
pub fn sqlite_touch(path: &Path, n: usize) -> BenchResult<(Connection, Duration)> {
    let conn = sqlite_db(path)?;
    let start = Instant::now();
    for i in 0..n {
        let s = session_id(i);
        sqlite_session_row(&conn, &s)?;
        for (k, e) in turn(&s, &format!("run-{i}"), i as f64 * 10.0, 1)
            .iter()
            .enumerate()
        {
            sqlite_events(&conn, std::slice::from_ref(e), k + 1)?;
        }
    }
    Ok((conn, start.elapsed()))
}

pub fn sqlite_list_all(path: &Path, n: usize) -> BenchResult<(Duration, usize)> {
    let start = Instant::now();
    let conn = sqlite_connection(path)?;
    let mut listed = 0;
    for i in 0..n {
        listed += common::sqlite_list(&conn, &session_id(i))?;
    }
    Ok((start.elapsed(), listed))
}
