//! The SQLite side of the store benchmarks: the original runtime's tables for sessions, spawns,
//! messages, runs and run events, written and read the way its stores do (one shared
//! connection, WAL, `synchronous=FULL`, a transaction per operation).
//!
//! The original's operational database (`runtime.sqlite`) is not among the compat files (only
//! its table names and row counts, `counts.txt`), so the columns and indexes are rebuilt from
//! those names and the access paths MAKA-MODEL.md gives each read: by session in order, by
//! turn, by `createdAt` then id, by run and sequence.

use super::common::{self, BenchResult, INSERT_EVENT, RUNTIME_EVENTS_SCHEMA};
use makalog::event::RuntimeEvent;
use rusqlite::{params, Connection};
use serde_json::Value;
use std::path::Path;

const SCHEMA: &str = "
CREATE TABLE session_metadata (
  session_id TEXT PRIMARY KEY, parent_session_id TEXT, payload_json TEXT NOT NULL,
  created_at INTEGER NOT NULL, last_used_at INTEGER NOT NULL, committed_at INTEGER NOT NULL);
CREATE INDEX session_metadata_by_created ON session_metadata(created_at, session_id);
CREATE INDEX session_metadata_by_parent ON session_metadata(parent_session_id, created_at);
CREATE TABLE session_create_claims (session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
CREATE TABLE subagent_spawns (
  parent_session_id TEXT NOT NULL, parent_run_id TEXT NOT NULL, tool_call_id TEXT NOT NULL,
  swarm_id TEXT NOT NULL, item_id TEXT NOT NULL, request_fingerprint TEXT NOT NULL,
  child_session_id TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL,
  PRIMARY KEY (parent_session_id, parent_run_id, tool_call_id, swarm_id, item_id)) WITHOUT ROWID;
CREATE TABLE session_messages (
  session_id TEXT NOT NULL, message_seq INTEGER NOT NULL, message_id TEXT NOT NULL,
  turn_id TEXT, payload_json TEXT NOT NULL, committed_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, message_seq)) WITHOUT ROWID;
CREATE INDEX session_messages_by_turn ON session_messages(session_id, turn_id, message_seq);
CREATE TABLE core_agent_runs (
  session_id TEXT NOT NULL, run_id TEXT NOT NULL, turn_id TEXT NOT NULL, status TEXT NOT NULL,
  payload_json TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, run_id)) WITHOUT ROWID;
CREATE INDEX core_agent_runs_by_created ON core_agent_runs(session_id, created_at, run_id);
CREATE TABLE core_agent_run_events (
  session_id TEXT NOT NULL, run_id TEXT NOT NULL, event_seq INTEGER NOT NULL,
  event_type TEXT NOT NULL, payload_json TEXT NOT NULL,
  PRIMARY KEY (session_id, run_id, event_seq)) WITHOUT ROWID;
CREATE INDEX runtime_events_by_run ON runtime_events(session_id, run_id, event_seq);
";

/// A fresh database with the tables.
pub fn db(path: &Path) -> BenchResult<Connection> {
    let conn = common::sqlite_connection(path)?;
    conn.execute_batch(RUNTIME_EVENTS_SCHEMA)?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

fn s<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key].as_str().unwrap_or_default()
}

/// A session's header row.
pub fn insert_session(conn: &Connection, header: &Value) -> BenchResult<()> {
    conn.prepare_cached(
        "INSERT INTO session_metadata (session_id, parent_session_id, payload_json, created_at, \
         last_used_at, committed_at) VALUES (?1, ?2, ?3, ?4, ?4, ?4)",
    )?
    .execute(params![
        s(header, "id"),
        header["subagentParent"]["parentSessionId"].as_str(),
        header.to_string(),
        header["createdAt"].as_u64().unwrap_or(0) as i64
    ])?;
    Ok(())
}

/// `createSubagent`: the id claim, the spawn claim and the child's header in one transaction.
pub fn create_subagent(conn: &mut Connection, header: &Value) -> BenchResult<()> {
    let tx = conn.transaction()?;
    let p = &header["subagentParent"];
    tx.prepare_cached("INSERT INTO session_create_claims VALUES (?1, 1)")?
        .execute([s(header, "id")])?;
    tx.prepare_cached("INSERT INTO subagent_spawns VALUES (?1, ?2, ?3, '', '', ?4, ?5, 1)")?
        .execute(params![
            s(p, "parentSessionId"),
            s(&p["spawnedBy"], "parentRunId"),
            s(&p["spawnedBy"], "toolCallId"),
            s(&header["subagentSpawn"], "requestFingerprint"),
            s(header, "id")
        ])?;
    insert_session(&tx, header)?;
    tx.commit()?;
    Ok(())
}

/// `appendMessage`: the next sequence number of the session and the row, in one transaction.
pub fn append_message(conn: &mut Connection, session: &str, message: &Value) -> BenchResult<()> {
    let tx = conn.transaction()?;
    let seq: i64 = tx
        .prepare_cached(
            "SELECT COALESCE(MAX(message_seq), 0) + 1 FROM session_messages WHERE session_id = ?1",
        )?
        .query_row([session], |r| r.get(0))?;
    tx.prepare_cached("INSERT INTO session_messages VALUES (?1, ?2, ?3, ?4, ?5, 1)")?
        .execute(params![
            session,
            seq,
            s(message, "id"),
            message["turnId"].as_str(),
            message.to_string()
        ])?;
    tx.commit()?;
    Ok(())
}

/// `createRun`, in a transaction of its own.
pub fn create_run(conn: &mut Connection, run: &Value) -> BenchResult<()> {
    let tx = conn.transaction()?;
    tx.prepare_cached("INSERT INTO core_agent_runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)")?
        .execute(params![
            s(run, "sessionId"),
            s(run, "runId"),
            s(run, "turnId"),
            s(run, "status"),
            run.to_string(),
            run["createdAt"].as_u64().unwrap_or(0) as i64
        ])?;
    tx.commit()?;
    Ok(())
}

/// The terminal commit in one transaction: the terminal runtime event, the run's status, and
/// the terminal run event.
pub fn commit_terminal(
    conn: &mut Connection,
    session: &str,
    run: &str,
    terminal: &RuntimeEvent,
) -> BenchResult<()> {
    let tx = conn.transaction()?;
    tx.prepare_cached(INSERT_EVENT)?.execute(params![
        terminal.id(),
        session,
        run,
        run,
        terminal.turn_id(),
        1,
        "runtime_event",
        terminal.canonical_json(),
        1
    ])?;
    let header: String = tx
        .prepare_cached(
            "SELECT payload_json FROM core_agent_runs WHERE session_id = ?1 AND run_id = ?2",
        )?
        .query_row([session, run], |r| r.get(0))?;
    let mut header: Value = serde_json::from_str(&header)?;
    header["status"] = "completed".into();
    header["completedAt"] = terminal.ts().into();
    tx.prepare_cached(
        "UPDATE core_agent_runs SET status = 'completed', payload_json = ?3 \
         WHERE session_id = ?1 AND run_id = ?2",
    )?
    .execute(params![session, run, header.to_string()])?;
    let seq: i64 = tx
        .prepare_cached(
            "SELECT COUNT(*) FROM core_agent_run_events WHERE session_id = ?1 AND run_id = ?2",
        )?
        .query_row([session, run], |r| r.get(0))?;
    let event = serde_json::json!({"type": "run_completed", "id": format!("{run}:run_completed"),
        "runId": run, "sessionId": session, "turnId": terminal.turn_id(), "ts": terminal.ts()});
    tx.prepare_cached(
        "INSERT INTO core_agent_run_events VALUES (?1, ?2, ?3, 'run_completed', ?4)",
    )?
    .execute(params![session, run, seq, event.to_string()])?;
    tx.commit()?;
    Ok(())
}

/// `listSessions`: every header, parsed, by `createdAt` then id.
pub fn list_sessions(conn: &Connection) -> BenchResult<Vec<Value>> {
    let mut stmt = conn.prepare_cached(
        "SELECT payload_json FROM session_metadata ORDER BY created_at, session_id",
    )?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(serde_json::from_str(&row?)?);
    }
    Ok(out)
}

/// `readMessages`: a session's messages, parsed, in append order.
pub fn read_messages(conn: &Connection, session: &str) -> BenchResult<Vec<Value>> {
    let mut stmt = conn.prepare_cached(
        "SELECT payload_json FROM session_messages WHERE session_id = ?1 ORDER BY message_seq",
    )?;
    let rows = stmt.query_map([session], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(serde_json::from_str(&row?)?);
    }
    Ok(out)
}
