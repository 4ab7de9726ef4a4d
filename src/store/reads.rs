//! Reading the runtime-event store: a session's immutable events, its invocations and the state
//! of its other records, each answered from the session's view in memory when it is open here
//! (once what it shows is durable), and otherwise from its files, without opening it for
//! writing.

use super::live::{lock, SessionEvents};
use super::read_view::read_only_invocations;
use super::runtime_events::{RuntimeEventStore, Seen};
use super::stored::read_events;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::index::{read_order, RuntimeInvocation, SessionState};
use crate::segment::layout::session_dir;
use std::sync::Arc;

impl RuntimeEventStore {
    /// The session's immutable events in read order: ts, runId, sequence, id.
    pub fn read_session_runtime_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>> {
        let mut events = self.durable_events(session_id)?;
        events.sort_by(|a, b| read_order((&a.0, a.1), (&b.0, b.1)));
        Ok(events.into_iter().map(|(e, _)| e).collect())
    }

    /// A run's immutable events in sequence order (then id).
    pub fn read_immutable_runtime_events(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Vec<RuntimeEvent>> {
        let mut events: Vec<(RuntimeEvent, u64)> = self
            .durable_events(session_id)?
            .into_iter()
            .filter(|(e, _)| e.run_id() == run_id)
            .collect();
        events.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.id().cmp(b.0.id())));
        Ok(events.into_iter().map(|(e, _)| e).collect())
    }

    /// The session's immutable events in commit order, read from its files: of a session open
    /// here, those up to its last immutable event once that is durable.
    fn durable_events(&self, session_id: &str) -> Result<Vec<(RuntimeEvent, u64)>> {
        let open = match self.reading(session_id)? {
            Reading::Absent => return Ok(Vec::new()),
            Reading::Open(s) => s,
            Reading::Files => {
                let events = read_events(self.storage(), session_id, u64::MAX)?;
                match self.opened_meanwhile(session_id)? {
                    Some(s) => s,
                    None => return Ok(events),
                }
            }
        };
        let upto = lock(&open.state).fact_seq;
        open.writer.wait_durable(upto)?;
        read_events(self.storage(), session_id, upto)
    }

    /// The session's invocations, from its index: opened, in order of openedAt then id, each
    /// with its first terminal event. A session open here answers from its view in memory once
    /// the facts it shows are durable; another from a read-only view of its files.
    pub fn list_session_invocations(&self, session_id: &str) -> Result<Vec<RuntimeInvocation>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let session = match self.open_for_reading(session_id)? {
            Some(s) => s,
            None => {
                let listed = read_only_invocations(self.storage(), session_id)?;
                match self.opened_meanwhile(session_id)? {
                    Some(s) => s,
                    None => return Ok(listed),
                }
            }
        };
        let (listed, upto) = {
            let mut st = lock(&session.state);
            if st.listed.is_none() {
                st.listed = Some(st.invocations(self.storage())?);
            }
            (st.listed.clone().unwrap_or_default(), st.fact_seq)
        };
        session.writer.wait_durable(upto)?;
        Ok(listed)
    }

    /// How a read sees a session: open here (its live view, waited on until what it shows is
    /// durable), absent (never written: empty, nothing created), or as its files hold it.
    fn reading(&self, session_id: &str) -> Result<Reading> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        if let Some(s) = self.open_for_reading(session_id)? {
            return Ok(Reading::Open(s));
        }
        let dir = session_dir(session_id);
        if self
            .storage()
            .entry_kind(&dir)
            .map_err(|e| Error::io(&dir, "stat", e))?
            .is_none()
        {
            return Ok(Reading::Absent);
        }
        Ok(Reading::Files)
    }
}

/// How a read finds a session.
enum Reading {
    Open(Arc<SessionEvents>),
    Absent,
    Files,
}

/// The state of a session's records, read as the event reads are.
impl RuntimeEventStore {
    /// What `read` takes from the session records' state of `session_id`, once durable
    /// ([`Seen::Durable`]).
    pub(super) fn with_session_state<T>(
        &self,
        session_id: &str,
        read: impl FnOnce(&SessionState) -> T,
    ) -> Result<T> {
        self.session_state(session_id, Seen::Durable, read)
    }

    /// What `read` takes from the session records' state of `session_id`: its live view's when
    /// it is open here (read under its lock, without copying the state, and returned as `seen`
    /// says), its files' otherwise (nothing written).
    pub(crate) fn session_state<T>(
        &self,
        session_id: &str,
        seen: Seen,
        read: impl FnOnce(&SessionState) -> T,
    ) -> Result<T> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let open = match self.open_for_reading(session_id)? {
            Some(open) => open,
            None => {
                let state = super::read_view::read_only_state(
                    self.storage(),
                    session_id,
                    super::read_view::Sidecars::Trusted,
                )?;
                match self.opened_meanwhile(session_id)? {
                    Some(open) => open,
                    None => return Ok(read(&state)),
                }
            }
        };
        let (answer, upto) = {
            let st = lock(&open.state);
            (read(&st.view.session), st.fact_seq)
        };
        if seen == Seen::Durable {
            open.writer.wait_durable(upto)?;
        }
        Ok(answer)
    }

    /// After a read of a session's files: the session, if it was opened here meanwhile. An
    /// opener may have written a record the read saw before it is durable, so then the open
    /// session's view answers instead, waited on; one opened after this check wrote nothing
    /// the read saw.
    fn opened_meanwhile(&self, session_id: &str) -> Result<Option<Arc<SessionEvents>>> {
        self.open_for_reading(session_id)
    }

    /// The session if it is open here, or must be: one whose write or sync failed in this
    /// process (in this store or an earlier one of the same owner) is opened, which writes back
    /// and syncs what the failed writer left, so no read serves bytes a power loss can take.
    /// An open session whose writer failed is opened again too: its view may show records that
    /// never reached the disk (a retried terminal commit took them for done), and its writer
    /// refuses every wait, which locked the session out of the stores' reads.
    pub(super) fn open_for_reading(&self, session_id: &str) -> Result<Option<Arc<SessionEvents>>> {
        if let Some(open) = self.sessions.get_open(session_id) {
            if open.writer.is_healthy() {
                return Ok(Some(open));
            }
            // Dropped first: a failed session is opened again only once nobody holds it.
            drop(open);
            let again = self.session(session_id)?;
            // Still the failed one (another caller holds it): refused with its failure.
            again.writer.wait_durable(0)?;
            return Ok(Some(again));
        }
        if self
            .owner
            .log_failed(&crate::segment::layout::session_log_name(session_id))
        {
            return self.session(session_id).map(Some);
        }
        Ok(None)
    }
}
