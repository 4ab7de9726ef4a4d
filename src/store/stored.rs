//! Reading stored records back: the frame an id entry points at, and a session's immutable
//! events in commit order.

use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::{EventFacts, IdEntry, StoredAt};
use crate::segment::{FramesAt, SessionReader};
use crate::storage::Storage;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

/// The stored event an id entry points at, if it is the event with `id` (entries are found by
/// a 64-bit hash, so another id may share one).
pub(crate) fn stored_event(
    storage: &dyn Storage,
    session_id: &str,
    at: &IdEntry,
    id: &str,
) -> Result<Option<Vec<u8>>> {
    let bytes = FramesAt::new(storage, session_id).payload(at.ordinal, at.offset, at.record_seq)?;
    let same = event_id(&bytes).is_some_and(|stored| stored == id);
    Ok(same.then_some(bytes))
}

/// The id of the event a payload holds, if it holds one.
fn event_id(payload: &[u8]) -> Option<String> {
    let json = std::str::from_utf8(payload).ok()?;
    Some(EventFacts::read(json).ok()?.id.into_owned())
}

/// A frame read back: its record's sequence number and its event's id, if it holds an event.
type Found = (u64, Option<String>);

/// Confirms a sidecar's id entries against the frames they name while a view catches up past
/// its covers. Each place is read back at most once, whatever record its entries claim: a
/// crafted table naming one large frame from many entries, met by many repeats in the tail,
/// costs one read of it, not one a repeat. And confirming reads no more than a rebuild would
/// read of the segments it reads from (to each one's last non-zero byte and a frame's length of
/// zeros, not the size a sparse file states for nothing), and one frame past that: entries
/// naming places that are no frame each cost a read, so past that the sidecar is not worth its cost, every later lookup answers
/// "not stored", and the caller, finding it [`exhausted`](StoredIds::exhausted), drops what it
/// caught up and rebuilds.
pub(crate) struct StoredIds<'a> {
    frames: RefCell<FramesAt<'a>>,
    /// By place (segment ordinal, offset): what is stored there.
    read: RefCell<HashMap<(u64, u64), Option<Found>>>,
    /// What the segments read from hold, counted once each.
    budget: RefCell<(u64, HashSet<u64>)>,
    exhausted: Cell<bool>,
}

impl<'a> StoredIds<'a> {
    pub(crate) fn new(storage: &'a dyn Storage, session_id: &'a str) -> Self {
        StoredIds {
            frames: RefCell::new(FramesAt::new(storage, session_id)),
            read: Default::default(),
            budget: Default::default(),
            exhausted: Cell::new(false),
        }
    }

    /// Whether the event stored where `at` names has id `id`.
    pub(crate) fn holds(&self, at: &IdEntry, id: &str) -> bool {
        let key = (at.ordinal, at.offset);
        if let Some(stored) = self.read.borrow().get(&key) {
            return matches!(stored, Some((seq, Some(s))) if *seq == at.record_seq && s == id);
        }
        if self.exhausted.get() {
            return false;
        }
        let mut frames = self.frames.borrow_mut();
        let mut budget = self.budget.borrow_mut();
        if budget.1.insert(at.ordinal) {
            budget.0 = budget
                .0
                .saturating_add(frames.segment_data_len(at.ordinal).unwrap_or(0));
        }
        let stored = frames
            .frame(at.ordinal, at.offset)
            .ok()
            .map(|(seq, bytes)| (seq, event_id(&bytes)));
        if frames.bytes_read() > budget.0 {
            self.exhausted.set(true);
            return false;
        }
        let holds = matches!(&stored, Some((seq, Some(s))) if *seq == at.record_seq && s == id);
        self.read.borrow_mut().insert(key, stored);
        holds
    }

    /// True once confirming cost more than the segments hold: the answers given are not to be
    /// trusted, and the view is to be rebuilt from the segments.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }
}

/// The records stored `at`, read back in order and each decoded by `decode`; one that is not
/// UTF-8 is damage named by its frame's offset. A span of frames in one segment is read once,
/// its payloads lent to `decode` uncopied ([`FramesAt::each_payload`]).
pub(super) fn decoded_at<T>(
    frames: &mut FramesAt<'_>,
    session_id: &str,
    at: &[StoredAt],
    what: &str,
    decode: impl Fn(&str) -> Result<T>,
) -> Result<Vec<T>> {
    let positions: Vec<(u64, u64, u64)> = at
        .iter()
        .map(|a| (a.ordinal, a.offset, a.record_seq))
        .collect();
    let mut out = Vec::with_capacity(at.len());
    frames.each_payload(&positions, |i, payload| {
        let text = std::str::from_utf8(payload).map_err(|_| {
            Error::corrupt(
                crate::segment::layout::session_dir(session_id),
                at[i].offset,
                format!("{what} is not UTF-8"),
            )
        })?;
        out.push(decode(text)?);
        Ok(())
    })?;
    Ok(out)
}

/// The runtime event a record holds; damage, named by file and offset, if it does not decode.
fn decoded_event(r: &crate::segment::Record) -> Result<RuntimeEvent> {
    let text = std::str::from_utf8(&r.payload)
        .map_err(|_| Error::corrupt(&r.file, r.offset, "runtime event is not UTF-8"))?;
    RuntimeEvent::decode(text).map_err(|e| {
        Error::corrupt(
            &r.file,
            r.offset,
            format!("runtime event does not decode: {e}"),
        )
    })
}

/// An immutable event and its sequence number in its invocation.
type SeqEvent = (RuntimeEvent, u64);

/// Every immutable event of a session in commit order, up to record `upto`, with its sequence
/// number in its invocation (counted as the index counts them).
pub(crate) fn read_events(
    storage: &dyn Storage,
    session_id: &str,
    upto: u64,
) -> Result<Vec<(RuntimeEvent, u64)>> {
    scan_events(storage, session_id, upto, false).map(|(events, _)| events)
}

/// [`read_events`] of the whole log and, from the same read, the session's live partial
/// snapshots in commit order: for each id whose final event has not landed, its latest partial
/// event (MAKA-MODEL §3: a partial is a mutable snapshot, dropped when the final event lands).
pub(crate) fn events_and_partials(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<(Vec<SeqEvent>, Vec<RuntimeEvent>)> {
    scan_events(storage, session_id, u64::MAX, true)
}

/// One pass over a session's log up to record `upto`: its immutable events with their
/// sequence numbers and, when `keep_partials`, its live partial snapshots.
fn scan_events(
    storage: &dyn Storage,
    session_id: &str,
    upto: u64,
    keep_partials: bool,
) -> Result<(Vec<SeqEvent>, Vec<RuntimeEvent>)> {
    let mut seqs: HashMap<String, u64> = HashMap::new();
    let mut live: HashMap<String, (u64, RuntimeEvent)> = HashMap::new();
    let mut out = Vec::new();
    for record in SessionReader::open(storage, session_id, 1)? {
        let r = record?;
        if r.seq > upto {
            break;
        }
        if r.kind != RecordKind::RuntimeEvent {
            continue;
        }
        let event = decoded_event(&r)?;
        if event.session_id() != session_id {
            continue;
        }
        if event.partial() {
            if keep_partials {
                live.insert(event.id().to_owned(), (r.seq, event));
            }
            continue;
        }
        if keep_partials {
            live.remove(event.id());
        }
        let seq = seqs.entry(event.invocation_id().to_owned()).or_insert(0);
        *seq += 1;
        out.push((event, *seq));
    }
    let mut partials: Vec<(u64, RuntimeEvent)> = live.into_values().collect();
    partials.sort_by_key(|(seq, _)| *seq);
    Ok((out, partials.into_iter().map(|(_, e)| e).collect()))
}
