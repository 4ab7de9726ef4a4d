//! A turn's end (MAKA-MODEL §12, step 8): the terminal commit, `turn_state` and the session's
//! header in one sync; the synthetic terminal events of a turn whose backend gave none it can
//! use; and the replacement of a terminal event the ledger refuses.

use super::super::begin::{runtime_event, Begun};
use super::super::events::SessionEvent;
use super::super::manager::{lock, Inner, TurnOutcome};
use super::super::mapping::{failure_message, final_turn_state, terminal_event, Ending};
use super::writer::{Output, Writer};
use crate::error::{Error, Result};
use crate::index::SessionRecord;
use crate::model::StoredMessage;
use crate::store::RunEnd;
use serde_json::{json, Value};

/// A terminal event the runtime makes for the turn: `failed` with `failure_class` (stop
/// reason `error`), or `aborted` from `abort_source` (stop reason `user_stop`).
pub(super) fn synthetic(
    inner: &Inner,
    begun: &Begun,
    status: &'static str,
    failure_class: Option<String>,
    abort_source: Option<&str>,
) -> (Value, Ending) {
    debug_assert!(matches!(status, "failed" | "aborted"));
    let s = &inner.sources;
    let ending = Ending {
        status,
        failure_class,
    };
    let stop_reason = if status == "aborted" {
        "user_stop"
    } else {
        "error"
    };
    let event = terminal_event(
        &begun.ids,
        &s.new_id(),
        s.now(),
        Some(stop_reason),
        &ending,
        None,
        abort_source,
    );
    (event, ending)
}

/// Ends the turn with `terminal`, so that its run never stays `running` in this life. A
/// refusal (not a disk's failure) is met twice: first by the same commit again, which
/// completes one refused after its event was stored (a precondition a concurrent update of
/// the run broke; each step done is skipped, and the stored event seals the run against any
/// other); then, the event itself refused (a repeated id, a field the ledger cannot hold) and
/// so nothing of the commit written, by a synthetic event failing the run
/// (`invalid_terminal_event`), which is returned beside the outcome. If that is refused too,
/// both errors are the turn's.
pub(super) fn commit(
    inner: &Inner,
    begun: &Begun,
    (terminal, ending): (Value, Ending),
    events: usize,
    output: &Output,
) -> Result<(TurnOutcome, Option<(Value, Ending)>)> {
    let refusal = |e: &Error| {
        matches!(
            e,
            Error::InvalidInput(_) | Error::InvalidRecord { .. } | Error::IdentityConflict { .. }
        )
    };
    let (outcome, replaced) = match finish(inner, begun, terminal.clone(), &ending, events, output)
    {
        Err(refused) if refusal(&refused) => {
            match finish(inner, begun, terminal, &ending, events, output) {
                // A failure that is not a refusal (the disk's) is the turn's as it is.
                Err(again) if refusal(&again) => {
                    let class = Some("invalid_terminal_event".into());
                    let (event, ending) = synthetic(inner, begun, "failed", class, None);
                    match finish(inner, begun, event.clone(), &ending, events, output) {
                        Ok(outcome) => Ok((outcome, Some((event, ending)))),
                        Err(e) => Err(Error::Several {
                            what:
                                "the turn's terminal event was refused, and so was its replacement"
                                    .into(),
                            errors: vec![refused, e],
                        }),
                    }
                }
                other => other.map(|outcome| (outcome, None)),
            }
        }
        other => other.map(|outcome| (outcome, None)),
    }?;
    // A lock a panic poisoned leaves the run named: a later start finds it ended.
    if let Ok(mut open) = lock(&inner.open_runs) {
        let counted = open.ended(&begun.ids.session_id, &begun.ids.run_id);
        debug_assert!(
            counted,
            "a turn's run is marked when it begins and ends once"
        );
    }
    Ok((outcome, replaced))
}

/// The outcome of a turn parked in `waiting_for_user`: nothing more is written (no terminal,
/// no `turn_state`, no header), and its run stays named in the open-runs file, for a recovery
/// to end (the next start's, one the host runs, or a claimed intent's retry).
pub(super) fn parked(inner: &Inner, begun: &Begun, events: usize, w: &Writer<'_>) -> TurnOutcome {
    let ids = &begun.ids;
    TurnOutcome {
        session_id: ids.session_id.clone(),
        turn_id: ids.turn_id.clone(),
        run_id: ids.run_id.clone(),
        user_message_id: begun.user_message_id.clone(),
        status: "waiting_for_user".into(),
        failure_class: None,
        summary: w.output.summary.clone(),
        event_count: events,
        started_at: begun.started_at,
        completed_at: inner.sources.now(),
        fact_failures: w.fact_failures,
    }
}

/// What the caller's stream is told of an ending the runtime made in the backend's place, as
/// the backends of §11 end a turn: `abort{user_stop}` then `complete{user_stop}` for an aborted
/// turn, `error{recoverable: false}` (its failure class as the code) then `complete{error}`
/// for a failed one.
pub(super) fn told(inner: &Inner, terminal: &Value, ending: &Ending) -> Vec<SessionEvent> {
    debug_assert!(matches!(ending.status, "failed" | "aborted"));
    let turn_id = terminal["turnId"].as_str().unwrap_or_default().to_owned();
    let ts = terminal["ts"].as_f64().unwrap_or_default();
    let s = &inner.sources;
    let (first, stop_reason) = match ending.status {
        "aborted" => {
            let reason = "user_stop".to_owned();
            let abort = SessionEvent::Abort {
                id: s.new_id(),
                turn_id: turn_id.clone(),
                ts,
                reason,
            };
            (abort, "user_stop")
        }
        _ => {
            let class = ending.failure_class.clone();
            let error = SessionEvent::Error {
                id: s.new_id(),
                turn_id: turn_id.clone(),
                ts,
                recoverable: false,
                message: format!("the turn failed: {}", class.as_deref().unwrap_or("error")),
                code: class,
                reason: None,
                details: None,
            };
            (error, "error")
        }
    };
    let complete = SessionEvent::Complete {
        id: s.new_id(),
        turn_id,
        ts,
        stop_reason: stop_reason.to_owned(),
        context_budget_exhausted_detail: None,
    };
    vec![first, complete]
}

/// Step 8: the terminal commit, `turn_state`, and the session's header.
fn finish(
    inner: &Inner,
    begun: &Begun,
    terminal: Value,
    ending: &Ending,
    events: usize,
    output: &Output,
) -> Result<TurnOutcome> {
    let ids = &begun.ids;
    let event = runtime_event(terminal)?;
    let now = inner.sources.now();
    let state = final_turn_state(
        (inner.sources.new_id(), &ids.turn_id, now),
        ending.status,
        &event,
        output.retained,
        begun.lineage.clone(),
    );
    // The turn's end in one sync: the terminal commit, then turn_state, then the header.
    // The header's own fields set on the one the session holds when they are queued.
    let then = [SessionRecord::Message(StoredMessage::from_value(state)?)];
    let sessions = &inner.stores.sessions;
    let header = match sessions.read_session_queued(&ids.session_id)? {
        Some(h) => sessions.patch_that_fits(
            &h,
            json!({"lastMessageAt": now, "hasUnread": true, "status": "active",
                   "statusUpdatedAt": now}),
        )?,
        None => None,
    };
    // A turn an error failed states the error's message in its run (§7), as the original does.
    let end = RunEnd {
        extras: None,
        failure_message: failure_message(event.value()),
    };
    let run = inner.stores.runs.commit_terminal_then(
        &ids.session_id,
        &ids.run_id,
        &event,
        end,
        (&then, header.as_ref()),
    )?;
    Ok(TurnOutcome {
        session_id: ids.session_id.clone(),
        turn_id: ids.turn_id.clone(),
        run_id: ids.run_id.clone(),
        user_message_id: begun.user_message_id.clone(),
        status: run.status().to_owned(),
        failure_class: run.value()["failureClass"].as_str().map(str::to_owned),
        summary: output.summary.clone(),
        event_count: events,
        started_at: begun.started_at,
        completed_at: event.ts(),
        fact_failures: 0,
    })
}
