//! The runtime-event store: canonical events appended to their session's ledger, sealed runs,
//! sequence numbers per invocation, and invocation listings answered from the index. This
//! file holds the store and its sessions open for writing (opened on first use, the least
//! recently used evicted and closed cleanly), what an append comes to, and the store's close;
//! appending is in `appends.rs`, reading in `reads.rs` and `event_reads.rs`.
//!
//! Each open session keeps its materialized view in memory (runs, invocations, covers, and the
//! event ids added since its sidecar) and the sidecar's id table mapped, so sealing and identity
//! checks cost the same for a run of 10 events as for one of 100,000. At most a configured
//! number of sessions stay open for writing; reads of a session that is not open go through a
//! read-only view.

use super::catalog::HeaderCatalog;
use super::live::{close_session, open_for_writing, SessionEvents};
use super::open_sessions::{OpenSessions, DEFAULT_MAX_OPEN_SESSIONS};
use crate::error::{Error, Result};
use crate::format::RecordKind;
use crate::index::SessionRecord;
use crate::root::Owner;
use crate::segment::WriterConfig;
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
    pub(super) session: Arc<SessionEvents>,
    pub(super) seq: u64,
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

    /// The most bytes a record's payload may hold in this store's segments.
    pub(super) fn max_payload(&self) -> usize {
        self.config.max_payload as usize
    }

    pub(super) fn session(&self, session_id: &str) -> Result<Arc<SessionEvents>> {
        self.sessions.get_or_open(
            session_id,
            || open_for_writing(&self.owner, &self.config, session_id),
            &|s| s.writer.is_healthy(),
        )
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
