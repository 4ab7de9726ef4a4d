//! What a turn's stream writes, event by event (MAKA-MODEL §12, step 7): deltas coalesced into
//! buffered partial events ([`Partials`]); facts (text and reasoning, tool calls and results,
//! token usage, errors) queued durably and fail-open, waited for by the stream before it
//! hands them on; status changes.

use super::super::batch::Batch;
use super::super::begin::{run_event, Begun};
use super::super::blocking::on_disk;
use super::super::events::SessionEvent;
use super::super::manager::Inner;
use super::super::mapping::{
    ending_of, error_content, keeps_output, place_tool_details, terminal_event, Ending,
};
use super::partials::Partials;
use crate::error::Result;
use serde_json::{json, Value};
use std::collections::HashMap;

/// What a turn put out: its last complete text, and whether it kept any output
/// ([`keeps_output`]).
#[derive(Debug, Default)]
pub(super) struct Output {
    pub summary: String,
    pub retained: bool,
}

/// The stream's state as it is written.
pub(super) struct Writer<'a> {
    inner: &'a Inner,
    begun: &'a Begun,
    partials: Partials,
    /// The reasoning of the message to come (`thinking` of §6's assistant message).
    thinking: Option<Value>,
    last_error: Option<SessionEvent>,
    tool_names: HashMap<String, String>,
    pub(super) output: Output,
    pub(super) fact_failures: usize,
    /// The last batch of facts queued and not yet waited for, and how many facts are waiting.
    unsynced: Option<Batch<'a>>,
    unsynced_facts: usize,
}

impl<'a> Writer<'a> {
    pub(super) fn new(inner: &'a Inner, begun: &'a Begun) -> Self {
        Writer {
            inner,
            begun,
            partials: Partials::default(),
            thinking: None,
            last_error: None,
            tool_names: HashMap::new(),
            output: Output::default(),
            fact_failures: 0,
            unsynced: None,
            unsynced_facts: 0,
        }
    }

    /// Writes what `event` means; returns the terminal event once the turn has ended.
    pub(super) fn apply(
        &mut self,
        event: &SessionEvent,
        abort_source: &dyn Fn() -> Option<String>,
    ) -> Option<(Value, Ending)> {
        let ids = &self.begun.ids;
        let delta = match event {
            SessionEvent::TextDelta {
                id,
                message_id,
                text,
                ..
            } => Some(("text", id, message_id, text)),
            SessionEvent::ThinkingDelta {
                id,
                message_id,
                text,
                ..
            } => Some(("thinking", id, message_id, text)),
            _ => None,
        };
        if let Some((kind, id, message_id, text)) = delta {
            let delta = (kind, id.as_str(), message_id.as_str(), text.as_str());
            self.fact_failures += self.partials.delta(self.inner, self.begun, delta);
            return None;
        }
        self.flush();
        match event {
            SessionEvent::TextDelta { .. } | SessionEvent::ThinkingDelta { .. } => {}
            SessionEvent::TextComplete {
                id,
                ts,
                message_id,
                text,
                ..
            } => {
                self.output.summary = text.clone();
                let fields = json!({"content": {"kind": "text", "text": text},
                                    "refs": {"providerEventId": message_id}});
                let model = self.begun.header.value()["model"].clone();
                let mut message = json!({"type": "assistant", "id": message_id,
                                         "turnId": ids.turn_id, "ts": ts, "text": text,
                                         "modelId": model});
                if let Some(thinking) = self.thinking.take() {
                    message["thinking"] = thinking;
                    message["contentOrder"] = json!(["thinking", "text"]);
                }
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                self.facts(event, Some(message), None);
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
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                self.facts(event, None, None);
                self.thinking = Some(thinking);
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
                let mut message = json!({"type": "token_usage", "id": id, "turnId": ids.turn_id,
                                         "ts": ts});
                if let Value::Object(m) = &mut message {
                    m.extend(usage.clone());
                }
                // Usage is the ledger's, not the model's to read back.
                let fields = json!({"actions": {"tokenUsage": usage}, "modelVisibility": "hidden"});
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                self.facts(event, Some(message), None);
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
                self.facts(event, Some(message), Some(("tool_started", started)));
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
                let kind = if *is_error {
                    "tool_failed"
                } else {
                    "tool_completed"
                };
                let event = ids.event(id, *ts, false, "tool", "tool", fields);
                let ended = json!({"toolUseId": tool_use_id});
                self.facts(event, Some(message), Some((kind, ended)));
            }
            SessionEvent::UserQuestionRequest { .. } => on_disk(|| self.status("waiting_for_user")),
            SessionEvent::UserQuestionAnswerAck { .. } => on_disk(|| self.status("running")),
            SessionEvent::Error { id, ts, .. } => {
                let fields = json!({"content": error_content(event)});
                self.facts(
                    ids.event(id, *ts, false, "system", "system", fields),
                    None,
                    None,
                );
                self.last_error = Some(event.clone());
            }
            SessionEvent::Complete {
                id,
                ts,
                stop_reason,
                context_budget_exhausted_detail: detail,
                ..
            } => {
                let ending = ending_of(stop_reason, self.last_error.as_ref());
                let source = (ending.status == "aborted").then(abort_source).flatten();
                let mut e = terminal_event(
                    ids,
                    id,
                    *ts,
                    Some(stop_reason),
                    &ending,
                    self.last_error.as_ref(),
                    source.as_deref(),
                );
                if let Some(detail) = detail {
                    e["actions"]["stateDelta"]["contextBudgetExhaustedDetail"] = json!(detail);
                }
                return Some((e, ending));
            }
            SessionEvent::Abort { id, ts, reason, .. } => {
                let ending = Ending {
                    status: "aborted",
                    failure_class: None,
                };
                // A stop the runtime asked for names its source; an abort the backend made on
                // its own (a timeout, a crash, a redirect) is its reason's.
                let source = abort_source().unwrap_or_else(|| reason.clone());
                let e = terminal_event(ids, id, *ts, None, &ending, None, Some(&source));
                return Some((e, ending));
            }
        }
        None
    }

    /// Writes the deltas in hand as one partial event, buffered (not synced by itself).
    pub(super) fn flush(&mut self) {
        self.fact_failures += self.partials.flush(self.inner, self.begun);
    }

    /// A durable fact, with the message and the run event it makes: queued together and made
    /// durable by the next sync ([`Writer::settle`]), fail-open (§12): a failure is counted,
    /// and the turn goes on.
    fn facts(&mut self, event: Value, message: Option<Value>, run_event: Option<(&str, Value)>) {
        self.output.retained |= message.as_ref().is_some_and(keeps_output);
        let ids = &self.begun.ids;
        let mut batch = Batch::new(self.inner, &ids.session_id);
        let queue = || -> Result<()> {
            batch.event(event)?;
            if let Some(m) = message {
                batch.message(m)?;
            }
            if let Some((kind, data)) = run_event {
                batch.run_event(self.inner, ids, kind, Some(data))?;
            }
            Ok(())
        };
        match queue() {
            Ok(()) => self.unsynced_facts += 1,
            Err(_) => self.fact_failures += 1,
        }
        // A later record's durability covers every earlier one of the session: the last
        // batch that queued anything is the one to wait for.
        if batch.queued() > 0 {
            self.unsynced = Some(batch);
        }
    }

    /// Whether facts are queued and not yet known durable.
    pub(super) fn unsynced(&self) -> bool {
        self.unsynced.is_some()
    }

    /// Waits until the queued facts are durable (at once if a later sync, such as the
    /// terminal commit's, covered them); a failed sync counts each of them.
    pub(super) fn settle(&mut self) {
        if let Some(batch) = self.unsynced.take() {
            // `on_disk` may hand the worker on: not for a wait that cannot block.
            let durable = if batch.is_durable() {
                batch.wait()
            } else {
                on_disk(|| batch.wait())
            };
            if durable.is_err() {
                self.fact_failures += self.unsynced_facts;
            }
        }
        self.unsynced_facts = 0;
    }

    fn run_fact(&mut self, kind: &str, data: Value) {
        self.fact_failures +=
            usize::from(run_event(self.inner, &self.begun.ids, kind, Some(data)).is_err());
    }

    /// The run (and `run_status_changed`) and the session move to `status`.
    fn status(&mut self, status: &str) {
        let (inner, ids) = (self.inner, &self.begun.ids);
        let now = inner.sources.now();
        let update = json!({"status": status, "updatedAt": now});
        let run = inner
            .stores
            .runs
            .update_run(&ids.session_id, &ids.run_id, &update);
        self.fact_failures += usize::from(run.is_err());
        self.run_fact("run_status_changed", json!({"status": status}));
        let header = inner
            .stores
            .sessions
            .read_session(&ids.session_id)
            .ok()
            .flatten();
        if let Some(h) = header {
            let mut next = h.value().clone();
            next["status"] = json!(status);
            next["statusUpdatedAt"] = json!(now);
            self.fact_failures += usize::from(inner.stores.sessions.update_session(next).is_err());
        }
    }
}
