//! Ending a run a restart interrupted (MAKA-MODEL §12, "Recovery at start"): a run whose
//! terminal RuntimeEvent is stored keeps it and its commit is finished; any other is failed
//! with the class and the reason `recovery_rules` gives, by a synthetic terminal event,
//! the header, `run_failed`, the turn's `turn_state` and the session's status. Every step is
//! skipped once done, so recovery interrupted and run again writes each step once.

use super::begin::runtime_event;
use super::lineage::turn_lineage;
use super::manager::Inner;
use super::mapping::{failure_message, final_turn_state, keeps_output};
use super::recovery_rules::{failure_class, is_recovery_class, recovery_reason};
use crate::error::Result;
use crate::index::SessionRecord;
use crate::model::{RunEvent, RunHeader, StoredMessage};
use crate::store::{HeaderPatch, RunEnd};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// What recovering one run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredRun {
    pub session_id: String,
    pub run_id: String,
    /// The rule's reason, or `runtime_event_terminal_fact` when the run's terminal event
    /// was already stored (unless an earlier recovery stored it: then that recovery's reason).
    pub recovery_reason: String,
    /// The run's status once ended: `failed`, `completed` or `cancelled`.
    pub status: String,
    /// The failed run's failure class, as its header states it.
    pub failure_class: Option<String>,
}

/// Ends `run`, whose terminal commit is missing, or whose turn's end a crash cut short after
/// its terminal RuntimeEvent (that event is kept and the rest written).
pub(crate) fn recover_run(inner: &Inner, run: &RunHeader) -> Result<RecoveredRun> {
    let stores = &inner.stores;
    let (session_id, run_id) = (run.session_id(), run.run_id());
    // Opened for writing once (the commit below needs it): every read after answers from the
    // session's view in memory instead of reading its files again.
    stores.runtime_events.open_session_now(session_id)?;
    // This reads every frame of the session's log, each checked by its CRC: a run whose records
    // are damaged fails here and is skipped (§12), so the run events' types can come from the
    // view without reading them back again.
    let events = stores
        .runtime_events
        .read_immutable_runtime_events(session_id, run_id)?;
    let run_event_types = stores.runs.run_event_types(session_id, run_id)?;
    let turn_id = run.value()["turnId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let stored_terminal = events
        .iter()
        .find(|e| !e.partial() && e.is_terminal())
        .cloned();
    // A kept terminal a turn wrote states its failure as the turn's end would have; recovery's
    // own states none (§12, step 2).
    let (terminal, reason, extras, message) = match stored_terminal {
        Some(t) => match recovered_by(&t) {
            // An earlier recovery's own event (it stopped after writing it): its end is
            // finished as that recovery would have, with its reason and its run_failed data.
            Some((reason, extras)) => (t, reason, Some(extras), None),
            None => {
                let message = failure_message(t.value());
                (t, "runtime_event_terminal_fact".to_owned(), None, message)
            }
        },
        None => {
            let corrupt = run_event_types.iter().any(|t| t == "event_corrupt");
            let last = run_event_types
                .iter()
                .rev()
                .map(String::as_str)
                .find(|t| *t != "event_corrupt");
            let has_terminal = run_event_types
                .iter()
                .any(|t| crate::model::RunEvent::is_terminal_type(t));
            let reason = recovery_reason(run.status(), last, has_terminal);
            let fc = failure_class(run_event_types.iter().map(String::as_str));
            let mut d = Map::new();
            d.insert("recoveryReason".into(), json!(reason));
            if let Some(last) = last {
                d.insert("lastEventType".into(), json!(last));
            }
            if corrupt {
                d.insert("eventCorrupt".into(), json!(true));
            }
            let invocation = run.value()["invocationId"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| events.first().map(|e| e.invocation_id().to_owned()))
                .unwrap_or_else(|| format!("recovery-{run_id}"));
            let mut delta = d.clone();
            delta.insert("recovered".into(), json!(true));
            delta.insert("failureClass".into(), json!(fc));
            let event = json!({
                "id": inner.sources.new_id(), "invocationId": invocation, "runId": run_id,
                "sessionId": session_id, "turnId": turn_id, "ts": inner.sources.now(),
                "partial": false, "role": "system", "author": "system", "status": "failed",
                "content": {"kind": "error", "code": fc, "reason": fc, "message": fc},
                "actions": {"endInvocation": true, "stateDelta": delta},
            });
            d.insert("recovered".into(), json!(true));
            (runtime_event(event)?, reason.to_owned(), Some(d), None)
        }
    };
    // The rest of the run's end goes in the same sync: the turn's state (session-inline runs
    // only, and only if it differs) and the session's status.
    let status = match terminal.status() {
        Some("completed") => "completed",
        Some("aborted" | "cancelled") => "aborted",
        _ => "failed",
    };
    let mut then = Vec::new();
    if run.value().get("parentRunId").is_none() {
        then.extend(turn_state(inner, session_id, &turn_id, status, &terminal)?);
    }
    let active = session_active(inner, session_id)?;
    let ended = stores.runs.commit_terminal_then(
        session_id,
        run_id,
        &terminal,
        RunEnd {
            extras,
            failure_message: message,
        },
        (&then, active.as_ref()),
    )?;
    // A run of this life (a parked turn's) is no longer in flight; one of an earlier life
    // was never counted here. The run has ended whatever follows: a lock a panic poisoned
    // leaves it named, for a later start to find ended (as a turn's end does).
    if let Ok(mut open) = super::manager::lock(&inner.open_runs) {
        open.ended(session_id, run_id);
    }
    Ok(RecoveredRun {
        session_id: session_id.to_owned(),
        run_id: run_id.to_owned(),
        recovery_reason: reason,
        status: ended.status().to_owned(),
        failure_class: ended.value()["failureClass"].as_str().map(str::to_owned),
    })
}

/// When `terminal` is the synthetic event of a recovery (failed, by the system, its code a
/// class recovery gives, its state delta saying `recovered` with a reason): that reason, and the
/// run_failed data that recovery wrote it with (the terminal commit adds the failure class).
fn recovered_by(terminal: &crate::event::RuntimeEvent) -> Option<(String, Map<String, Value>)> {
    let v = terminal.value();
    let synthetic = v["status"] == json!("failed")
        && v["author"] == json!("system")
        && v["content"]["code"].as_str().is_some_and(is_recovery_class);
    let delta = v["actions"]["stateDelta"].as_object()?;
    if !synthetic || delta.get("recovered") != Some(&json!(true)) {
        return None;
    }
    let reason = delta.get("recoveryReason")?.as_str()?.to_owned();
    let extras = [
        "recovered",
        "recoveryReason",
        "lastEventType",
        "eventCorrupt",
    ]
    .into_iter()
    .filter_map(|k| delta.get(k).map(|v| (k.to_owned(), v.clone())))
    .collect();
    Some((reason, extras))
}

/// The runs of `runs` (session `session_id`'s) that a recovery ended but a crash cut short
/// after its `run_failed`, the `turn_state` queued behind it lost: session-inline runs failed
/// with a class recovery gives, their terminal run event and recovery's own terminal RuntimeEvent
/// stored, whose turn's latest `turn_state` says something else (and no later run took the
/// turn). A turn with no `turn_state` claims nothing and is left as it is, as is a run any of
/// whose reads fails (its own ending reads it again where that is needed), so no ledger
/// recovery did not write is written to.
pub(crate) fn recoveries_cut_short(
    inner: &Inner,
    session_id: &str,
    runs: &[RunHeader],
) -> Vec<RunHeader> {
    let stores = &inner.stores;
    let ended_by_recovery = |run: &&RunHeader| {
        let v = run.value();
        run.status() == "failed"
            && v["failureClass"].as_str().is_some_and(is_recovery_class)
            && v.get("parentRunId").is_none()
            && stores
                .runs
                .run_event_types(session_id, run.run_id())
                .is_ok_and(|types| types.iter().any(|t| RunEvent::is_terminal_type(t)))
    };
    let candidates: Vec<&RunHeader> = runs.iter().filter(ended_by_recovery).collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    // One read of the session's messages for every candidate's turn.
    let Ok(messages) = stores.sessions.read_messages(session_id, None) else {
        return Vec::new();
    };
    let mut latest: HashMap<&str, &Value> = HashMap::new();
    for m in messages.iter().filter(|m| m.message_type() == "turn_state") {
        if let Some(turn) = m.turn_id() {
            latest.insert(turn, &m.value()["status"]);
        }
    }
    let recovery_ended = |run: &RunHeader| {
        let events = stores
            .runtime_events
            .read_immutable_runtime_events(session_id, run.run_id());
        events.is_ok_and(|events| {
            events
                .iter()
                .find(|e| !e.partial() && e.is_terminal())
                .is_some_and(|t| recovered_by(t).is_some())
        })
    };
    // A turn a later run took again (a caller may name its turn) is that run's to state.
    let last_of_turn = |run: &RunHeader| {
        let turn = &run.value()["turnId"];
        let mine = runs.iter().rposition(|r| &r.value()["turnId"] == turn);
        mine.is_some_and(|at| runs[at].run_id() == run.run_id())
    };
    candidates
        .into_iter()
        .filter(|run| {
            let turn = run.value()["turnId"].as_str().unwrap_or_default();
            latest.get(turn).is_some_and(|s| **s != json!("failed"))
                && last_of_turn(run)
                && recovery_ended(run)
        })
        .cloned()
        .collect()
}

/// The turn's latest `turn_state`, if it has one, and whether the turn kept any output
/// ([`keeps_output`]), as its own end would state it.
fn latest_turn_state(
    inner: &Inner,
    session_id: &str,
    turn_id: &str,
) -> Result<(Option<Value>, bool)> {
    let messages = inner
        .stores
        .sessions
        .read_messages(session_id, Some(turn_id))?;
    let latest = messages
        .iter()
        .rev()
        .find(|m| m.message_type() == "turn_state")
        .map(|m| m.value().clone());
    let retained = messages.iter().any(|m| keeps_output(m.value()));
    Ok((latest, retained))
}

/// The turn's final `turn_state`, unless its latest already says how the run ended.
fn turn_state(
    inner: &Inner,
    session_id: &str,
    turn_id: &str,
    status: &str,
    terminal: &crate::event::RuntimeEvent,
) -> Result<Option<SessionRecord>> {
    let (latest, retained) = latest_turn_state(inner, session_id, turn_id)?;
    if latest
        .as_ref()
        .is_some_and(|l| l["status"] == json!(status))
    {
        return Ok(None);
    }
    // The turn's lineage, as its latest state gives it.
    let lineage = match latest {
        Some(Value::Object(l)) => turn_lineage(l),
        _ => Map::new(),
    };
    let at = (inner.sources.new_id(), turn_id, inner.sources.now());
    let state = final_turn_state(at, status, terminal, retained, lineage);
    Ok(Some(SessionRecord::Message(StoredMessage::from_value(
        state,
    )?)))
}

/// The session's status set `active`, unless it is already.
fn session_active(inner: &Inner, session_id: &str) -> Result<Option<HeaderPatch>> {
    let Some(header) = inner.stores.sessions.read_session(session_id)? else {
        return Ok(None);
    };
    if header.value()["status"] == json!("active") {
        return Ok(None);
    }
    let fields = json!({"status": "active", "statusUpdatedAt": inner.sources.now()});
    inner.stores.sessions.patch_that_fits(&header, fields)
}
