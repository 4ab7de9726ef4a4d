//! What each fact a backend streams writes (MAKA-MODEL §11, §12 step 7): its event, the
//! message it stores and the run event it makes, and for a request or its answer the status
//! the run and the session move to. Text and reasoning, token usage, tool calls and results
//! here; permission and sandbox requests in [`Requests`].

use super::super::events::SessionEvent;
use super::super::mapping::{place_tool_details, TurnIds};
use super::permissions::{Change, Requests};
use serde_json::{json, Value};
use std::collections::HashMap;

/// What one fact writes.
pub(super) struct Fact {
    pub event: Value,
    pub message: Option<Value>,
    pub run_event: Option<(&'static str, Value)>,
    /// For a request or an answer, what it does to the open requests (and so to the status
    /// of the run and the session).
    pub change: Option<Change>,
}

impl Fact {
    pub(super) fn new(event: Value, message: Option<Value>) -> Fact {
        Fact {
            event,
            message,
            run_event: None,
            change: None,
        }
    }
}

/// What the turn's facts so far leave for the next: the tools called, the reasoning of the
/// message to come, the requests open.
pub(super) struct Facts {
    /// The session's model, which an assistant message names.
    model: Value,
    tool_names: HashMap<String, String>,
    /// The reasoning of the message to come (`thinking` of §6's assistant message).
    thinking: Option<Value>,
    requests: Requests,
}

impl Facts {
    pub fn new(model: Value) -> Facts {
        Facts {
            model,
            tool_names: HashMap::new(),
            thinking: None,
            requests: Requests::default(),
        }
    }

    /// Applies a request's or an answer's change once its fact was queued or refused: the
    /// status the run and the session move to, if any ([`Requests::settle`]).
    pub fn settle(&mut self, change: Change, landed: bool) -> Option<&'static str> {
        self.requests.settle(change, landed)
    }

    /// The fact `event` is, if it is one of those mapped here.
    pub fn of(&mut self, ids: &TurnIds, event: &SessionEvent) -> Option<Fact> {
        let fact = match event {
            SessionEvent::TextComplete {
                id,
                ts,
                message_id,
                text,
                ..
            } => {
                let fields = json!({"content": {"kind": "text", "text": text},
                                    "refs": {"providerEventId": message_id}});
                let mut message = json!({"type": "assistant", "id": message_id,
                                         "turnId": ids.turn_id, "ts": ts, "text": text,
                                         "modelId": self.model});
                if let Some(thinking) = self.thinking.take() {
                    message["thinking"] = thinking;
                    message["contentOrder"] = json!(["thinking", "text"]);
                }
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                Fact::new(event, Some(message))
            }
            SessionEvent::ThinkingComplete {
                id,
                ts,
                message_id,
                text,
                signature,
                ..
            } => {
                let mut thinking = json!({"text": text});
                if let Some(signature) = signature {
                    thinking["signature"] = json!(signature);
                }
                let mut content = thinking.clone();
                content["kind"] = json!("thinking");
                let fields = json!({"content": content, "refs": {"providerEventId": message_id}});
                self.thinking = Some(thinking);
                Fact::new(ids.event(id, *ts, false, "model", "agent", fields), None)
            }
            SessionEvent::TokenUsage {
                id,
                ts,
                input,
                output,
                more,
                ..
            } => {
                let mut usage = (**more).clone();
                usage.insert("input".into(), json!(input));
                usage.insert("output".into(), json!(output));
                // The message's own members win over usage fields of the same name (which
                // the event's tokenUsage refuses anyway, failing the fact whole).
                let mut message = Value::Object(usage.clone());
                for (key, value) in [
                    ("type", json!("token_usage")),
                    ("id", json!(id)),
                    ("turnId", json!(ids.turn_id)),
                    ("ts", json!(ts)),
                ] {
                    message[key] = value;
                }
                // Usage is the ledger's, not the model's to read back.
                let fields = json!({"actions": {"tokenUsage": usage}, "modelVisibility": "hidden"});
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                Fact::new(event, Some(message))
            }
            SessionEvent::ToolStart {
                id,
                ts,
                tool_use_id,
                tool_name,
                args,
                details,
                ..
            } => {
                self.tool_names
                    .insert(tool_use_id.clone(), tool_name.clone());
                let mut fields = json!({"content": {"kind": "function_call", "id": tool_use_id,
                                        "name": tool_name, "args": args},
                                        "refs": {"toolCallId": tool_use_id}});
                let mut message = json!({"type": "tool_call", "id": tool_use_id,
                                         "turnId": ids.turn_id, "ts": ts,
                                         "toolName": tool_name, "args": args});
                place_tool_details(json!(details), &mut message, &mut fields);
                let started = json!({"toolUseId": tool_use_id, "toolName": tool_name});
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                Fact {
                    run_event: Some(("tool_started", started)),
                    ..Fact::new(event, Some(message))
                }
            }
            SessionEvent::ToolResult {
                id,
                ts,
                tool_use_id,
                is_error,
                content,
                details,
                ..
            } => {
                let name = self
                    .tool_names
                    .get(tool_use_id)
                    .cloned()
                    .unwrap_or_default();
                let mut fields = json!({"content": {"kind": "function_response",
                                        "id": tool_use_id, "name": name, "result": content,
                                        "isError": is_error},
                                        "refs": {"toolCallId": tool_use_id}});
                let mut message = json!({"type": "tool_result", "id": id, "turnId": ids.turn_id,
                                         "ts": ts, "toolUseId": tool_use_id,
                                         "isError": is_error, "content": content});
                place_tool_details(json!(details), &mut message, &mut fields);
                let kind = match is_error {
                    true => "tool_failed",
                    false => "tool_completed",
                };
                let event = ids.event(id, *ts, false, "tool", "tool", fields);
                Fact {
                    run_event: Some((kind, json!({"toolUseId": tool_use_id}))),
                    ..Fact::new(event, Some(message))
                }
            }
            SessionEvent::PermissionRequest {
                id, ts, request, ..
            }
            | SessionEvent::SandboxBoundaryRequest {
                id, ts, request, ..
            } => self.requests.request(ids, id, *ts, request),
            SessionEvent::PermissionDecisionAck {
                id, ts, decision, ..
            } => self.requests.decision(ids, (id, *ts), decision, false),
            SessionEvent::SandboxBoundaryDecisionAck {
                id,
                ts,
                request_id,
                decision,
                ..
            } => {
                let decision = json!({"requestId": request_id, "decision": decision});
                self.requests.decision(ids, (id, *ts), &decision, true)
            }
            SessionEvent::PermissionClosureAck {
                id,
                ts,
                request_id,
                reason,
                ..
            } => self.requests.closure(ids, (id, *ts), request_id, reason),
            _ => return None,
        };
        Some(fact)
    }
}
