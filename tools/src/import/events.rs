//! A session's runtime events as planned records: the sealed rows in the session's order, each
//! keeping its sequence number in its invocation, and the live partial snapshots, each placed
//! after the event it followed. A row the canonical decoder, the store's identity and sealing
//! rules, its one event per id or its record size would refuse is reported, never altered, and
//! so is every later event of its invocation, whose sequence number could not be kept.

use super::order::{fits, Rank, Timed};
use super::report::Report;
use super::snapshots::{self, Snapshot};
use super::sql::{int, key_part, select, text};
use makalog::event::RuntimeEvent;
use makalog::import::Planned;
use makalog::index::{EventFacts, SessionIndex, StoredAt};
use makalog::store::check_identity;
use rusqlite::Connection;
use std::collections::HashSet;

/// A session's runtime events with their ordinals, in the session's order.
pub(super) const EVENTS: &str =
    "SELECT e.event_id, e.invocation_id, e.run_id, e.turn_id, e.event_seq, e.payload_json, e.committed_at, o.ordinal FROM runtime_events e LEFT JOIN runtime_session_event_ordinals o ON o.event_id = e.event_id AND o.session_id = e.session_id WHERE e.session_id = ?1 ORDER BY o.ordinal IS NULL, o.ordinal, e.committed_at, e.event_id";

/// A session's ordinals that name no runtime event of it.
pub(super) const ORPHAN_ORDINALS: &str =
    "SELECT o.ordinal FROM runtime_session_event_ordinals o WHERE o.session_id = ?1 AND NOT EXISTS (SELECT 1 FROM runtime_events e WHERE e.event_id = o.event_id AND e.session_id = o.session_id)";

/// The session's events so far as the store's view holds them: the store's own identity and
/// sealing rules (MAKA-MODEL §1.1, `store::check_identity`) are checked against it, and the
/// sequence number it would give an event is read from it.
struct View {
    index: SessionIndex,
    records: u64,
}

impl View {
    fn check(&self, e: &RuntimeEvent) -> Result<(), String> {
        check_identity(&self.index, e).map_err(|e| e.to_string())
    }

    /// The sequence number the store gives the invocation's next event.
    fn next_seq(&self, invocation: &str) -> u64 {
        self.index
            .invocations
            .get(invocation)
            .map_or(0, |i| i.max_seq)
            + 1
    }

    /// Applies an immutable event, as the store does once it is queued.
    fn apply(&mut self, e: &RuntimeEvent) {
        self.records += 1;
        let at = StoredAt {
            record_seq: self.records,
            ordinal: 1,
            offset: 0,
        };
        // `known`: the view keeps no id table, which the rules do not read.
        let seq = self.index.apply_event(at, &EventFacts::of(e), true);
        debug_assert!(
            seq.is_some(),
            "an immutable event of the session gets a sequence number"
        );
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
    fits(event.canonical_json())?;
    Ok((event, int(&r[4])?))
}

/// The session's runtime events in the order they are written.
pub fn runtime_events(
    conn: &Connection,
    sid: &str,
    report: &mut Report,
) -> rusqlite::Result<Vec<Timed>> {
    let mut partials = snapshots::partial_snapshots(conn, sid, report)?;
    let mut view = View {
        index: SessionIndex::new(sid),
        records: 0,
    };
    let mut broken: HashSet<String> = HashSet::new();
    // The ids of the events taken: the store keeps one event per id in a session.
    let mut ids: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let rows = select(conn, EVENTS, [sid])?;
    for r in &rows {
        let id = key_part(&r[0]);
        let invocation = key_part(&r[1]);
        // A row under a taken id (a source without its primary key) joined the taken one's
        // ordinal, which is not its own to refuse.
        let duplicate = ids.contains(&id);
        let checked = decode_row(r, sid).and_then(|(event, seq)| {
            if duplicate {
                return Err("its id is another event's of the session, which keeps one event per id".into());
            }
            if broken.contains(&invocation) {
                return Err("follows an event of its invocation that was not imported: its sequence number cannot be kept".into());
            }
            let expected = view.next_seq(&invocation);
            if u64::try_from(seq).ok() != Some(expected) {
                return Err(format!("sequence {seq} where its invocation's next is {expected}"));
            }
            view.check(&event)?;
            Ok((event, expected))
        });
        let ordinal =
            (!duplicate && !matches!(r[7], rusqlite::types::Value::Null)).then(|| key_part(&r[7]));
        match checked {
            Ok((event, seq)) => {
                ids.insert(id.clone());
                report.imported("runtime_events", 1);
                if ordinal.is_some() {
                    report.imported("runtime_session_event_ordinals", 1);
                }
                // A snapshot that followed the run's terminal goes before it, where the store
                // takes it.
                if !event.partial() && event.is_terminal() {
                    place(&mut out, &view, partials.of_run(event.run_id()), report);
                }
                view.apply(&event);
                let ts = event.ts();
                out.push(Timed::new(
                    ts,
                    Rank::RuntimeEvent,
                    Planned::Event {
                        event,
                        seq: Some(seq),
                    },
                ));
                place(&mut out, &view, partials.after(&id), report);
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
    let rest = partials.rest();
    place(&mut out, &view, rest, report);
    for r in select(conn, ORPHAN_ORDINALS, [sid])? {
        report.refused(
            "runtime_session_event_ordinals",
            format!("{sid}/{}", key_part(&r[0])),
            "names no runtime event of its session".into(),
        );
    }
    Ok(out)
}

/// Appends partial snapshots where they stand, each checked against the store's rules.
fn place(out: &mut Vec<Timed>, view: &View, snapshots: Vec<Snapshot>, report: &mut Report) {
    // The store checks a partial event as any other, but keeps nothing of it for its rules.
    for s in snapshots {
        match view.check(&s.event) {
            Ok(()) => {
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
