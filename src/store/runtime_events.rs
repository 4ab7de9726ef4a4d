//! The runtime-event store: canonical events appended to their session's ledger, sealed runs,
//! sequence numbers per invocation, and invocation listings answered from the index.
//!
//! Each open session keeps its materialized view in memory (runs, invocations, covers, and the
//! event ids added since its sidecar) and the sidecar's id table mapped, so sealing and identity
//! checks cost the same for a run of 10 events as for one of 100,000. At most a configured
//! number of sessions stay open for writing; reads of a session that is not open go through a
//! read-only view.

use super::catalog::HeaderCatalog;
use super::identity::check_identity;
use super::live::{close_session, lock, open_for_writing, SessionEvents};
use super::open_sessions::{OpenSessions, DEFAULT_MAX_OPEN_SESSIONS};
use super::stored::stored_event;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::{EventFacts, RecordRef, SessionRecord, SessionState, StoredAt};
use crate::root::Owner;
use crate::segment::{Durability, WriterConfig};
use crate::storage::Storage;
use std::sync::Arc;

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

/// A record queued in its session's log and applied to its view, not yet durable. Holding it
/// keeps the session open (it is never evicted under its caller).
pub(crate) struct Queued {
    session: Arc<SessionEvents>,
    seq: u64,
}

impl Queued {
    /// Whether a sync already covered it.
    pub(crate) fn is_durable(&self) -> bool {
        self.session.writer.durable_seq() >= self.seq
    }

    /// Returns the record's sequence number once it, and everything before it in its log, is
    /// durable.
    pub(crate) fn wait_durable(self) -> Result<u64> {
        self.session.writer.wait_durable(self.seq)?;
        Ok(self.seq)
    }
}

/// How a read of a session open for writing takes what its view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Once durable: a read of facts queued by an appender that has not waited yet leads
    /// their sync.
    Durable,
    /// As queued, not waiting: for a writer whose records follow what it reads in the same
    /// log. A crash keeps a prefix of the log, so what it writes never outlives what it read,
    /// and one sync then covers both.
    Queued,
}

/// The runtime-event store of a root, open for writing under the owner's lease.
pub struct RuntimeEventStore {
    pub(super) owner: Owner,
    config: WriterConfig,
    /// The sessions open for writing: a session's open (its recovery) holds only its own slot,
    /// so appends to other sessions go on meanwhile.
    pub(super) sessions: OpenSessions<SessionEvents>,
    /// Every session's latest header, for `list_sessions`.
    pub(super) catalog: HeaderCatalog,
}

impl RuntimeEventStore {
    /// A store over the owner's root; sessions are opened (and recovered) on first use, and at
    /// most [`DEFAULT_MAX_OPEN_SESSIONS`] stay open for writing.
    pub fn open(owner: &Owner, config: WriterConfig) -> RuntimeEventStore {
        RuntimeEventStore::with_open_limit(owner, config, DEFAULT_MAX_OPEN_SESSIONS)
    }

    /// A store that keeps at most `max_open` sessions open for writing (at least 1): when
    /// another must open, the least recently used one nobody is using is closed cleanly (synced,
    /// its sidecar written, the zeros ahead of its data cut), over real files on a closer
    /// thread (at most [`super::MAX_CLOSING`] at once, each holding its segment until it is
    /// done). Sessions in use at once may exceed the limit; none is closed under its caller.
    pub fn with_open_limit(owner: &Owner, config: WriterConfig, max_open: usize) -> Self {
        RuntimeEventStore {
            owner: owner.clone(),
            config,
            sessions: evicting(owner, max_open),
            catalog: HeaderCatalog::default(),
        }
    }

    pub(crate) fn storage(&self) -> &dyn Storage {
        &**self.owner.storage()
    }

    /// How many sessions are open for writing now.
    pub fn open_sessions(&self) -> usize {
        self.sessions.open_count()
    }

    /// Opens a session for writing now (creating it if absent, recovering it otherwise), rather
    /// than on its first append.
    pub fn open_session_now(&self, session_id: &str) -> Result<()> {
        self.session(session_id).map(|_| ())
    }

    pub(super) fn session(&self, session_id: &str) -> Result<Arc<SessionEvents>> {
        self.sessions.get_or_open(
            session_id,
            || open_for_writing(&self.owner, &self.config, session_id),
            &|s| s.writer.is_healthy(),
        )
    }

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
                    let stored = AppendedEvent {
                        event_seq: Some(stored.event_seq),
                        record_seq: stored.record_seq,
                        created: false,
                    };
                    return Ok((stored, None));
                }
                return Err(Error::IdentityConflict {
                    what: format!("RuntimeEvent identity conflict for {}", event.id()),
                });
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
        SessionState::check_session(record, session_id).map_err(Error::InvalidInput)?;
        let session = self.session(session_id)?;
        // What depends on the session's state (a run event's run) is checked under its lock.
        let mut st = lock(&session.state);
        st.view
            .session
            .check(record, session_id)
            .map_err(Error::InvalidInput)?;
        precondition(&st.view.session)?;
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
            session,
            seq: ack.seq,
        })
    }

    /// Syncs every session, writes the sidecars that are behind their logs and cuts the zeros
    /// ahead of each log's data; reports the first failure, including one met while closing an
    /// evicted session.
    pub fn close(self) -> Result<()> {
        let (open, evicted) = self.sessions.drain();
        let mut first = evicted;
        for s in open {
            let result = match Arc::try_unwrap(s) {
                Ok(s) => close_session(self.storage(), s),
                Err(_) => Err(Error::InvalidInput(
                    "a session is still in use while its store closes".into(),
                )),
            };
            if let Err(e) = result {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The open sessions of a store over `owner`'s root, evicted ones closed on closer threads
/// unless the storage must replay exactly. (A session being closed holds the root's lease
/// through its writer's hold on its log.)
fn evicting(owner: &Owner, max_open: usize) -> OpenSessions<SessionEvents> {
    let storage = owner.storage().clone();
    let background = !storage.deterministic();
    OpenSessions::new(max_open, move |s| close_session(&*storage, s), background)
}

/// A record given as bytes, strictly decoded: one that is not a session record is refused.
pub(super) fn decode_session_record(kind: RecordKind, payload: &[u8]) -> Result<SessionRecord> {
    SessionRecord::decode(kind, payload)?.ok_or_else(|| {
        Error::InvalidInput(match kind {
            RecordKind::RuntimeEvent => {
                "runtime events are appended with RuntimeEventStore::append".into()
            }
            other => format!("a {} record is not a session record", other.name()),
        })
    })
}
