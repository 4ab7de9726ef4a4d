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
    /// The session the row belongs to, as an SQL expression, qualified: within the subquery
    /// over `session_metadata` a bare `session_id` would name its own column. Empty where
    /// the filters find the session otherwise.
    session: &'static str,
    /// What takes one session's rows (`?1`), `{s}` standing for `session`.
    of_session: &'static str,
    /// What takes the rows of sessions without a header.
    headless: &'static str,
}

const OWNED: [Owned; 11] = [
    Owned { table: "core_root_turn_admissions", key: "session_id || '/' || turn_id", from: "core_root_turn_admissions", session: "core_root_turn_admissions.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "core_root_turn_start_rejections", key: "session_id || '/' || turn_id", from: "core_root_turn_start_rejections", session: "core_root_turn_start_rejections.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "core_agent_runs", key: "session_id || '/' || run_id", from: "core_agent_runs", session: "core_agent_runs.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "core_agent_run_events", key: "session_id || '/' || run_id || '/' || sequence", from: "core_agent_run_events", session: "core_agent_run_events.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "runtime_events", key: "event_id", from: "runtime_events", session: "runtime_events.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "runtime_session_event_ordinals", key: "session_id || '/' || ordinal", from: "runtime_session_event_ordinals", session: "runtime_session_event_ordinals.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "runtime_partial_snapshots", key: "stream_key", from: "runtime_partial_snapshots", session: "runtime_partial_snapshots.session_id", of_session: OF_SESSION, headless: HEADLESS },
    // A segment's session is its snapshot's: found through the snapshots, by their keys, each
    // segment once however many snapshot rows a source without its keys repeats.
    Owned { table: "runtime_partial_segments", key: "s.stream_key || '/' || s.segment_seq", from: "runtime_partial_segments s", session: "", of_session: "s.stream_key IN (SELECT stream_key FROM runtime_partial_snapshots WHERE session_id = ?1)", headless: "NOT EXISTS (SELECT 1 FROM runtime_partial_snapshots p JOIN session_metadata m ON m.session_id = p.session_id WHERE p.stream_key = s.stream_key)" },
    Owned { table: "session_messages", key: "session_id || '/' || sequence", from: "session_messages", session: "session_messages.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "session_message_payloads", key: "session_id || '/' || sequence", from: "session_message_payloads", session: "session_message_payloads.session_id", of_session: OF_SESSION, headless: HEADLESS },
    Owned { table: "session_message_chunks", key: "session_id || '/' || sequence || '/' || chunk_index", from: "session_message_chunks", session: "session_message_chunks.session_id", of_session: OF_SESSION, headless: HEADLESS },
];

impl Owned {
    /// The keys of the table's rows that `filter` takes, `{s}` in it standing for the session.
    fn select(&self, filter: &str) -> String {
        debug_assert!(
            !(filter.contains("{s}") && self.session.is_empty()),
            "a filter naming the session of a table that names it otherwise"
        );
        format!(
            "SELECT {} FROM {} WHERE {}",
            self.key,
            self.from,
            filter.replace("{s}", self.session)
        )
    }
}

/// What takes the rows of one session (`?1`) for most tables.
const OF_SESSION: &str = "{s} = ?1";
/// What takes the rows of a session the source has no header for.
const HEADLESS: &str =
    "{s} IS NULL OR NOT EXISTS (SELECT 1 FROM session_metadata m WHERE m.session_id = {s})";

/// The queries that refuse a session's rows, run once per refused session, and those that
/// refuse the rows of sessions without a header, run once.
pub(super) fn queries() -> (Vec<String>, Vec<String>) {
    let of_session = OWNED.iter().map(|o| o.select(o.of_session)).collect();
    let headless = OWNED.iter().map(|o| o.select(o.headless)).collect();
    (of_session, headless)
}

/// Refuses the rows of session `sid`, or with `None` those of sessions without a header.
fn refuse_where(
    conn: &Connection,
    sid: Option<&str>,
    why: &str,
    report: &mut Report,
) -> rusqlite::Result<()> {
    for o in &OWNED {
        let rows = match sid {
            Some(sid) => select(conn, &o.select(o.of_session), [sid])?,
            None => select(conn, &o.select(o.headless), [])?,
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
        Some(sid),
        "its session's header was not imported",
        report,
    )
}

/// Refuses every row of a session the source holds no header for.
pub fn refuse_headless(conn: &Connection, report: &mut Report) -> rusqlite::Result<()> {
    refuse_where(conn, None, "its session is not in session_metadata", report)
}
