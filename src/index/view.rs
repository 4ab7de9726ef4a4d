//! The materialized view of one session's log: what the index sidecar stores. It is a pure
//! function of the records, applied one by one in log order, so a view caught up from a stored
//! sidecar equals one rebuilt from the segments, byte for byte once encoded.

use super::entries::{
    id_hash, Cover, IdEntry, IdHasher, InvocationEntry, KeyedEvent, RunEntry, StoredAt,
};
use super::facts::EventFacts;
use super::invocations::{sort_invocations, RuntimeInvocation};
use super::session_record::SessionRecord;
use super::session_state::SessionState;
use crate::format::{ChainValue, RecordKind};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

/// One record as the view sees it.
pub struct RecordRef<'a> {
    pub ordinal: u64,
    /// The format version of the segment holding it: in version 1, session header and message
    /// records are opaque to the view (their writers never checked them).
    pub format_version: u16,
    pub offset: u64,
    /// Offset just past the record's frame.
    pub end: u64,
    pub seq: u64,
    pub chain: ChainValue,
    pub kind: RecordKind,
    pub payload: &'a [u8],
}

/// The view of one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionIndex {
    pub session_id: String,
    pub covers: Vec<Cover>,
    pub runs: BTreeMap<String, RunEntry>,
    pub invocations: BTreeMap<String, InvocationEntry>,
    /// Event ids, when the view holds them (a rebuild does; a live store keeps only those
    /// added since its sidecar, the rest stay in the sidecar).
    pub ids: HashMap<String, IdEntry, IdHasher>,
    /// What its session records (headers, messages, runs and run events, admissions and start
    /// rejections) make.
    pub session: SessionState,
}

impl SessionIndex {
    /// An empty view of `session_id`.
    pub fn new(session_id: &str) -> Self {
        SessionIndex {
            session_id: session_id.to_owned(),
            ..SessionIndex::default()
        }
    }

    /// Applies one record. A runtime-event record whose payload is not a valid canonical event
    /// is refused with the reason; the caller names the file and offset. `known_id` says
    /// whether an event id is already recorded outside this view (in the sidecar it was caught
    /// up from).
    pub fn apply_record(
        &mut self,
        r: &RecordRef<'_>,
        known_id: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        let at = self.covered(r);
        match r.kind {
            RecordKind::RuntimeEvent => {
                let json = std::str::from_utf8(r.payload)
                    .map_err(|_| "runtime event is not UTF-8".to_owned())?;
                let facts = EventFacts::read(json)?;
                let known = known_id(&facts.id);
                self.apply_event(at, &facts, known);
                Ok(())
            }
            _ if r.format_version < 2 => Ok(()),
            kind => self
                .session
                .apply_stored(kind, r.payload, &self.session_id, at),
        }
    }

    /// Applies a session record a store decoded, [checked](SessionState::check) against this
    /// view and wrote, stored at `r` (whose payload is its canonical JSON): as
    /// [`SessionIndex::apply_record`] applies it, without decoding or checking it again.
    pub fn apply_session_record(&mut self, r: &RecordRef<'_>, record: &SessionRecord) {
        debug_assert_eq!(r.kind, record.kind());
        debug_assert_eq!(r.payload, record.canonical_json().as_bytes());
        // What a rebuild reads back from the payload is the record applied here.
        debug_assert_eq!(
            SessionRecord::decode(r.kind, r.payload)
                .ok()
                .flatten()
                .as_ref(),
            Some(record)
        );
        debug_assert_eq!(self.session.check(record, &self.session_id), Ok(()));
        let at = self.covered(r);
        if r.format_version >= 2 {
            self.session.apply_checked(record, at);
        }
    }

    /// Covers the frame `r` and returns where it is stored.
    fn covered(&mut self, r: &RecordRef<'_>) -> StoredAt {
        self.cover(r.ordinal, r.offset, r.end, r.seq, r.chain);
        StoredAt {
            record_seq: r.seq,
            ordinal: r.ordinal,
            offset: r.offset,
        }
    }

    /// Records that the log now ends with the frame at `offset` of segment `ordinal` (which
    /// ends at `end`), numbered `seq` with chain value `chain`.
    pub fn cover(&mut self, ordinal: u64, offset: u64, end: u64, seq: u64, chain: ChainValue) {
        debug_assert!(end > offset, "a frame has bytes");
        match self.covers.last_mut() {
            Some(c) if c.ordinal == ordinal => {
                c.last_frame_offset = offset;
                c.data_end = end;
                c.last_seq = seq;
                c.chain = chain;
            }
            _ => self.covers.push(Cover {
                ordinal,
                last_frame_offset: offset,
                data_end: end,
                last_seq: seq,
                chain,
            }),
        }
    }

    /// Applies a stored runtime event (stored `at`); returns its event sequence number,
    /// or `None` for a partial event, which has none. An id already `known` (the first event
    /// with an id keeps it) is not recorded again.
    pub fn apply_event(
        &mut self,
        at: StoredAt,
        event: &EventFacts<'_>,
        known: bool,
    ) -> Option<u64> {
        if event.partial || event.session_id != self.session_id {
            return None;
        }
        if !self.invocations.contains_key(event.invocation_id.as_ref()) {
            self.invocations.insert(
                event.invocation_id.clone().into_owned(),
                InvocationEntry {
                    run_id: event.run_id.clone().into_owned(),
                    turn_id: event.turn_id.clone().into_owned(),
                    max_seq: 0,
                    opening: None,
                    terminal: None,
                },
            );
        }
        let inv = self.invocations.get_mut(event.invocation_id.as_ref())?;
        inv.max_seq = inv.max_seq.saturating_add(1);
        let event_seq = inv.max_seq;
        // Openings and terminal events are kept by their place in the log.
        if event.opening || event.terminal {
            let keyed = KeyedEvent::of(event, at, event_seq);
            let earlier = |kept: &Option<KeyedEvent>| {
                kept.as_ref()
                    .is_none_or(|k| keyed.read_cmp(k) == Ordering::Less)
            };
            if event.opening && earlier(&inv.opening) {
                inv.opening = Some(keyed.clone());
            }
            if event.terminal && earlier(&inv.terminal) {
                inv.terminal = Some(keyed);
            }
        }
        match self.runs.get_mut(event.run_id.as_ref()) {
            Some(run) => run.sealed |= event.terminal,
            None => {
                self.runs.insert(
                    event.run_id.clone().into_owned(),
                    RunEntry {
                        invocation_id: event.invocation_id.clone().into_owned(),
                        turn_id: event.turn_id.clone().into_owned(),
                        sealed: event.terminal,
                    },
                );
            }
        }
        if known {
            return Some(event_seq);
        }
        self.ids
            .entry(event.id.clone().into_owned())
            .or_insert(IdEntry {
                hash: id_hash(&event.id),
                record_seq: at.record_seq,
                event_seq,
                ordinal: at.ordinal,
                offset: at.offset,
            });
        Some(event_seq)
    }

    /// The session's invocations, as [`runtime_invocations_from_session_events`] rebuilds them;
    /// `json` reads the canonical JSON of an opening or terminal event back from where it lies.
    ///
    /// [`runtime_invocations_from_session_events`]: super::runtime_invocations_from_session_events
    pub fn invocations(
        &self,
        json: &mut dyn FnMut(&StoredAt) -> crate::Result<String>,
    ) -> crate::Result<Vec<RuntimeInvocation>> {
        let parse = |text: String, at: &StoredAt| -> crate::Result<serde_json::Value> {
            // The ledger's own reader: the event was taken at up to 256 levels of nesting,
            // where serde_json's reader stops at 128.
            crate::event::parse::parse(&text).map_err(|e| crate::Error::Corrupt {
                file: crate::segment::layout::session_dir(&self.session_id),
                offset: at.offset,
                what: format!(
                    "indexed event of record {} does not parse: {e}",
                    at.record_seq
                ),
            })
        };
        let mut out = Vec::with_capacity(self.invocations.len());
        for (id, inv) in &self.invocations {
            let Some(opening) = inv.opening.as_ref() else {
                continue;
            };
            let mut event = parse(json(&opening.at)?, &opening.at)?;
            let content = event.get_mut("content").map(serde_json::Value::take);
            let (Some(turn_id), Some(content)) =
                (event.get("turnId").and_then(|t| t.as_str()), content)
            else {
                continue;
            };
            let terminal_event = match &inv.terminal {
                Some(t) => Some(parse(json(&t.at)?, &t.at)?),
                None => None,
            };
            out.push(RuntimeInvocation {
                session_id: self.session_id.clone(),
                invocation_id: id.clone(),
                run_id: opening.run_id.clone(),
                turn_id: turn_id.to_owned(),
                opened_at: opening.ts,
                opening: content,
                terminal_event,
            });
        }
        sort_invocations(&mut out);
        Ok(out)
    }
}
