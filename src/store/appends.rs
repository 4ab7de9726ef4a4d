//! Appending to the runtime-event store: canonical events (sealing, identity and repeats
//! checked against the session's view) and the session's other records, each checked by the
//! rules the view applies it with, queued under the session's lock and then waited for.

use super::header_patch::HeaderPatch;
use super::identity::check_identity;
use super::live::{lock, LiveView, SessionEvents};
use super::runtime_events::{decode_session_record, AppendedEvent, Queued, RuntimeEventStore};
use super::stored::stored_event;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::{EventFacts, IdEntry, RecordRef, SessionRecord, SessionState, StoredAt};
use crate::model::SessionHeader;
use crate::segment::{Durability, SegmentWriter};
use crate::storage::Storage;

impl RuntimeEventStore {
    /// Appends a canonical event to its session. An event for a run that already has a terminal
    /// event is refused with [`Error::RunSealed`]; an identical event already stored returns its
    /// sequence number with `created: false`; the same id with other content, or ids that break
    /// the invocation ↔ run ↔ turn identity, are an [`Error::IdentityConflict`]. Immutable events
    /// are always durable; partial ones follow `durability`.
    pub fn append(&self, event: &RuntimeEvent, durability: Durability) -> Result<AppendedEvent> {
        let (appended, queued) = self.queue_event(event)?;
        if let Some(queued) = queued {
            if appended.event_seq.is_some() || durability == Durability::Durable {
                queued.wait_durable()?;
            } else {
                queued.session.writer.spill()?;
            }
        }
        Ok(appended)
    }

    /// [`RuntimeEventStore::append`] up to the wait: the event is checked, queued and in the
    /// view, and the caller waits for it (`None` for a repeat, whose stored event is durable).
    /// Until then, readers of the view wait for it too.
    pub(crate) fn queue_event(
        &self,
        event: &RuntimeEvent,
    ) -> Result<(AppendedEvent, Option<Queued>)> {
        self.check_fits(RecordKind::RuntimeEvent, event.canonical_json())?;
        let session = self.session(event.session_id())?;
        let mut st = lock(&session.state);
        st.check_base(self.storage(), &session.writer)?;
        if !event.partial() {
            if let Some(stored) = repeat_of(self.storage(), &mut st, &session.writer, event)? {
                return Ok((stored, None));
            }
        }
        if let Err(refusal) = check_identity(&st.view, event) {
            // The view may rest on a terminal or an opening still being synced: refuse only once
            // it is durable (if its sync fails, the caller gets that failure instead).
            let upto = st.fact_seq;
            drop(st);
            session.writer.wait_durable(upto)?;
            return Err(refusal);
        }
        let payload = event.canonical_json().as_bytes();
        let ack = session.writer.enqueue(RecordKind::RuntimeEvent, payload)?;
        st.view
            .cover(ack.ordinal, ack.offset, ack.end, ack.seq, ack.chain);
        let facts = EventFacts::of(event);
        let at = StoredAt {
            record_seq: ack.seq,
            ordinal: ack.ordinal,
            offset: ack.offset,
        };
        let event_seq = st.view.apply_event(at, &facts, false);
        st.dirty = true;
        if event_seq.is_some() {
            st.fact_seq = ack.seq;
        }
        if event_seq.is_some() && (facts.opening || facts.terminal) {
            st.pending
                .insert(ack.seq, event.canonical_json().to_owned());
        }
        if facts.opening || facts.terminal {
            st.listed = None;
        }
        drop(st);
        let appended = AppendedEvent {
            event_seq,
            record_seq: ack.seq,
            created: true,
        };
        Ok((
            appended,
            Some(Queued {
                session,
                seq: ack.seq,
            }),
        ))
    }

    /// Appends a record of another kind (session header, message, run, run event, admission,
    /// start rejection) to the session's ledger, in order with its events, durably: lifecycle
    /// records are never buffered. `payload` is decoded strictly first and its canonical JSON
    /// is what is written (the same bytes for a canonical payload); runtime events go through
    /// [`RuntimeEventStore::append`]. Returns the record's sequence number.
    ///
    /// This is the ledger's layer, not the stores': a record is checked as the session's view
    /// applies it (its session, its kind's decoder, one terminal run event a run), not by the
    /// rules of MAKA-MODEL §5–§8 the session and run stores keep (a run that must exist, the
    /// updates and transitions a run allows, a header's immutable members). An import writes
    /// through it what those stores once took; a host uses the stores.
    pub fn append_record(&self, session_id: &str, kind: RecordKind, payload: &[u8]) -> Result<u64> {
        self.append_session_record(session_id, &decode_session_record(kind, payload)?, &|_| {
            Ok(())
        })
    }

    /// Appends `record` to session `session_id`'s ledger durably, if `precondition` holds for
    /// the session's state under the session's lock (a run that must not exist yet, a header
    /// an update was made from): nothing is written when it does not.
    pub(super) fn append_session_record(
        &self,
        session_id: &str,
        record: &SessionRecord,
        precondition: &dyn Fn(&SessionState) -> Result<()>,
    ) -> Result<u64> {
        self.queue_record_if(session_id, record, precondition)?
            .wait_durable()
    }

    /// [`RuntimeEventStore::append_session_record`] up to the wait: the record is checked,
    /// queued and in the view, and the caller waits for it. Until then, readers of the view
    /// wait too. The record was decoded by whoever made it: its canonical JSON is written and
    /// the view applies it as it is, without decoding that text again.
    pub(crate) fn queue_record_if(
        &self,
        session_id: &str,
        record: &SessionRecord,
        precondition: &dyn Fn(&SessionState) -> Result<()>,
    ) -> Result<Queued> {
        // Checked by the rules the view applies it with: one it would refuse is refused here,
        // with nothing written (and no session opened for one naming another session).
        self.check_record(record, session_id)?;
        let session = self.session(session_id)?;
        // What depends on the session's state (a run event's run) is checked under its lock.
        let st = lock(&session.state);
        st.view
            .session
            .check(record, session_id)
            .map_err(Error::InvalidInput)?;
        precondition(&st.view.session)?;
        self.enqueue_checked(&session, st, session_id, record)
    }

    /// Queues the new version of the session's header `patch` makes of the one it holds now,
    /// under its lock (so an update queued since the caller read it stays); returns it.
    pub(crate) fn queue_header_patch(
        &self,
        session_id: &str,
        patch: &HeaderPatch,
    ) -> Result<(Queued, SessionHeader)> {
        let session = self.session(session_id)?;
        let st = lock(&session.state);
        let header = patch.on(&st.view.session)?;
        let record = SessionRecord::Header(header.clone());
        self.check_record(&record, session_id)?;
        st.view
            .session
            .check(&record, session_id)
            .map_err(Error::InvalidInput)?;
        let queued = self.enqueue_checked(&session, st, session_id, &record)?;
        Ok((queued, header))
    }

    /// What a record must be whatever the session holds: of this session, and within the
    /// log's bound.
    fn check_record(&self, record: &SessionRecord, session_id: &str) -> Result<()> {
        SessionState::check_session(record, session_id).map_err(Error::InvalidInput)?;
        self.check_fits(record.kind(), record.canonical_json())
    }

    /// Queues `record`, checked against the session's state held locked in `st`, and applies
    /// it to the view.
    fn enqueue_checked(
        &self,
        session: &std::sync::Arc<SessionEvents>,
        mut st: std::sync::MutexGuard<'_, LiveView>,
        session_id: &str,
        record: &SessionRecord,
    ) -> Result<Queued> {
        let (kind, payload) = (record.kind(), record.canonical_json().as_bytes());
        let ack = session.writer.enqueue(kind, payload)?;
        if kind == RecordKind::SessionHeader {
            // Before any reader can see it: the catalog reads the session again.
            self.catalog.header_queued(session_id);
        }
        let at = RecordRef {
            ordinal: ack.ordinal,
            format_version: ack.format_version,
            offset: ack.offset,
            end: ack.end,
            seq: ack.seq,
            chain: ack.chain,
            kind,
            payload,
        };
        st.view.apply_session_record(&at, record);
        // Readers of the view wait until what it shows is durable.
        st.fact_seq = ack.seq;
        st.dirty = true;
        drop(st);
        Ok(Queued {
            session: session.clone(),
            seq: ack.seq,
        })
    }

    /// Whether session `session_id` holds a RuntimeEvent with id `id` (each entry its index
    /// names for the id read back to confirm it): what a caller given an event's id checks
    /// before it writes anything that event would follow.
    pub(crate) fn holds_event(&self, session_id: &str, id: &str) -> Result<bool> {
        let session = self.session(session_id)?;
        let mut st = lock(&session.state);
        st.check_base(self.storage(), &session.writer)?;
        let found = find_stored(self.storage(), &mut st, &session.writer, session_id, id)?;
        Ok(found.is_some())
    }

    /// Refuses a new run's id that session `session_id`'s events already use (a run or an
    /// invocation of that id, whatever its turn, sealed or not; a turn's invocation is its
    /// run's own id): what a turn checks before it writes anything, since its opening's events
    /// would be refused by their identity only after its run was queued.
    pub(crate) fn check_run_unused(&self, session_id: &str, run_id: &str) -> Result<()> {
        let session = self.session(session_id)?;
        let mut st = lock(&session.state);
        st.check_base(self.storage(), &session.writer)?;
        let what = if let Some(run) = st.view.runs.get(run_id) {
            format!(
                "run {run_id} (invocation {}, turn {})",
                run.invocation_id, run.turn_id
            )
        } else if let Some(inv) = st.view.invocations.get(run_id) {
            format!(
                "invocation {run_id} (run {}, turn {})",
                inv.run_id, inv.turn_id
            )
        } else {
            return Ok(());
        };
        Err(Error::IdentityConflict {
            what: format!(
                "session {session_id}'s events already use {what}: a new run's ids are unused"
            ),
        })
    }

    /// Refuses a record over the segments' payload bound before its session is opened (or
    /// made) for it: the writer would refuse it only once the session existed.
    pub(crate) fn check_fits(&self, kind: RecordKind, canonical: &str) -> Result<()> {
        if canonical.len() > self.max_payload() {
            return Err(Error::InvalidInput(format!(
                "a {} record of {} bytes exceeds the bound of {} bytes",
                kind.name(),
                canonical.len(),
                self.max_payload()
            )));
        }
        Ok(())
    }
}

/// The stored event `event` repeats, if its id is stored: the same bytes are a repeat, another
/// event with the id a conflict.
fn repeat_of(
    storage: &dyn Storage,
    st: &mut LiveView,
    writer: &SegmentWriter,
    event: &RuntimeEvent,
) -> Result<Option<AppendedEvent>> {
    let Some((stored, bytes)) = find_stored(storage, st, writer, event.session_id(), event.id())?
    else {
        return Ok(None);
    };
    if bytes != event.canonical_json().as_bytes() {
        return Err(Error::IdentityConflict {
            what: format!("RuntimeEvent identity conflict for {}", event.id()),
        });
    }
    Ok(Some(AppendedEvent {
        event_seq: Some(stored.event_seq),
        record_seq: stored.record_seq,
        created: false,
    }))
}

/// The stored event with id `id` and its bytes, if the session holds one. Rare (a retry, or
/// an id a caller gave): each entry the index names for the id is read back. An entry of the
/// sidecar's id table naming a frame that is not there (its CRC and bounds intact) is damage:
/// the index is rebuilt from the log and asked again.
fn find_stored(
    storage: &dyn Storage,
    st: &mut LiveView,
    writer: &SegmentWriter,
    session_id: &str,
    id: &str,
) -> Result<Option<(IdEntry, Vec<u8>)>> {
    let read_back = |st: &LiveView| -> Result<Option<(IdEntry, Vec<u8>)>> {
        for stored in st.candidates(id)? {
            writer.wait_durable(stored.record_seq)?;
            if let Some(bytes) = stored_event(storage, session_id, &stored, id)? {
                return Ok(Some((stored, bytes)));
            }
        }
        Ok(None)
    };
    match read_back(st) {
        Err(Error::Corrupt { .. }) if st.has_base() => {
            st.rebuild_base(storage, writer)?;
            read_back(st)
        }
        found => found,
    }
}
