//! A session's runtime events as planned records: the sealed rows in the session's order, each
//! keeping its sequence number in its invocation, and the live partial snapshots, each placed
//! after the event it followed. A row the canonical decoder or the store's rules would refuse
//! is reported, never altered, and so is every later event of its invocation, whose sequence
//! number could not be kept.

use super::order::{Rank, Timed};
use super::report::Report;
use super::sql::{int, key_part, opt_text, select, text};
use makalog::event::RuntimeEvent;
use makalog::import::Planned;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};

/// The store's identity rules (MAKA-MODEL §1.1), followed as the events are planned: a run
/// keeps its invocation and turn, an invocation its run and turn, and a sealed run takes no more
/// events.
#[derive(Default)]
struct Identity {
    runs: HashMap<String, (String, String, bool)>,
    invocations: HashMap<String, (String, String)>,
}

impl Identity {
    fn check(&self, e: &RuntimeEvent) -> Result<(), String> {
        if let Some((inv, turn, sealed)) = self.runs.get(e.run_id()) {
            if *sealed {
                return Err(format!(
                    "its run {} is already sealed by a terminal event",
                    e.run_id()
                ));
            }
            if inv != e.invocation_id() || turn != e.turn_id() {
                return Err(format!(
                    "its run {} belongs to invocation {inv} turn {turn}",
                    e.run_id()
                ));
            }
        }
        if let Some((run, turn)) = self.invocations.get(e.invocation_id()) {
            if run != e.run_id() || turn != e.turn_id() {
                return Err(format!("its invocation belongs to run {run} turn {turn}"));
            }
        }
        Ok(())
    }

    fn apply(&mut self, e: &RuntimeEvent) {
        let run = self
            .runs
            .entry(e.run_id().to_owned())
            .or_insert_with(|| (e.invocation_id().to_owned(), e.turn_id().to_owned(), false));
        run.2 |= !e.partial() && e.is_terminal();
        self.invocations
            .entry(e.invocation_id().to_owned())
            .or_insert_with(|| (e.run_id().to_owned(), e.turn_id().to_owned()));
    }
}

/// A sealed row decoded and checked against its columns.
fn decode_row(r: &[rusqlite::types::Value], sid: &str) -> Result<(RuntimeEvent, i64), String> {
    let event = RuntimeEvent::decode(text(&r[5])?)
        .map_err(|e| format!("the canonical decoder refuses it: {e}"))?;
    let columns = [
        (event.session_id(), sid),
        (event.invocation_id(), text(&r[1])?),
        (event.run_id(), text(&r[2])?),
        (event.turn_id(), text(&r[3])?),
        (event.id(), text(&r[0])?),
    ];
    if columns.iter().any(|(a, b)| a != b) {
        return Err("its payload's ids are not its columns'".into());
    }
    if event.partial() {
        return Err("a sealed row holds a partial event".into());
    }
    Ok((event, int(&r[4])?))
}

/// The session's runtime events in the order they are written.
pub fn runtime_events(
    conn: &Connection,
    sid: &str,
    report: &mut Report,
) -> rusqlite::Result<Vec<Timed>> {
    let mut partials = partial_snapshots(conn, sid, report)?;
    let mut identity = Identity::default();
    let mut next: HashMap<String, i64> = HashMap::new();
    let mut broken: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let rows = select(
        conn,
        "SELECT e.event_id, e.invocation_id, e.run_id, e.turn_id, e.event_seq, e.payload_json, e.committed_at, o.ordinal FROM runtime_events e LEFT JOIN runtime_session_event_ordinals o ON o.event_id = e.event_id AND o.session_id = e.session_id WHERE e.session_id = ?1 ORDER BY o.ordinal IS NULL, o.ordinal, e.committed_at, e.event_id",
        [sid],
    )?;
    for r in &rows {
        let id = key_part(&r[0]);
        let invocation = key_part(&r[1]);
        let checked = decode_row(r, sid).and_then(|(event, seq)| {
            if broken.contains(&invocation) {
                return Err("follows an event of its invocation that was not imported: its sequence number cannot be kept".into());
            }
            let expected = next.get(&invocation).copied().unwrap_or(0) + 1;
            if seq != expected {
                return Err(format!("sequence {seq} where its invocation's next is {expected}"));
            }
            identity.check(&event)?;
            Ok((event, seq))
        });
        let ordinal = (!matches!(r[7], rusqlite::types::Value::Null)).then(|| key_part(&r[7]));
        match checked {
            Ok((event, seq)) => {
                report.imported("runtime_events", 1);
                if ordinal.is_some() {
                    report.imported("runtime_session_event_ordinals", 1);
                }
                next.insert(invocation, seq);
                // A snapshot that followed the run's terminal goes before it, where the store
                // takes it.
                if !event.partial() && event.is_terminal() {
                    place(
                        &mut out,
                        &mut identity,
                        partials.remove_of_run(event.run_id()),
                        report,
                    );
                }
                identity.apply(&event);
                let ts = event.ts();
                out.push(Timed::new(
                    ts,
                    Rank::RuntimeEvent,
                    Planned::Event {
                        event,
                        seq: Some(seq as u64),
                    },
                ));
                place(&mut out, &mut identity, partials.remove_after(&id), report);
            }
            Err(why) => {
                broken.insert(invocation);
                if let Some(o) = ordinal {
                    report.refused(
                        "runtime_session_event_ordinals",
                        format!("{sid}/{o}"),
                        "its event was not imported".into(),
                    );
                }
                report.refused("runtime_events", id, why);
            }
        }
    }
    let rest = partials.remove_all();
    place(&mut out, &mut identity, rest, report);
    for r in select(
        conn,
        "SELECT o.ordinal FROM runtime_session_event_ordinals o WHERE o.session_id = ?1 AND NOT EXISTS (SELECT 1 FROM runtime_events e WHERE e.event_id = o.event_id AND e.session_id = o.session_id)",
        [sid],
    )? {
        report.refused("runtime_session_event_ordinals", format!("{sid}/{}", key_part(&r[0])), "names no runtime event of its session".into());
    }
    Ok(out)
}

/// Appends partial snapshots where they stand, each checked against the store's rules.
fn place(
    out: &mut Vec<Timed>,
    identity: &mut Identity,
    snapshots: Vec<Snapshot>,
    report: &mut Report,
) {
    for s in snapshots {
        match identity.check(&s.event) {
            Ok(()) => {
                identity.apply(&s.event);
                report.imported("runtime_partial_snapshots", 1);
                report.imported("runtime_partial_segments", s.segments.len() as u64);
                let ts = s.event.ts();
                out.push(Timed::new(
                    ts,
                    Rank::RuntimeEvent,
                    Planned::Event {
                        event: s.event,
                        seq: None,
                    },
                ));
            }
            Err(why) => s.refuse(report, why),
        }
    }
}

/// A live partial snapshot, its text joined from its segments.
struct Snapshot {
    key: String,
    after: Option<String>,
    event: RuntimeEvent,
    segments: Vec<String>,
}

impl Snapshot {
    fn refuse(&self, report: &mut Report, why: String) {
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
struct Snapshots(Vec<Snapshot>);

impl Snapshots {
    fn take(&mut self, keep: impl Fn(&Snapshot) -> bool) -> Vec<Snapshot> {
        let (taken, rest) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|s| !keep(s));
        self.0 = rest;
        taken
    }

    fn remove_after(&mut self, event_id: &str) -> Vec<Snapshot> {
        self.take(|s| s.after.as_deref() != Some(event_id))
    }

    fn remove_of_run(&mut self, run_id: &str) -> Vec<Snapshot> {
        self.take(|s| s.event.run_id() != run_id)
    }

    fn remove_all(&mut self) -> Vec<Snapshot> {
        std::mem::take(&mut self.0)
    }
}

/// Reads the session's live partial snapshots: each row's event, whose text is the row's
/// `text_content` followed by its segments in order (the original streams a partial's text
/// into segments and keeps the event's own text empty).
fn partial_snapshots(
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
            Ok((event, opt_text(&r[1])?.map(str::to_owned)))
        })();
        match decoded {
            Ok((event, after)) => out.push(Snapshot { key, after, event, segments: seg_keys }),
            Err(why) => refuse_snapshot(report, &key, &seg_keys, why),
        }
    }
    Ok(Snapshots(out))
}
