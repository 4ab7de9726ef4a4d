//! Records of one session queued in order and made durable by one sync: what a caller writing
//! many records at once (the runtime opening a turn, an import) uses instead of a sync a
//! record. Each record is checked as [`RuntimeEventStore::append_record`] and
//! [`RuntimeEventStore::append`] check it, and is in the session's view once queued; a crash
//! before the commit keeps a prefix of what was queued, as separate syncs would.

use super::runtime_events::{AppendedEvent, Queued, RuntimeEventStore};
use crate::error::Result;
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::{SessionRecord, SessionState};

/// Records of one session, queued in order and waited for once.
pub struct SessionBatch<'a> {
    events: &'a RuntimeEventStore,
    session_id: String,
    last: Option<Queued>,
    queued: usize,
}

impl<'a> SessionBatch<'a> {
    /// An empty batch of `session_id`'s records.
    pub fn new(events: &'a RuntimeEventStore, session_id: &str) -> Self {
        SessionBatch {
            events,
            session_id: session_id.to_owned(),
            last: None,
            queued: 0,
        }
    }

    /// How many records were queued and not yet committed.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Queues a record of another kind than a runtime event (header, message, run, run event,
    /// admission, start rejection), checked first: nothing is queued for one that is refused.
    /// `payload` is decoded strictly first, and its canonical JSON is what is queued. Checked
    /// as [`RuntimeEventStore::append_record`] checks a record: not by the session and run
    /// stores' rules.
    pub fn record(&mut self, kind: RecordKind, payload: &[u8]) -> Result<()> {
        let record = super::runtime_events::decode_session_record(kind, payload)?;
        self.record_if(&record, &|_| Ok(()))
    }

    /// Queues a decoded session record, if `precondition` holds for the session's state under
    /// its lock.
    pub(crate) fn record_if(
        &mut self,
        record: &SessionRecord,
        precondition: &dyn Fn(&SessionState) -> Result<()>,
    ) -> Result<()> {
        let queued = self
            .events
            .queue_record_if(&self.session_id, record, precondition)?;
        self.last = Some(queued);
        self.queued += 1;
        Ok(())
    }

    /// Queues the version of the session's header `patch` makes of the one it holds now.
    pub(crate) fn header_patch(&mut self, patch: &super::HeaderPatch) -> Result<()> {
        let (queued, _) = self.events.queue_header_patch(&self.session_id, patch)?;
        self.last = Some(queued);
        self.queued += 1;
        Ok(())
    }

    /// Queues a canonical event of this session (sealing and identity checked as
    /// [`RuntimeEventStore::append`] checks them); a repeat of a stored event queues nothing
    /// and answers `created: false`.
    pub fn event(&mut self, event: &RuntimeEvent) -> Result<AppendedEvent> {
        debug_assert_eq!(event.session_id(), self.session_id);
        let (appended, queued) = self.events.queue_event(event)?;
        if queued.is_some() {
            self.last = queued;
            self.queued += 1;
        }
        Ok(appended)
    }

    /// Whether everything queued is durable already (a later sync covered it), so a commit
    /// returns at once (with [`crate::Error::Poisoned`] if the writer failed since).
    pub fn is_durable(&self) -> bool {
        self.last.as_ref().is_none_or(Queued::is_durable)
    }

    /// Waits until everything queued is durable: also after a refused step, since what was
    /// queued before it is in the session's view.
    pub fn commit(self) -> Result<()> {
        self.last.map_or(Ok(()), |q| q.wait_durable().map(|_| ()))
    }
}
