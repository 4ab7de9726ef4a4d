//! The runtime-event store: canonical events appended to their session's ledger, sealed runs,
//! sequence numbers per invocation, and invocation listings answered from the index.
//!
//! Each session keeps its materialized view in memory (runs, invocations, covers, and the event
//! ids added since its sidecar) and the sidecar's id table mapped, so sealing and identity
//! checks cost the same for a run of 10 events as for one of 100,000.

use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::{
    decode_frame, FrameDecode, RecordKind, FRAME_HEADER_LEN, FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::index::{
    catch_up, decode_sidecar_header, encode_sidecar, find_ids, id_entries, id_hash, read_order,
    rebuild, resume_point, section, section_unchecked, trusted_sidecar, EventFacts, IdEntry,
    RuntimeInvocation, SessionIndex, StoredAt, SIDECAR_FILE,
};
use crate::root::Owner;
use crate::segment::layout::{list_session, session_dir};
use crate::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use crate::storage::{write_atomically, FileBytes, OpenMode, Storage};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// What appending an event came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedEvent {
    /// The event's sequence number in its invocation; partial events have none.
    pub event_seq: Option<u64>,
    /// The record's sequence number in the session's ledger.
    pub record_seq: u64,
    /// False when an identical event with this id was already stored (nothing was written).
    pub created: bool,
}

/// The runtime-event store of a root, open for writing under the owner's lease.
pub struct RuntimeEventStore {
    owner: Owner,
    config: WriterConfig,
    /// One slot per session: a session's open (its recovery) holds only its own slot, so
    /// appends to other sessions go on meanwhile.
    sessions: Mutex<HashMap<String, Arc<Slot>>>,
}

type Slot = Mutex<Option<Arc<SessionEvents>>>;

struct SessionEvents {
    writer: SegmentWriter,
    state: Mutex<LiveView>,
}

/// A session's view: in memory, plus the id table of the sidecar it was loaded from.
struct LiveView {
    view: SessionIndex,
    base: Option<BaseIds>,
    /// True when the view holds records the sidecar on disk does not.
    dirty: bool,
    /// The invocations as last listed, until an opening or terminal event changes them.
    listed: Option<Vec<RuntimeInvocation>>,
}

/// The id section of a mapped sidecar.
struct BaseIds {
    path: PathBuf,
    bytes: FileBytes,
    start: usize,
    end: usize,
    /// The section's CRC, checked on first use.
    crc: u32,
    checked: bool,
}

impl BaseIds {
    fn body(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    fn find(&self, id: &str) -> Result<Vec<IdEntry>> {
        find_ids(self.body(), id_hash(id)).map_err(|e| Error::corrupt(&self.path, 0, e.what))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LiveView {
    /// Checks the mapped id table once; a damaged one means the sidecar cannot be trusted, so
    /// the view is rebuilt from the segments and its sidecar rewritten. The caller holds the
    /// session's state lock, so nothing new is queued while `writer` is synced for the rebuild.
    fn check_base(&mut self, storage: &dyn Storage, writer: &SegmentWriter) -> Result<()> {
        let Some(base) = self.base.as_mut() else {
            return Ok(());
        };
        if base.checked {
            return Ok(());
        }
        if crc32fast::hash(base.body()) == base.crc {
            base.checked = true;
            return Ok(());
        }
        writer.sync()?;
        self.view = rebuild(storage, &self.view.session_id)?;
        self.base = None;
        self.listed = None;
        write_sidecar(storage, self)
    }

    /// The entries that may be the stored event with this id: the view's own, or the sidecar's
    /// with the same id hash (each to be confirmed by reading the event back).
    fn candidates(&self, id: &str) -> Result<Vec<IdEntry>> {
        if let Some(e) = self.view.ids.get(id) {
            return Ok(vec![*e]);
        }
        match &self.base {
            Some(base) => base.find(id),
            None => Ok(Vec::new()),
        }
    }
}

fn sidecar_path(session_id: &str) -> PathBuf {
    session_dir(session_id).join(SIDECAR_FILE)
}

impl RuntimeEventStore {
    /// A store over the owner's root; sessions are opened (and recovered) on first use.
    pub fn open(owner: &Owner, config: WriterConfig) -> RuntimeEventStore {
        RuntimeEventStore {
            owner: owner.clone(),
            config,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn storage(&self) -> &dyn Storage {
        &**self.owner.storage()
    }

    /// Opens a session for writing now (creating it if absent, recovering it otherwise), rather
    /// than on its first append.
    pub fn open_session_now(&self, session_id: &str) -> Result<()> {
        self.session(session_id).map(|_| ())
    }

    /// True when the session is open here or has a directory: reads of a session that was
    /// never written answer empty and create nothing.
    fn exists(&self, session_id: &str) -> Result<bool> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let slot = lock(&self.sessions).get(session_id).cloned();
        // A slot being opened right now (locked) will exist.
        if slot.is_some_and(|s| s.try_lock().map_or(true, |open| open.is_some())) {
            return Ok(true);
        }
        let dir = session_dir(session_id);
        Ok(self
            .storage()
            .entry_kind(&dir)
            .map_err(|e| Error::io(&dir, "stat", e))?
            .is_some())
    }

    fn session(&self, session_id: &str) -> Result<Arc<SessionEvents>> {
        let slot = lock(&self.sessions)
            .entry(session_id.to_owned())
            .or_default()
            .clone();
        let mut open = lock(&slot);
        if let Some(s) = open.as_ref() {
            return Ok(s.clone());
        }
        // A failed open leaves the slot empty: the next call tries again.
        let s = Arc::new(self.open_session(session_id)?);
        *open = Some(s.clone());
        Ok(s)
    }

    /// Opens a session: loads its sidecar if it still describes the segments, recovers the
    /// log after what it covers, and catches the view up; a missing, damaged or foreign
    /// sidecar is rebuilt from the segments and written.
    fn open_session(&self, session_id: &str) -> Result<SessionEvents> {
        let loaded = self.load_sidecar(session_id)?;
        let resume = loaded.as_ref().and_then(|l| resume_point(&l.view));
        let (writer, _) =
            SegmentWriter::open_resumed(&self.owner, session_id, self.config.clone(), resume)?;
        let live = match loaded {
            Some(mut live) => {
                let before = live.view.covers.clone();
                let base = live.base.take();
                let storage = self.storage();
                let known = |id: &str| {
                    base.as_ref().is_some_and(|b| {
                        b.find(id).unwrap_or_default().iter().any(|e| {
                            stored_event(storage, session_id, e, id).is_ok_and(|p| p.is_some())
                        })
                    })
                };
                catch_up(self.storage(), &mut live.view, &known)?;
                live.dirty = live.view.covers != before;
                live.base = base;
                live
            }
            None => {
                let view = rebuild(self.storage(), session_id)?;
                let mut live = LiveView {
                    view,
                    base: None,
                    dirty: true,
                    listed: None,
                };
                write_sidecar(self.storage(), &mut live)?;
                live
            }
        };
        Ok(SessionEvents {
            writer,
            state: Mutex::new(live),
        })
    }

    /// The session's sidecar, if present, whole, of this session and still true of its
    /// segments; `None` means rebuild.
    fn load_sidecar(&self, session_id: &str) -> Result<Option<LiveView>> {
        let path = sidecar_path(session_id);
        let bytes = match self.storage().map_file(&path) {
            Ok(b) => b,
            Err(_) => return Ok(None),
        };
        let Some((view, header)) = trusted_sidecar(self.storage(), session_id, &bytes)? else {
            return Ok(None);
        };
        let ids = section_unchecked(&bytes, &header, 2);
        let start = ids.as_ptr() as usize - bytes.as_ptr() as usize;
        let end = start + ids.len();
        Ok(Some(LiveView {
            view,
            base: Some(BaseIds {
                path,
                bytes,
                start,
                end,
                crc: header.sections[2].crc,
                checked: false,
            }),
            dirty: false,
            listed: None,
        }))
    }

    /// Appends a canonical event to its session. An event for a run that already has a terminal
    /// event is refused with [`Error::RunSealed`]; an identical event already stored returns its
    /// sequence number with `created: false`; the same id with other content, or ids that break
    /// the invocation ↔ run ↔ turn identity, are an [`Error::IdentityConflict`]. Immutable events
    /// are always durable; partial ones follow `durability`.
    pub fn append(&self, event: &RuntimeEvent, durability: Durability) -> Result<AppendedEvent> {
        let session = self.session(event.session_id())?;
        let mut st = lock(&session.state);
        st.check_base(self.storage(), &session.writer)?;
        if !event.partial() {
            for stored in st.candidates(event.id())? {
                // A repeat is rare (a retry): read the stored event back and compare.
                session.writer.wait_durable(stored.record_seq)?;
                let Some(bytes) =
                    stored_event(self.storage(), event.session_id(), &stored, event.id())?
                else {
                    continue;
                };
                if bytes == event.canonical_json().as_bytes() {
                    return Ok(AppendedEvent {
                        event_seq: Some(stored.event_seq),
                        record_seq: stored.record_seq,
                        created: false,
                    });
                }
                return Err(Error::IdentityConflict {
                    what: format!("RuntimeEvent identity conflict for {}", event.id()),
                });
            }
        }
        check_identity(&st.view, event)?;
        let payload = event.canonical_json().as_bytes();
        let ack = session.writer.enqueue(RecordKind::RuntimeEvent, payload)?;
        st.view
            .cover(ack.ordinal, ack.offset, payload.len(), ack.seq, ack.chain);
        let facts = EventFacts::of(event);
        let at = StoredAt {
            record_seq: ack.seq,
            ordinal: ack.ordinal,
            offset: ack.offset,
        };
        let event_seq = st
            .view
            .apply_event(at, &facts, event.canonical_json(), false);
        st.dirty = true;
        if facts.opening || facts.terminal {
            st.listed = None;
        }
        drop(st);
        if event_seq.is_some() || durability == Durability::Durable {
            session.writer.wait_durable(ack.seq)?;
        }
        Ok(AppendedEvent {
            event_seq,
            record_seq: ack.seq,
            created: true,
        })
    }

    /// Appends a record of another kind (session header, message, run, run event, admission,
    /// seal) to the session's ledger, in order with its events, durably: lifecycle records are
    /// never buffered. Runtime events go through [`RuntimeEventStore::append`]. Returns the
    /// record's sequence number.
    pub fn append_record(&self, session_id: &str, kind: RecordKind, payload: &[u8]) -> Result<u64> {
        if kind == RecordKind::RuntimeEvent {
            return Err(Error::InvalidInput(
                "runtime events are appended with RuntimeEventStore::append".into(),
            ));
        }
        let session = self.session(session_id)?;
        let mut st = lock(&session.state);
        let ack = session.writer.enqueue(kind, payload)?;
        st.view
            .cover(ack.ordinal, ack.offset, payload.len(), ack.seq, ack.chain);
        st.dirty = true;
        drop(st);
        session.writer.wait_durable(ack.seq)?;
        Ok(ack.seq)
    }

    /// The session's immutable events in read order: ts, runId, sequence, id.
    pub fn read_session_runtime_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>> {
        if !self.exists(session_id)? {
            return Ok(Vec::new());
        }
        let mut events = read_events(self.storage(), session_id)?;
        events.sort_by(|a, b| read_order((&a.0, a.1), (&b.0, b.1)));
        Ok(events.into_iter().map(|(e, _)| e).collect())
    }

    /// A run's immutable events in sequence order (then id).
    pub fn read_immutable_runtime_events(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Vec<RuntimeEvent>> {
        if !self.exists(session_id)? {
            return Ok(Vec::new());
        }
        let mut events: Vec<(RuntimeEvent, u64)> = read_events(self.storage(), session_id)?
            .into_iter()
            .filter(|(e, _)| e.run_id() == run_id)
            .collect();
        events.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.id().cmp(b.0.id())));
        Ok(events.into_iter().map(|(e, _)| e).collect())
    }

    /// The session's invocations, from its index: opened, in order of openedAt then id, each
    /// with its first terminal event.
    pub fn list_session_invocations(&self, session_id: &str) -> Result<Vec<RuntimeInvocation>> {
        if !self.exists(session_id)? {
            return Ok(Vec::new());
        }
        let session = self.session(session_id)?;
        let mut st = lock(&session.state);
        if st.listed.is_none() {
            st.listed = Some(st.view.invocations());
        }
        Ok(st.listed.clone().unwrap_or_default())
    }

    /// Syncs every session and writes the sidecars that are behind their logs.
    pub fn close(self) -> Result<()> {
        let sessions = std::mem::take(&mut *lock(&self.sessions));
        for (_, slot) in sessions {
            let Some(s) = lock(&slot).take() else {
                continue;
            };
            s.writer.sync()?;
            let mut st = lock(&s.state);
            st.check_base(self.storage(), &s.writer)?;
            if st.dirty {
                write_sidecar(self.storage(), &mut st)?;
            }
        }
        Ok(())
    }
}

/// Refuses an event for a sealed run, or one whose ids contradict the stored identity of its
/// run or invocation (§1.1).
fn check_identity(view: &SessionIndex, event: &RuntimeEvent) -> Result<()> {
    if let Some(run) = view.runs.get(event.run_id()) {
        if run.sealed {
            return Err(Error::RunSealed {
                session_id: event.session_id().to_owned(),
                run_id: event.run_id().to_owned(),
            });
        }
        if run.invocation_id != event.invocation_id() || run.turn_id != event.turn_id() {
            return Err(Error::IdentityConflict {
                what: format!(
                    "run {} belongs to invocation {} turn {}",
                    event.run_id(),
                    run.invocation_id,
                    run.turn_id
                ),
            });
        }
    }
    if let Some(inv) = view.invocations.get(event.invocation_id()) {
        if inv.run_id != event.run_id() || inv.turn_id != event.turn_id() {
            return Err(Error::IdentityConflict {
                what: format!(
                    "invocation {} belongs to run {} turn {}",
                    event.invocation_id(),
                    inv.run_id,
                    inv.turn_id
                ),
            });
        }
    }
    Ok(())
}

/// Writes the view's sidecar atomically, merging the mapped sidecar's ids, and maps the new one.
fn write_sidecar(storage: &dyn Storage, live: &mut LiveView) -> Result<()> {
    let session_id = live.view.session_id.clone();
    let path = sidecar_path(&session_id);
    let base_ids = match &live.base {
        Some(b) if b.checked => {
            id_entries(b.body()).map_err(|e| Error::corrupt(&path, 0, e.what))?
        }
        Some(_) => {
            return Err(Error::corrupt(
                &path,
                0,
                "the sidecar's ids were not checked",
            ))
        }
        None => Vec::new(),
    };
    let bytes =
        encode_sidecar(&live.view, &base_ids).map_err(|e| Error::corrupt(&path, 0, e.what))?;
    write_atomically(storage, &path, &bytes)?;
    let mapped = storage
        .map_file(&path)
        .map_err(|e| Error::io(&path, "map", e))?;
    let header = decode_sidecar_header(&mapped)
        .map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
    let ids =
        section(&mapped, &header, 2).map_err(|e| Error::corrupt(&path, e.offset as u64, e.what))?;
    let start = ids.as_ptr() as usize - mapped.as_ptr() as usize;
    let end = start + ids.len();
    let crc = header.sections[2].crc;
    live.base = Some(BaseIds {
        path,
        bytes: mapped,
        start,
        end,
        crc,
        checked: true,
    });
    live.view.ids = Default::default();
    live.dirty = false;
    Ok(())
}

/// The stored event an id entry points at, if it is the event with `id` (entries are found by
/// a 64-bit hash, so another id may share one).
fn stored_event(
    storage: &dyn Storage,
    session_id: &str,
    at: &IdEntry,
    id: &str,
) -> Result<Option<Vec<u8>>> {
    let bytes = stored_payload(storage, session_id, at)?;
    let same = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|json| EventFacts::peek(json).ok())
        .is_some_and(|f| f.id == id);
    Ok(same.then_some(bytes))
}

/// The payload of the frame an id entry points at, checked by its CRC.
fn stored_payload(storage: &dyn Storage, session_id: &str, at: &IdEntry) -> Result<Vec<u8>> {
    let files = list_session(storage, session_id)?.segments;
    let path = files
        .get(at.ordinal as usize)
        .map(|f| f.path.clone())
        .ok_or_else(|| {
            Error::corrupt(session_dir(session_id), 0, "an indexed segment is missing")
        })?;
    let file = storage
        .open(&path, OpenMode::Read)
        .map_err(|e| Error::io(&path, "open", e))?;
    let read = |offset: u64, len: usize| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let mut done = 0;
        while done < len {
            match file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    return Err(Error::corrupt(
                        &path,
                        offset,
                        "indexed frame runs past the end of the file",
                    ))
                }
                Ok(n) => done += n,
                Err(e) => return Err(Error::io(&path, "read", e)),
            }
        }
        Ok(buf)
    };
    let head = read(at.offset, FRAME_HEADER_LEN)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_PAYLOAD_LIMIT as usize {
        return Err(Error::corrupt(
            &path,
            at.offset,
            "indexed frame is longer than any frame",
        ));
    }
    let frame = read(at.offset, FRAME_OVERHEAD + len)?;
    match decode_frame::<RecordKind>(&frame, MAX_PAYLOAD_LIMIT) {
        Ok(FrameDecode::Frame(f, _)) if f.seq == at.record_seq => Ok(f.payload.to_vec()),
        _ => Err(Error::corrupt(
            &path,
            at.offset,
            "the index points at no such record",
        )),
    }
}

/// Every immutable event of a session in commit order, with its sequence number in its
/// invocation (counted as the index counts them).
fn read_events(storage: &dyn Storage, session_id: &str) -> Result<Vec<(RuntimeEvent, u64)>> {
    let mut seqs: HashMap<String, u64> = HashMap::new();
    let mut out = Vec::new();
    for record in SessionReader::open(storage, session_id, 1)? {
        let r = record?;
        if r.kind != RecordKind::RuntimeEvent {
            continue;
        }
        let text = std::str::from_utf8(&r.payload)
            .map_err(|_| Error::corrupt(&r.file, r.offset, "runtime event is not UTF-8"))?;
        let event = RuntimeEvent::decode(text).map_err(|e| {
            Error::corrupt(
                &r.file,
                r.offset,
                format!("runtime event does not decode: {e}"),
            )
        })?;
        if event.partial() || event.session_id() != session_id {
            continue;
        }
        let seq = seqs.entry(event.invocation_id().to_owned()).or_insert(0);
        *seq += 1;
        out.push((event, *seq));
    }
    Ok(out)
}
