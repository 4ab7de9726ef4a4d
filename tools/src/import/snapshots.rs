//! A session's live partial snapshots (`runtime_partial_snapshots`), each a partial runtime
//! event whose text is joined from its segments (`runtime_partial_segments`).

use super::order::fits;
use super::report::Report;
use super::sql::{key_part, opt_text, select, text};
use makalog::event::RuntimeEvent;
use rusqlite::Connection;
use std::collections::HashMap;

/// A session's live partial snapshots.
pub(super) const SNAPSHOTS: &str =
    "SELECT stream_key, after_event_id, payload_json, text_content FROM runtime_partial_snapshots WHERE session_id = ?1 ORDER BY updated_at, stream_key";

/// A partial snapshot's text segments, in order.
pub(super) const SEGMENTS: &str =
    "SELECT segment_seq, text_content FROM runtime_partial_segments WHERE stream_key = ?1 ORDER BY segment_seq";

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

/// The session's snapshots not yet placed, in the order read, found by the event they followed
/// and by their run: each lookup takes what it names, never walks the others (a session's events
/// times its snapshots, otherwise).
pub struct Snapshots {
    slots: Vec<Option<Snapshot>>,
    by_after: HashMap<String, Vec<usize>>,
    by_run: HashMap<String, Vec<usize>>,
}

impl Snapshots {
    fn new(read: Vec<Snapshot>) -> Self {
        let (mut by_after, mut by_run) = (HashMap::new(), HashMap::<_, Vec<_>>::new());
        for (i, s) in read.iter().enumerate() {
            if let Some(after) = &s.after {
                by_after
                    .entry(after.clone())
                    .or_insert_with(Vec::new)
                    .push(i);
            }
            by_run
                .entry(s.event.run_id().to_owned())
                .or_default()
                .push(i);
        }
        Snapshots {
            slots: read.into_iter().map(Some).collect(),
            by_after,
            by_run,
        }
    }

    /// Takes out the snapshots at `slots` (ascending: the order read) not yet taken.
    fn take(&mut self, slots: Option<Vec<usize>>) -> Vec<Snapshot> {
        let slots = slots.unwrap_or_default();
        slots
            .into_iter()
            .filter_map(|i| self.slots[i].take())
            .collect()
    }

    /// The snapshots that followed event `event_id`.
    pub fn after(&mut self, event_id: &str) -> Vec<Snapshot> {
        let slots = self.by_after.remove(event_id);
        self.take(slots)
    }

    /// The snapshots of run `run_id` not yet placed.
    pub fn of_run(&mut self, run_id: &str) -> Vec<Snapshot> {
        let slots = self.by_run.remove(run_id);
        self.take(slots)
    }

    /// Every snapshot not yet placed.
    pub fn rest(&mut self) -> Vec<Snapshot> {
        self.slots.iter_mut().filter_map(Option::take).collect()
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
    for r in select(conn, SNAPSHOTS, [sid])? {
        let key = key_part(&r[0]);
        let segments = select(conn, SEGMENTS, [&key])?;
        let seg_keys: Vec<String> = segments.iter().map(|s| key_part(&s[0])).collect();
        let decoded = (|| {
            let mut value: serde_json::Value =
                serde_json::from_str(text(&r[2])?).map_err(|e| format!("is not JSON: {e}"))?;
            let mut joined = text(&r[3])?.to_owned();
            for s in &segments {
                joined.push_str(text(&s[1])?);
            }
            if let Some(content) = value.get_mut("content").and_then(|c| c.as_object_mut()) {
                let textual = matches!(
                    content.get("kind").and_then(|k| k.as_str()),
                    Some("text" | "thinking")
                );
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
            let event = RuntimeEvent::from_value(value)
                .map_err(|e| format!("the canonical decoder refuses it: {e}"))?;
            if !event.partial() || event.session_id() != sid {
                return Err("is not a partial event of its session".to_owned());
            }
            fits(event.canonical_json())?;
            Ok((event, opt_text(&r[1])?.map(str::to_owned)))
        })();
        match decoded {
            Ok((event, after)) => out.push(Snapshot {
                key,
                after,
                event,
                segments: seg_keys,
            }),
            Err(why) => refuse_snapshot(report, &key, &seg_keys, why),
        }
    }
    Ok(Snapshots::new(out))
}
