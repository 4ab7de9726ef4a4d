//! A session's runtime events read from its files, for a root the reader does not own: the
//! immutable events in read order and the live partial snapshots. Nothing is written.

use super::sessions::ReadOnlySessions;
use super::stored::{live_partials, read_events};
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::index::read_order;
use crate::segment::layout::session_dir;

impl ReadOnlySessions<'_> {
    /// The session's immutable events in read order (ts, runId, sequence, id); none for a
    /// session never written.
    pub fn read_session_runtime_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>> {
        if !self.exists(session_id)? {
            return Ok(Vec::new());
        }
        let mut events = read_events(self.storage, session_id, u64::MAX)?;
        events.sort_by(|a, b| read_order((&a.0, a.1), (&b.0, b.1)));
        Ok(events.into_iter().map(|(e, _)| e).collect())
    }

    /// The session's live partial snapshots (each id's latest partial event whose final event
    /// has not landed), in commit order.
    pub fn read_live_partials(&self, session_id: &str) -> Result<Vec<RuntimeEvent>> {
        if !self.exists(session_id)? {
            return Ok(Vec::new());
        }
        live_partials(self.storage, session_id)
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
