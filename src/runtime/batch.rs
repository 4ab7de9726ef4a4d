//! Records of one session queued in their order and made durable by one sync: a crash keeps
//! a prefix of them, as it would of separate syncs. What the runtime opens a turn with.

use super::manager::Inner;
use super::mapping::TurnIds;
use crate::error::Result;
use crate::index::SessionRecord;
use crate::store::{HeaderPatch, SessionBatch};
use serde_json::{json, Value};

/// Records of one session queued in order, waited for once.
pub(super) struct Batch<'a> {
    batch: SessionBatch<'a>,
}

impl<'a> Batch<'a> {
    pub(super) fn new(inner: &'a Inner, session_id: &'a str) -> Self {
        Batch {
            batch: SessionBatch::new(&inner.stores.runtime_events, session_id),
        }
    }

    pub(super) fn record(
        &mut self,
        record: &SessionRecord,
        precondition: &dyn Fn(&crate::index::SessionState) -> Result<()>,
    ) -> Result<()> {
        self.batch.record_if(record, precondition)
    }

    /// The version of the session's header `patch` makes of the one it holds when queued.
    pub(super) fn header_patch(&mut self, patch: &HeaderPatch) -> Result<()> {
        self.batch.header_patch(patch)
    }

    /// An event already decoded (a fact checks all its records before it queues one).
    pub(super) fn decoded_event(&mut self, event: &crate::event::RuntimeEvent) -> Result<()> {
        self.batch.event(event).map(|_| ())
    }

    /// How many records were queued.
    pub(super) fn queued(&self) -> usize {
        self.batch.queued()
    }

    /// Whether everything queued is durable already, so [`Batch::wait`] would not block.
    pub(super) fn is_durable(&self) -> bool {
        self.batch.is_durable()
    }

    /// Waits until everything queued is durable: also after a refused step, since what was
    /// queued before it is in the session's view.
    pub(super) fn wait(self) -> Result<()> {
        self.batch.commit()
    }
}

/// A run event of the turn's run.
pub(super) fn run_event_value(
    inner: &Inner,
    ids: &TurnIds,
    kind: &str,
    data: Option<Value>,
) -> Value {
    let mut event = json!({
        "type": kind, "id": inner.sources.new_id(), "runId": ids.run_id,
        "sessionId": ids.session_id, "turnId": ids.turn_id, "ts": inner.sources.now(),
    });
    if let Some(data) = data {
        event["data"] = data;
    }
    event
}
