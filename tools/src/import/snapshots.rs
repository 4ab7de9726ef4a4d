//! A session's live partial snapshots (`runtime_partial_snapshots`), each a partial runtime
//! event whose text is joined from its segments (`runtime_partial_segments`).

use super::order::fits;
use super::report::Report;
use super::sql::{key_part, opt_text, select, text};
use makalog::event::RuntimeEvent;
use rusqlite::Connection;

/// A live partial snapshot, its text joined from its segments.
pub struct Snapshot {
    pub key: String,
    after: Option<String>,
    pub event: RuntimeEvent,
    pub segments: Vec<String>,
}

impl Snapshot {
    pub fn refuse(&self, report: &mut Report, why: String) {
        refuse_snapshot(report, &self.key, &self.segments, why);
    }
}

fn refuse_snapshot(report: &mut Report, key: &str, segments: &[String], why: String) {
    for s in segments {
        report.refused(
            "runtime_partial_segments",
            format!("{key}/{s}"),
            "its snapshot was not imported".into(),
        );
    }
    report.refused("runtime_partial_snapshots", key.to_owned(), why);
}

/// The session's snapshots not yet placed.
pub struct Snapshots(Vec<Snapshot>);

impl Snapshots {
    /// Takes out the snapshots `which` picks.
    fn take_where(&mut self, which: impl Fn(&Snapshot) -> bool) -> Vec<Snapshot> {
        let (taken, rest) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|s| which(s));
        self.0 = rest;
        taken
    }

    /// The snapshots that followed event `event_id`.
    pub fn after(&mut self, event_id: &str) -> Vec<Snapshot> {
        self.take_where(|s| s.after.as_deref() == Some(event_id))
    }

    /// The snapshots of run `run_id` not yet placed.
    pub fn of_run(&mut self, run_id: &str) -> Vec<Snapshot> {
        self.take_where(|s| s.event.run_id() == run_id)
    }

    /// Every snapshot not yet placed.
    pub fn rest(&mut self) -> Vec<Snapshot> {
        std::mem::take(&mut self.0)
    }
}

/// Reads the session's live partial snapshots: each row's event, whose text is the row's
/// `text_content` followed by its segments in order (the original streams a partial's text
/// into segments and keeps the event's own text empty).
pub fn partial_snapshots(
    conn: &Connection,
    sid: &str,
    report: &mut Report,
) -> rusqlite::Result<Snapshots> {
    let mut out = Vec::new();
    for r in select(
        conn,
        "SELECT stream_key, after_event_id, payload_json, text_content FROM runtime_partial_snapshots WHERE session_id = ?1 ORDER BY updated_at, stream_key",
        [sid],
    )? {
        let key = key_part(&r[0]);
        let segments = select(
            conn,
            "SELECT segment_seq, text_content FROM runtime_partial_segments WHERE stream_key = ?1 ORDER BY segment_seq",
            [&key],
        )?;
        let seg_keys: Vec<String> = segments.iter().map(|s| key_part(&s[0])).collect();
        let decoded = (|| {
            let mut value: serde_json::Value =
                serde_json::from_str(text(&r[2])?).map_err(|e| format!("is not JSON: {e}"))?;
            let mut joined = text(&r[3])?.to_owned();
            for s in &segments {
                joined.push_str(text(&s[1])?);
            }
            if let Some(content) = value.get_mut("content").and_then(|c| c.as_object_mut()) {
                let textual = matches!(content.get("kind").and_then(|k| k.as_str()), Some("text" | "thinking"));
                match content.get("text").and_then(|t| t.as_str()) {
                    Some("") if textual => {
                        content.insert("text".into(), serde_json::Value::String(joined));
                    }
                    Some(own) if textual && !joined.is_empty() && own != joined => {
                        return Err("its event's text and its segments disagree".to_owned());
                    }
                    _ => {}
                }
            }
            let event = RuntimeEvent::from_value(value).map_err(|e| format!("the canonical decoder refuses it: {e}"))?;
            if !event.partial() || event.session_id() != sid {
                return Err("is not a partial event of its session".to_owned());
            }
            fits(event.canonical_json())?;
            Ok((event, opt_text(&r[1])?.map(str::to_owned)))
        })();
        match decoded {
            Ok((event, after)) => out.push(Snapshot { key, after, event, segments: seg_keys }),
            Err(why) => refuse_snapshot(report, &key, &seg_keys, why),
        }
    }
    Ok(Snapshots(out))
}
