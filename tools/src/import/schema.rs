//! Which schema a runtime database is: the migrations it records must be the ones this
//! importer reads, and every column it reads must be there. Another schema is refused before
//! anything is written, since its tables may mean otherwise.

use super::source::SourceError;
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// The migration scopes and versions of the runtime database this importer reads (the
/// original at f19eede03): another schema is refused, since its tables may mean otherwise.
pub const KNOWN_MIGRATIONS: [(&str, i64); 7] = [
    ("artifact", 1),
    ("core_execution", 4),
    ("operational", 2),
    ("runtime", 12),
    ("session_metadata", 28),
    ("usage", 5),
    ("workflow", 9),
];

/// The columns the importer reads, by table: a database missing one is of another schema.
const READ_COLUMNS: [(&str, &[&str]); 16] = [
    (
        "session_metadata",
        &["session_id", "payload_json", "created_at"],
    ),
    ("session_create_claims", &["session_id", "claimed_at"]),
    ("session_metadata_tombstones", &["session_id", "deleted_at"]),
    (
        "subagent_spawns",
        &[
            "parent_session_id",
            "parent_run_id",
            "tool_call_id",
            "swarm_id",
            "item_id",
            "request_fingerprint",
            "child_session_id",
            "initial_turn_id",
            "initial_run_id",
            "claimed_at",
        ],
    ),
    (
        "core_agent_runs",
        &["session_id", "run_id", "created_at", "record_json"],
    ),
    (
        "core_agent_run_events",
        &[
            "session_id",
            "run_id",
            "sequence",
            "event_ts",
            "record_json",
        ],
    ),
    (
        "core_root_turn_admissions",
        &["session_id", "turn_id", "admitted_at", "record_json"],
    ),
    (
        "core_root_turn_start_rejections",
        &["session_id", "turn_id", "rejected_at", "record_json"],
    ),
    (
        "runtime_events",
        &[
            "event_id",
            "session_id",
            "invocation_id",
            "run_id",
            "turn_id",
            "event_seq",
            "payload_json",
            "committed_at",
        ],
    ),
    (
        "runtime_session_event_ordinals",
        &["session_id", "ordinal", "event_id"],
    ),
    (
        "runtime_partial_snapshots",
        &[
            "stream_key",
            "session_id",
            "after_event_id",
            "payload_json",
            "text_content",
            "updated_at",
        ],
    ),
    (
        "runtime_partial_segments",
        &["stream_key", "segment_seq", "text_content"],
    ),
    (
        "session_messages",
        &["session_id", "sequence", "message_ts", "record_json"],
    ),
    (
        "session_message_payloads",
        &["session_id", "sequence", "record_bytes", "sha256"],
    ),
    (
        "session_message_chunks",
        &["session_id", "sequence", "chunk_index", "data", "sha256"],
    ),
    (
        "agent_graph_intent_claims",
        &[
            "claim_id",
            "schema_version",
            "graph_id",
            "intent_id",
            "intent_fingerprint",
            "readiness_context_fingerprint",
            "target_operator_id",
            "target_session_id",
            "target_turn_id",
            "target_run_id",
            "claimed_at",
            "admission_status",
            "cancellation_reason",
        ],
    ),
];

/// Refuses a runtime database where a table the importer reads is not a table (a view may
/// compute rows without end) or lacks a column it reads.
pub fn check_columns(conn: &Connection, path: &Path) -> Result<(), SourceError> {
    for (table, columns) in READ_COLUMNS {
        let kind: Option<String> = conn
            .query_row(
                "SELECT type FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| SourceError::Sqlite {
                file: path.to_owned(),
                what: e.to_string(),
            })?;
        if kind.as_deref() != Some("table") {
            return Err(SourceError::Schema {
                file: path.to_owned(),
                what: format!(
                    "{table} is not a table (it is {})",
                    kind.as_deref().unwrap_or("missing")
                ),
            });
        }
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| SourceError::Sqlite {
                file: path.to_owned(),
                what: e.to_string(),
            })?;
        let have: Vec<String> = stmt
            .query_map([table], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| SourceError::Sqlite {
                file: path.to_owned(),
                what: e.to_string(),
            })?;
        if let Some(missing) = columns.iter().find(|c| !have.iter().any(|h| h == *c)) {
            return Err(SourceError::Schema {
                file: path.to_owned(),
                what: format!("table {table} has no column {missing}"),
            });
        }
    }
    Ok(())
}

/// Refuses a runtime database whose recorded migrations are not [`KNOWN_MIGRATIONS`].
pub fn check_migrations(conn: &Connection, path: &Path) -> Result<(), SourceError> {
    let schema = |what: String| SourceError::Schema {
        file: path.to_owned(),
        what,
    };
    let has_table: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'operational_schema_migrations'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .map_err(|e| schema(e.to_string()))?;
    if !has_table {
        return Err(schema(
            "no operational_schema_migrations table: not a runtime database of the original".into(),
        ));
    }
    let mut stmt = conn
        .prepare("SELECT scope, version FROM operational_schema_migrations ORDER BY scope")
        .map_err(|e| schema(e.to_string()))?;
    let found: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| schema(e.to_string()))?;
    let known: Vec<(String, i64)> = KNOWN_MIGRATIONS
        .iter()
        .map(|(s, v)| (s.to_string(), *v))
        .collect();
    if found != known {
        let show = |m: &[(String, i64)]| {
            m.iter()
                .map(|(s, v)| format!("{s} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(schema(format!(
            "its migrations are [{}], this importer reads [{}]",
            show(&found),
            show(&known)
        )));
    }
    Ok(())
}
