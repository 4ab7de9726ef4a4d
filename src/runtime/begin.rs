//! The writes that open a turn, in the order of MAKA-MODEL §12 (steps 0–6): the admission
//! (hosted turns), the run and `run_created`, the invocation's opening, the user message and
//! `turn_state{running}`, the user RuntimeEvent, the connection lock, then `run_started`, the
//! run running and the session running. The admission is durable first; steps 1–6 then by one
//! sync, once every record of them is built and checked and the ids the turn was given are
//! found unused, so input or ids the ledger refuses leave nothing written.

use super::attachments::check_attachments;
use super::batch::Batch;
use super::lineage::check_origin;
use super::manager::{Inner, TurnInput};
use super::mapping::TurnIds;
use super::opening::{opening_records, user_event};
use crate::error::{Error, Result};
use crate::event::{EventError, RuntimeEvent};
use crate::model::SessionHeader;
use crate::store::Admission;
use serde_json::{json, Value};

/// A turn whose opening writes are done: what its stream needs.
pub(super) struct Begun {
    pub ids: TurnIds,
    /// The lineage every `turn_state` of the turn states.
    pub lineage: serde_json::Map<String, Value>,
    pub user_message_id: String,
    pub header: SessionHeader,
    pub started_at: f64,
}

/// Opens a turn of session `session_id`, whose header (read by the caller) is `header`.
pub(super) fn begin(
    inner: &Inner,
    session_id: &str,
    header: SessionHeader,
    input: &TurnInput,
) -> Result<Begun> {
    let stores = &inner.stores;
    let s = &inner.sources;
    let turn_id = input.turn_id.clone().unwrap_or_else(|| s.new_id());
    let mut run_id = input.run_id.clone().unwrap_or_else(|| s.new_id());
    let mut user_message_id = input.user_message_id.clone().unwrap_or_else(|| s.new_id());
    // Where the turn comes from is checked before anything is written, and its origin
    // stated everywhere as the user event's decode reads it (`automation` is
    // `legacy_automation`).
    input.lineage.check()?;
    check_attachments(&input.attachments)?;
    let normalized;
    let input = match &input.origin {
        Some(origin) => {
            check_origin(origin)?;
            let ids = TurnIds {
                session_id: session_id.to_owned(),
                invocation_id: run_id.clone(),
                run_id: run_id.clone(),
                turn_id: turn_id.clone(),
            };
            let event = runtime_event(user_event(&ids, &user_message_id, 0.0, input));
            let event = event.map_err(|e| {
                Error::InvalidInput(format!("origin: {origin} is not a TurnOrigin ({e})"))
            })?;
            normalized = TurnInput {
                origin: Some(event.value()["content"]["origin"].clone()),
                ..input.clone()
            };
            &normalized
        }
        None => input,
    };
    // 0. A hosted turn is admitted first; a stored admission's ids win. Its record is built
    // now (admitted before the run is created) and written once the opening's records are
    // built and checked, so an input the ledger cannot take leaves neither.
    let admission = match &input.execution {
        Some(execution) => {
            let stored = stores.runs.read_root_turn_admission(session_id, &turn_id)?;
            let previous = match &stored {
                // A retry (or a turn an older version admitted naming none) is compared on
                // its payload alone.
                Some(a) => {
                    let a = a.value();
                    run_id = a["runId"].as_str().unwrap_or(&run_id).to_owned();
                    if let Some(m) = a["userMessageId"].as_str() {
                        user_message_id = m.to_owned();
                    }
                    a["previousRootTurnId"].clone()
                }
                None => json!(stores.sessions.turn_before(session_id, &turn_id)?),
            };
            Some(json!({
                "schemaVersion": 1, "sessionId": session_id, "turnId": turn_id, "runId": run_id,
                "userMessageId": user_message_id, "execution": execution,
                "previousRootTurnId": previous, "normalizedInput": {"text": input.text},
                "sourceMessages": [], "admittedAt": s.now() as u64,
            }))
        }
        None => None,
    };
    check_unused(stores, session_id, &run_id, &user_message_id)?;
    let ids = TurnIds {
        session_id: session_id.to_owned(),
        invocation_id: run_id.clone(),
        run_id: run_id.clone(),
        turn_id: turn_id.clone(),
    };
    // Steps 1 to 6, every record built and checked before anything of the turn is written.
    let opening = opening_records(inner, &ids, &header, input, &user_message_id)?;
    if let Some(admission) = admission {
        admit(stores, admission, &ids, &user_message_id)?;
    }
    // The run is in the open-runs file before its first record, so recovery finds it.
    let storage = inner.stores.runtime_events.storage();
    super::manager::lock(&inner.open_runs)?.mark(storage, session_id, &run_id)?;
    // They are queued in the session's log in their order and made durable by one sync: a
    // crash keeps a prefix of them, as it would of separate syncs.
    let mut batch = Batch::new(inner, session_id);
    let written = opening.queue(&mut batch);
    let durable = batch.wait();
    let (header, started_at) = written?;
    durable?;
    Ok(Begun {
        ids,
        lineage: input.lineage.turn_fields(),
        user_message_id,
        header,
        started_at,
    })
}

/// Refuses ids the session already holds (a run id its runs or its events use, or a user
/// message id an event has) before anything is written: at their queueing, a hosted turn's
/// admission and a prefix of the opening would already be durable.
fn check_unused(
    stores: &crate::store::ExecutionStores,
    session_id: &str,
    run_id: &str,
    user_message_id: &str,
) -> Result<()> {
    stores.runs.check_run_is_new(session_id, run_id)?;
    stores.runtime_events.check_run_unused(session_id, run_id)?;
    if stores
        .runtime_events
        .holds_event(session_id, user_message_id)?
    {
        return Err(Error::IdentityConflict {
            what: format!(
                "session {session_id} already has an event {user_message_id}: a user message \
                 id names the turn's user event"
            ),
        });
    }
    Ok(())
}

/// Writes a hosted turn's admission (§8): admitted, or the stored one for the same work,
/// whose ids must be the turn's (they were read before the opening was built from them).
fn admit(
    stores: &crate::store::ExecutionStores,
    admission: Value,
    ids: &TurnIds,
    user_message_id: &str,
) -> Result<()> {
    let turn_id = &ids.turn_id;
    let stored = match stores.runs.admit_root_turn(admission)? {
        Admission::Admitted(a) | Admission::Existing(a) => a,
        Admission::Conflict(a) => {
            return Err(Error::IdentityConflict {
                what: format!(
                    "turn {turn_id} was admitted for other work: {}",
                    a.canonical_json()
                ),
            })
        }
    };
    let a = stored.value();
    let message = a["userMessageId"].as_str().unwrap_or(user_message_id);
    if a["runId"] != json!(ids.run_id) || message != user_message_id {
        return Err(Error::IdentityConflict {
            what: format!(
                "turn {turn_id} was admitted meanwhile as run {} and message {message}",
                a["runId"]
            ),
        });
    }
    Ok(())
}

/// A RuntimeEvent the runtime built, strictly decoded (one it would refuse is a typed error).
pub(super) fn runtime_event(event: Value) -> Result<RuntimeEvent> {
    built(RuntimeEvent::from_value(event))
}

/// An event the runtime built, or the typed error for one the ledger refuses.
pub(super) fn built(event: std::result::Result<RuntimeEvent, EventError>) -> Result<RuntimeEvent> {
    event.map_err(|e| {
        Error::InvalidInput(format!(
            "the runtime built an event the ledger refuses: {e}"
        ))
    })
}

/// Appends a run event of the turn's run, durably.
pub(super) fn run_event(
    inner: &Inner,
    ids: &TurnIds,
    kind: &str,
    data: Option<Value>,
) -> Result<()> {
    inner
        .stores
        .runs
        .append_event(super::batch::run_event_value(inner, ids, kind, data))?;
    Ok(())
}
