//! A session's runtime events read from its files, for a root the reader does not own: the
//! immutable events in read order and the live partial snapshots, from one read. Nothing is
//! written.

use super::read_only_sessions::ReadOnlySessions;
use super::stored::events_and_partials;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::index::read_order;
use crate::segment::layout::session_dir;

/// A session's runtime events as [`ReadOnlySessions::read_runtime_events`] reads them.
#[derive(Debug, Clone, Default)]
pub struct SessionRuntimeEvents {
    /// The immutable events in read order (ts, runId, sequence, id).
    pub events: Vec<RuntimeEvent>,
    /// The live partial snapshots (each id's latest partial event whose final event has not
    /// landed), in commit order.
    pub live_partials: Vec<RuntimeEvent>,
}

impl ReadOnlySessions<'_> {
    /// The session's immutable events and live partial snapshots, from one read of its log;
    /// none for a session never written.
    pub fn read_runtime_events(&self, session_id: &str) -> Result<SessionRuntimeEvents> {
        if !self.exists(session_id)? {
            return Ok(SessionRuntimeEvents::default());
        }
        let (mut events, live_partials) = events_and_partials(self.storage, session_id)?;
        events.sort_by(|a, b| read_order((&a.0, a.1), (&b.0, b.1)));
        Ok(SessionRuntimeEvents {
            events: events.into_iter().map(|(e, _)| e).collect(),
            live_partials,
        })
    }

    fn exists(&self, session_id: &str) -> Result<bool> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let dir = session_dir(session_id);
        Ok(self
            .storage
            .entry_kind(&dir)
            .map_err(|e| Error::io(&dir, "stat", e))?
            .is_some())
    }
}
