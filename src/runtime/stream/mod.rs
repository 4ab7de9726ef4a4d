//! A turn's stream and its end (MAKA-MODEL §12, steps 7–8): every backend event goes to the
//! caller; deltas are coalesced into buffered partial events (a delta is handed on at once);
//! facts (text, tool calls and results, errors) are appended durably and fail-open, and handed
//! on once durable; then, after the stream, the terminal commit, the final `turn_state` and
//! the session header. A stream that ends without a terminal event gets a synthetic one
//! (`missing_terminal_event`).

use super::batch::Batch;
use super::begin::{run_event, runtime_event, Begun};
use super::events::SessionEvent;
use super::manager::{Inner, TurnOutcome};
use super::mapping::{ending_of, error_content, terminal_event, Ending};
use crate::error::Result;
use crate::format::RecordKind;
use crate::model::{SessionHeader, StoredMessage};
use crate::segment::Durability;
use serde_json::{json, Value};
use std::collections::HashMap;
use tokio::sync::mpsc;

/// Deltas coalesced into one partial event at most.
const COALESCE: usize = 16;

/// The stream's state as it is written.
struct Writer<'a> {
    inner: &'a Inner,
    begun: &'a Begun,
    /// Deltas not yet written: (first delta's id, message id, text so far, count).
    pending: Option<(String, String, String, usize)>,
    last_error: Option<SessionEvent>,
    tool_names: HashMap<String, String>,
    summary: String,
    fact_failures: usize,
}

pub(super) async fn run(
    inner: &Inner,
    begun: Begun,
    mut from_backend: mpsc::Receiver<SessionEvent>,
    to_caller: mpsc::Sender<SessionEvent>,
    abort_source: impl Fn() -> Option<String>,
) -> Result<TurnOutcome> {
    let mut w = Writer {
        inner,
        begun: &begun,
        pending: None,
        last_error: None,
        tool_names: HashMap::new(),
        summary: String::new(),
        fact_failures: 0,
    };
    let mut events = 0usize;
    let mut terminal: Option<(Value, Ending)> = None;
    while let Some(event) = from_backend.recv().await {
        events += 1;
        if terminal.is_none() {
            terminal = w.apply(&event, &abort_source);
        }
        // Handed on after `apply`, so a fact reaches the caller once durable (a delta at once,
        // the end before its commit, which follows the stream), whole and uncopied. A caller
        // that stopped listening ends nothing: the turn is still written.
        let _ = to_caller.send(event).await;
    }
    w.flush();
    let (terminal, ending) = terminal.unwrap_or_else(|| {
        let s = &inner.sources;
        let ending = Ending {
            status: "failed",
            failure_class: Some("missing_terminal_event".into()),
        };
        let event = terminal_event(
            &begun.ids,
            &s.new_id(),
            s.now(),
            "error",
            &ending,
            None,
            None,
        );
        (event, ending)
    });
    finish(
        inner,
        &begun,
        terminal,
        &ending,
        events,
        w.summary,
        w.fact_failures,
    )
}

impl Writer<'_> {
    /// Writes what `event` means; returns the terminal event once the turn has ended.
    fn apply(
        &mut self,
        event: &SessionEvent,
        abort_source: &dyn Fn() -> Option<String>,
    ) -> Option<(Value, Ending)> {
        let ids = &self.begun.ids;
        if !matches!(event, SessionEvent::TextDelta { .. }) {
            self.flush();
        }
        match event {
            SessionEvent::TextDelta {
                id,
                message_id,
                text,
                ..
            } => {
                match &mut self.pending {
                    Some((_, m, buffered, n)) if m == message_id => {
                        buffered.push_str(text);
                        *n += 1;
                    }
                    _ => {
                        self.flush();
                        self.pending = Some((id.clone(), message_id.clone(), text.clone(), 1));
                    }
                }
                if self.pending.as_ref().is_some_and(|p| p.3 >= COALESCE) {
                    self.flush();
                }
            }
            SessionEvent::TextComplete {
                id,
                ts,
                message_id,
                text,
                ..
            } => {
                self.summary = text.clone();
                let fields = json!({"content": {"kind": "text", "text": text},
                                    "refs": {"providerEventId": message_id}});
                let model = self.begun.header.value()["model"].clone();
                let message = json!({"type": "assistant", "id": message_id, "turnId": ids.turn_id,
                                     "ts": ts, "text": text, "modelId": model});
                let event = ids.event(id, *ts, false, "model", "agent", fields);
                self.facts(event, Some(message), None);
            }
            SessionEvent::ToolStart {
                id,
                ts,
                tool_use_id,
                tool_name,
                args,
                ..
            } => {
                self.tool_names
                    .insert(tool_use_id.clone(), tool_name.clone());
                let fields = json!({"content": {"kind": "function_call", "id": tool_use_id,
                                    "name": tool_name, "args": args},
                                    "refs": {"toolCallId": tool_use_id}});
                let message = json!({"type": "tool_call", "id": tool_use_id, "turnId": ids.turn_id,
                                     "ts": ts, "toolName": tool_name, "args": args});
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
                ..
            } => {
                let name = self
                    .tool_names
                    .get(tool_use_id)
                    .cloned()
                    .unwrap_or_default();
                let fields = json!({"content": {"kind": "function_response", "id": tool_use_id,
                                    "name": name, "result": content, "isError": is_error},
                                    "refs": {"toolCallId": tool_use_id}});
                let message = json!({"type": "tool_result", "id": id, "turnId": ids.turn_id,
                                     "ts": ts, "toolUseId": tool_use_id, "isError": is_error,
                                     "content": content});
                let kind = if *is_error {
                    "tool_failed"
                } else {
                    "tool_completed"
                };
                let event = ids.event(id, *ts, false, "tool", "tool", fields);
                let ended = json!({"toolUseId": tool_use_id});
                self.facts(event, Some(message), Some((kind, ended)));
            }
            SessionEvent::UserQuestionRequest { .. } => self.status("waiting_for_user"),
            SessionEvent::UserQuestionAnswerAck { .. } => self.status("running"),
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
                ..
            } => {
                let ending = ending_of(stop_reason, self.last_error.as_ref());
                let source = (ending.status == "aborted").then(abort_source).flatten();
                let e = terminal_event(
                    ids,
                    id,
                    *ts,
                    stop_reason,
                    &ending,
                    self.last_error.as_ref(),
                    source.as_deref(),
                );
                return Some((e, ending));
            }
            SessionEvent::Abort { id, ts, .. } => {
                let ending = Ending {
                    status: "aborted",
                    failure_class: None,
                };
                let source = abort_source().unwrap_or_else(|| "stop_button".into());
                let e = terminal_event(ids, id, *ts, "user_stop", &ending, None, Some(&source));
                return Some((e, ending));
            }
        }
        None
    }

    /// Writes the coalesced deltas as one partial event, buffered (not synced by itself).
    fn flush(&mut self) {
        let Some((id, message_id, text, _)) = self.pending.take() else {
            return;
        };
        let fields = json!({"content": {"kind": "text", "text": text},
                            "refs": {"providerEventId": message_id}});
        let event = self.begun.ids.event(
            &id,
            self.inner.sources.now(),
            true,
            "model",
            "agent",
            fields,
        );
        let written = runtime_event(event).and_then(|e| {
            self.inner
                .stores
                .runtime_events
                .append(&e, Durability::Buffered)
        });
        self.fact_failures += usize::from(written.is_err());
    }

    /// A durable fact, with the message and the run event it makes: written together, made
    /// durable by one sync, fail-open (§12): a failure is counted, and the turn goes on.
    fn facts(&mut self, event: Value, message: Option<Value>, run_event: Option<(&str, Value)>) {
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
        let queued = queue();
        let durable = batch.wait();
        self.fact_failures += usize::from(queued.and(durable).is_err());
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

/// Step 8: the terminal commit, `turn_state`, and the session's header.
fn finish(
    inner: &Inner,
    begun: &Begun,
    terminal: Value,
    ending: &Ending,
    events: usize,
    summary: String,
    fact_failures: usize,
) -> Result<TurnOutcome> {
    let ids = &begun.ids;
    let event = runtime_event(terminal)?;
    let abort_source = event.value()["actions"]["stateDelta"]["abortSource"]
        .as_str()
        .map(str::to_owned);
    let now = inner.sources.now();
    let mut state = json!({"type": "turn_state", "id": inner.sources.new_id(), "turnId": ids.turn_id,
                           "ts": now, "status": ending.status, "partialOutputRetained": false});
    match ending.status {
        "failed" => state["errorClass"] = json!(ending.failure_class),
        "aborted" => {
            state["abortedAt"] = json!(event.ts());
            if let Some(source) = &abort_source {
                state["abortSource"] = json!(source);
            }
        }
        _ => {}
    }
    // The turn's end in one sync: the terminal commit, then turn_state, then the header.
    let mut then = vec![(
        RecordKind::Message,
        StoredMessage::from_value(state)?
            .canonical_json()
            .to_owned(),
    )];
    if let Some(h) = inner.stores.sessions.read_session(&ids.session_id)? {
        let mut next = h.value().clone();
        next["lastMessageAt"] = json!(now);
        next["hasUnread"] = json!(true);
        next["status"] = json!("active");
        next["statusUpdatedAt"] = json!(now);
        then.push((
            RecordKind::SessionHeader,
            SessionHeader::from_value(next)?.canonical_json().to_owned(),
        ));
    }
    let run = inner.stores.runs.commit_terminal_then(
        &ids.session_id,
        &ids.run_id,
        &event,
        None,
        &then,
    )?;
    if let Some(slot) = begun.slot {
        super::manager::lock(&inner.open_runs)?.clear(slot);
    }
    Ok(TurnOutcome {
        session_id: ids.session_id.clone(),
        turn_id: ids.turn_id.clone(),
        run_id: ids.run_id.clone(),
        user_message_id: begun.user_message_id.clone(),
        status: run.status().to_owned(),
        failure_class: run.value()["failureClass"].as_str().map(str::to_owned),
        summary,
        event_count: events,
        started_at: begun.started_at,
        completed_at: event.ts(),
        fact_failures,
    })
}
