//! The identity rules of an appended event (MAKA-MODEL §1.1): a sealed run takes no more
//! events, and a run and its invocation keep the ids they were opened with.

use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::index::SessionIndex;

/// Refuses an event for a sealed run, or one whose ids contradict the stored identity of its
/// run or invocation (§1.1).
pub fn check_identity(view: &SessionIndex, event: &RuntimeEvent) -> Result<()> {
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
