//! Where each session-owned table names its session, and each row's key as the report names it:
//! what refuses every row of a session whose header was not imported, and every row of a
//! session the source has no header for.

use super::report::Report;
use super::sql::{key_part, select};
use rusqlite::Connection;

/// A table whose rows belong to a session.
struct Owned {
    table: &'static str,
    /// The row's key, as an SQL expression.
    key: &'static str,
    from: &'static str,
    /// The session the row belongs to, as an SQL expression.
    session: &'static str,
}

const OWNED: [Owned; 11] = [
    Owned { table: "core_root_turn_admissions", key: "session_id || '/' || turn_id", from: "core_root_turn_admissions", session: "session_id" },
    Owned { table: "core_root_turn_start_rejections", key: "session_id || '/' || turn_id", from: "core_root_turn_start_rejections", session: "session_id" },
    Owned { table: "core_agent_runs", key: "session_id || '/' || run_id", from: "core_agent_runs", session: "session_id" },
    Owned { table: "core_agent_run_events", key: "session_id || '/' || run_id || '/' || sequence", from: "core_agent_run_events", session: "session_id" },
    Owned { table: "runtime_events", key: "event_id", from: "runtime_events", session: "session_id" },
    Owned { table: "runtime_session_event_ordinals", key: "session_id || '/' || ordinal", from: "runtime_session_event_ordinals", session: "session_id" },
    Owned { table: "runtime_partial_snapshots", key: "stream_key", from: "runtime_partial_snapshots", session: "session_id" },
    Owned { table: "runtime_partial_segments", key: "s.stream_key || '/' || s.segment_seq", from: "runtime_partial_segments s LEFT JOIN runtime_partial_snapshots p ON p.stream_key = s.stream_key", session: "COALESCE(p.session_id, '')" },
    Owned { table: "session_messages", key: "session_id || '/' || sequence", from: "session_messages", session: "session_id" },
    Owned { table: "session_message_payloads", key: "session_id || '/' || sequence", from: "session_message_payloads", session: "session_id" },
    Owned { table: "session_message_chunks", key: "session_id || '/' || sequence || '/' || chunk_index", from: "session_message_chunks", session: "session_id" },
];

fn refuse_where(
    conn: &Connection,
    filter: &str,
    param: Option<&str>,
    why: &str,
    report: &mut Report,
) -> rusqlite::Result<()> {
    for o in &OWNED {
        let sql = format!(
            "SELECT {} FROM {} WHERE {}",
            o.key,
            o.from,
            filter.replace("{s}", o.session)
        );
        let rows = match param {
            Some(p) => select(conn, &sql, [p])?,
            None => select(conn, &sql, [])?,
        };
        for r in rows {
            report.refused(o.table, key_part(&r[0]), why.to_owned());
        }
    }
    Ok(())
}

/// Refuses every row of session `sid`, whose header was not imported.
pub fn refuse_session(conn: &Connection, sid: &str, report: &mut Report) -> rusqlite::Result<()> {
    refuse_where(
        conn,
        "{s} = ?1",
        Some(sid),
        "its session's header was not imported",
        report,
    )
}

/// Refuses every row of a session the source holds no header for.
pub fn refuse_headless(conn: &Connection, report: &mut Report) -> rusqlite::Result<()> {
    refuse_where(
        conn,
        "{s} IS NULL OR NOT EXISTS (SELECT 1 FROM session_metadata m WHERE m.session_id = {s})",
        None,
        "its session is not in session_metadata",
        report,
    )
}
