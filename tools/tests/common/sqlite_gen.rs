//! A runtime database in the original's schema (its own `schema.sql`), filled with generated
//! sessions: each run an admission, a run header, three run events, runtime events (the user's
//! message, model text, a terminal) with their session ordinals, and two stored messages.
//! What the import tests and benchmark read.

use rusqlite::{params, Connection};
use std::path::Path;

/// The compat fixture the original wrote: its databases, schema, counts and summary.
pub fn fixture_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/compat/maka-sqlite")
}

/// The shape of a generated database.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub sessions: usize,
    pub runs_per_session: usize,
    /// Runtime events of each run, at least 3 (user, text…, terminal).
    pub events_per_run: usize,
}

impl Shape {
    pub fn runtime_events(&self) -> usize {
        self.sessions * self.runs_per_session * self.events_per_run
    }
}

/// Creates `dir/runtime.sqlite` in the original's schema with `shape`'s rows.
pub fn generate(dir: &Path, shape: Shape) {
    assert!(shape.events_per_run >= 3);
    let schema = std::fs::read_to_string(fixture_dir().join("schema.sql")).expect("schema.sql");
    let runtime = schema
        .split("-- ===== runtime.sqlite")
        .nth(1)
        .expect("the runtime part of schema.sql");
    // The first line is the rest of the heading; SQLite creates sqlite_sequence itself.
    let ddl: String = runtime
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("CREATE TABLE sqlite_sequence"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut conn = Connection::open(dir.join("runtime.sqlite")).expect("create database");
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA user_version = 12;")
        .expect("pragmas");
    conn.execute_batch(&ddl).expect("the original's schema");
    // The migrations the original recorded in the fixture, as they are.
    let fixture = format!(
        "file:{}?immutable=1",
        fixture_dir().join("runtime.sqlite").display()
    );
    conn.execute("ATTACH DATABASE ?1 AS fixture", [fixture])
        .expect("attach the fixture");
    conn.execute_batch(
        "INSERT INTO operational_schema_migrations SELECT * FROM fixture.operational_schema_migrations; DETACH DATABASE fixture;",
    )
    .expect("migrations");
    let tx = conn.transaction().expect("transaction");
    for s in 0..shape.sessions {
        session(&tx, s, shape);
    }
    tx.commit().expect("commit");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

fn session(tx: &rusqlite::Transaction<'_>, s: usize, shape: Shape) {
    let sid = format!("gen-session-{s:05}");
    let t0 = 1_796_111_984_000i64 + (s as i64) * 1_000_000;
    let header = serde_json::json!({
        "id": sid, "workspaceRoot": "/srv/agent-host/gen", "cwd": "/srv/agent-host/gen",
        "createdAt": t0, "lastUsedAt": t0, "name": format!("Generated session {s}"),
        "titleIsManual": false, "isFlagged": false, "labels": [], "isArchived": false,
        "status": "active", "hasUnread": false, "backend": "ai-sdk", "llmConnectionSlug": "fake",
        "connectionLocked": true, "model": "fake-model", "permissionMode": "ask",
        "collaborationMode": "agent", "orchestrationMode": "default", "schemaVersion": 1,
        "transcriptLedgerVersion": 1
    });
    tx.execute(
        "INSERT INTO session_metadata (session_id, payload_json, created_at, last_used_at, name, is_flagged, is_archived, has_unread, backend, llm_connection_slug, model, metadata_version, committed_at) VALUES (?1, ?2, ?3, ?3, ?4, 0, 0, 0, 'ai-sdk', 'fake', 'fake-model', 1, ?3)",
        params![sid, header.to_string(), t0, format!("Generated session {s}")],
    )
    .expect("session");
    let mut ordinal = 0i64;
    for r in 0..shape.runs_per_session {
        let run_id = format!("gen-run-{s:05}-{r:04}");
        let turn_id = format!("gen-turn-{s:05}-{r:04}");
        let t = t0 + (r as i64) * 1000;
        let admission = serde_json::json!({
            "schemaVersion": 1, "sessionId": sid, "turnId": turn_id, "runId": run_id,
            "userMessageId": format!("{run_id}-e1"), "execution": {"kind": "external_message"},
            "previousRootTurnId": null, "normalizedInput": {"text": "Generated question."},
            "sourceMessages": [], "admittedAt": t
        });
        tx.execute(
            "INSERT INTO core_root_turn_admissions VALUES (?1, ?2, ?3, ?4)",
            params![sid, turn_id, t, admission.to_string()],
        )
        .expect("admission");
        let run = serde_json::json!({
            "runId": run_id, "invocationId": run_id, "sessionId": sid, "turnId": turn_id,
            "status": "completed", "backendKind": "ai-sdk", "llmConnectionSlug": "fake",
            "modelId": "fake-model", "cwd": "/srv/agent-host/gen", "permissionMode": "ask",
            "createdAt": t, "updatedAt": t + 900, "completedAt": t + 900
        });
        tx.execute(
            "INSERT INTO core_agent_runs (session_id, run_id, created_at, record_json) VALUES (?1, ?2, ?3, ?4)",
            params![sid, run_id, t, run.to_string()],
        )
        .expect("run");
        for (i, kind) in ["run_created", "run_started", "run_completed"]
            .iter()
            .enumerate()
        {
            let id = format!("{run_id}-re{i}");
            let ts = t + i as i64 * 450;
            let event = serde_json::json!({
                "type": kind, "id": id, "runId": run_id, "sessionId": sid, "turnId": turn_id, "ts": ts
            });
            tx.execute(
                "INSERT INTO core_agent_run_events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![sid, run_id, i as i64, id, kind, ts, event.to_string()],
            )
            .expect("run event");
        }
        for e in 1..=shape.events_per_run {
            let id = format!("{run_id}-e{e}");
            let ts = t + e as i64 * 5;
            let mut payload = serde_json::json!({
                "id": id, "invocationId": run_id, "runId": run_id, "sessionId": sid,
                "turnId": turn_id, "ts": ts, "partial": false,
            });
            let kind = if e == 1 {
                payload["role"] = "user".into();
                payload["author"] = "user".into();
                payload["content"] = serde_json::json!({"kind": "text", "text": "Generated question for the importer's benchmark."});
                "text"
            } else if e == shape.events_per_run {
                payload["role"] = "system".into();
                payload["author"] = "system".into();
                payload["status"] = "completed".into();
                payload["actions"] = serde_json::json!({"endInvocation": true, "stateDelta": {"stopReason": "end_turn"}});
                "completed"
            } else {
                payload["role"] = "model".into();
                payload["author"] = "agent".into();
                payload["content"] = serde_json::json!({"kind": "text", "text": format!("Generated answer part {e}: the session stream, the storage and the renderer loop are connected.")});
                payload["refs"] = serde_json::json!({"providerEventId": format!("{id}-provider")});
                "text"
            };
            tx.execute(
                "INSERT INTO runtime_events VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    id,
                    sid,
                    run_id,
                    turn_id,
                    e as i64,
                    kind,
                    payload.to_string(),
                    ts
                ],
            )
            .expect("runtime event");
            ordinal += 1;
            tx.execute(
                "INSERT INTO runtime_session_event_ordinals VALUES (?1, ?2, ?3)",
                params![sid, ordinal, id],
            )
            .expect("ordinal");
        }
        for (i, m) in [
            serde_json::json!({"type": "user", "id": format!("{run_id}-e1"), "turnId": turn_id, "ts": t + 5, "text": "Generated question."}),
            serde_json::json!({"type": "turn_state", "id": format!("{run_id}-ts"), "turnId": turn_id, "ts": t + 900, "status": "completed", "partialOutputRetained": false}),
        ]
        .iter()
        .enumerate()
        {
            let seq = (r * 2 + i) as i64;
            tx.execute(
                "INSERT INTO session_messages VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![sid, seq, m["id"].as_str(), m["type"].as_str(), m["ts"].as_i64(), m.to_string()],
            )
            .expect("message");
        }
    }
}
