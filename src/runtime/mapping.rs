//! How a turn's stream becomes ledger records (MAKA-MODEL §11): each `SessionEvent` that is a
//! fact maps to a RuntimeEvent of the same id, deltas to partial events, and the end of the
//! turn to its terminal event by the stop-reason table.

use super::events::SessionEvent;
use crate::event::RuntimeEvent;
use crate::store::UNKNOWN_CLASS;
use serde_json::{json, Map, Value};

/// The ids every RuntimeEvent of one turn carries.
#[derive(Debug, Clone)]
pub struct TurnIds {
    pub session_id: String,
    pub invocation_id: String,
    pub run_id: String,
    pub turn_id: String,
}

impl TurnIds {
    /// A RuntimeEvent of this turn: the envelope, with `fields` (content, actions, …) merged in.
    pub fn event(
        &self,
        id: &str,
        ts: f64,
        partial: bool,
        role: &str,
        author: &str,
        fields: Value,
    ) -> Value {
        let mut e = json!({
            "id": id, "invocationId": self.invocation_id, "runId": self.run_id,
            "sessionId": self.session_id, "turnId": self.turn_id, "ts": ts,
            "partial": partial, "role": role, "author": author,
        });
        if let (Some(e), Value::Object(fields)) = (e.as_object_mut(), fields) {
            e.extend(fields);
        }
        e
    }
}

/// How a turn ended: the turn status, the run-event status and the failure class (§11).
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// `completed`, `failed` or `aborted` (the RuntimeEvent's status and the turn's).
    pub status: &'static str,
    pub failure_class: Option<String>,
}

/// The ending a `complete{stop_reason}` means, after `error` (the last error event, if any).
pub fn ending_of(stop_reason: &str, error: Option<&SessionEvent>) -> Ending {
    let failed = |class: String| Ending {
        status: "failed",
        failure_class: Some(class),
    };
    match stop_reason {
        "end_turn" | "plan_handoff" | "graph_yield" | "permission_handoff" | "max_tokens" => {
            match error {
                Some(e) => failed(error_class(e)),
                None => Ending {
                    status: "completed",
                    failure_class: None,
                },
            }
        }
        "user_stop" => Ending {
            status: "aborted",
            failure_class: None,
        },
        "step_limit" => failed("tool_step_cap_reached".into()),
        "context_budget_exhausted" => failed("context_budget_exhausted".into()),
        "error" => failed(
            error
                .map(error_class)
                .unwrap_or_else(|| "runtime_error".into()),
        ),
        _ => failed("runtime_error".into()),
    }
}

/// The failure class an error names: its reason, else its code, else `runtime_error`.
fn error_class(error: &SessionEvent) -> String {
    match error {
        SessionEvent::Error { reason, code, .. } => reason
            .clone()
            .or_else(|| code.clone())
            .unwrap_or_else(|| "runtime_error".into()),
        _ => "runtime_error".into(),
    }
}

/// The error content of an error event.
pub fn error_content(error: &SessionEvent) -> Value {
    let SessionEvent::Error {
        message,
        code,
        reason,
        details,
        ..
    } = error
    else {
        return json!({"kind": "error", "message": "runtime_error"});
    };
    let mut c = json!({"kind": "error", "message": message});
    if let Some(code) = code {
        c["code"] = json!(code);
    }
    if let Some(reason) = reason {
        c["reason"] = json!(reason);
    }
    if let Some(details) = details {
        c["details"] = details.clone();
    }
    c
}

/// The terminal RuntimeEvent of a turn that ended as `ending` (§11): role and author system,
/// `endInvocation`, the stop reason (a `complete`'s; an `abort` states none), failure class
/// and abort source in its state delta; a failure caused by an error carries that error's
/// content.
pub fn terminal_event(
    ids: &TurnIds,
    id: &str,
    ts: f64,
    stop_reason: Option<&str>,
    ending: &Ending,
    error: Option<&SessionEvent>,
    abort_source: Option<&str>,
) -> Value {
    let mut delta = Map::new();
    if let Some(stop_reason) = stop_reason {
        delta.insert("stopReason".into(), json!(stop_reason));
    }
    if let Some(class) = &ending.failure_class {
        delta.insert("failureClass".into(), json!(class));
    }
    if let Some(source) = abort_source {
        delta.insert("abortSource".into(), json!(source));
    }
    let mut fields = json!({
        "status": ending.status,
        "actions": {"endInvocation": true, "stateDelta": delta},
    });
    if ending.status == "failed" {
        if let Some(e) = error {
            fields["content"] = error_content(e);
        }
    }
    ids.event(id, ts, false, "system", "system", fields)
}

/// The failure message of a failed run whose terminal event is `terminal` (§7): the message
/// of the error that failed it, which a failed terminal's error content copies.
pub fn failure_message(terminal: &Value) -> Option<String> {
    let content = &terminal["content"];
    let failed = terminal["status"] == json!("failed") && content["kind"] == json!("error");
    failed
        .then(|| content["message"].as_str().map(str::to_owned))
        .flatten()
}

/// Whether a stored message (its JSON) is output a turn keeps, which its `turn_state` states
/// as `partialOutputRetained`: an assistant text that is not blank, or a tool's result.
pub fn keeps_output(message: &Value) -> bool {
    match message["type"].as_str() {
        Some("assistant") => message["text"]
            .as_str()
            .is_some_and(|t| !t.trim().is_empty()),
        Some("tool_result") => true,
        _ => false,
    }
}

/// Places a tool call's or result's optional fields (§11, `details` as an object) where the
/// ledger keeps them: each in the stored message, whose type has a place for every one but
/// `operationId` (§6); the ids also in the event's refs (§1.5); providerOptions,
/// providerExecuted and providerOutput also in its content (§1.2); displayName and intent also
/// in its actions' state delta (§2's third vector); origin and modelVisibility also on its
/// envelope when they are values the envelope takes (§1.1), so a value only the message can
/// hold costs the fact nothing. `event` is the event's fields before the envelope.
pub fn place_tool_details(details: Value, message: &mut Value, event: &mut Value) {
    let Value::Object(details) = details else {
        return;
    };
    for (key, value) in details {
        match key.as_str() {
            "operationId" => event["refs"][&key] = value,
            "stepId" | "parentToolCallId" | "parentOperationId" => {
                event["refs"][&key] = value.clone();
                message[&key] = value;
            }
            "providerOptions" | "providerExecuted" | "providerOutput" => {
                event["content"][&key] = value.clone();
                message[&key] = value;
            }
            // As MAKA-MODEL §2's third vector holds them: a tool call's display name and
            // intent in its event's state delta too.
            "displayName" | "intent" => {
                event["actions"]["stateDelta"][&key] = value.clone();
                message[&key] = value;
            }
            "origin" | "modelVisibility" => {
                let enveloped = matches!(
                    (key.as_str(), value.as_str()),
                    ("origin", Some("provider" | "code_mode"))
                        | ("modelVisibility", Some("visible" | "hidden"))
                );
                if enveloped {
                    event[&key] = value.clone();
                }
                message[&key] = value;
            }
            _ => message[&key] = value,
        }
    }
}

/// A turn's final `turn_state` (§6, §12 step 8), once its run ended with `terminal`: the turn's
/// `status` (`completed`, `failed` or `aborted`), whether it kept output, its lineage, and as
/// the terminal states it: a failure's class (`unknown` when it names none), an abort's time
/// and source. The turn's own end and recovery's write it alike.
pub fn final_turn_state(
    (id, turn_id, ts): (String, &str, f64),
    status: &str,
    terminal: &RuntimeEvent,
    retained: bool,
    lineage: Map<String, Value>,
) -> Value {
    let mut state = Map::new();
    state.extend(lineage);
    for (key, value) in [
        ("type", json!("turn_state")),
        ("id", json!(id)),
        ("turnId", json!(turn_id)),
        ("ts", json!(ts)),
        ("status", json!(status)),
        ("partialOutputRetained", json!(retained)),
    ] {
        state.insert(key.into(), value);
    }
    let delta = &terminal.value()["actions"]["stateDelta"];
    match status {
        "failed" => {
            let class = delta["failureClass"].as_str().unwrap_or(UNKNOWN_CLASS);
            state.insert("errorClass".into(), json!(class));
        }
        "aborted" => {
            state.insert("abortedAt".into(), json!(terminal.ts()));
            if delta["abortSource"].is_string() {
                state.insert("abortSource".into(), delta["abortSource"].clone());
            }
        }
        _ => {}
    }
    Value::Object(state)
}
