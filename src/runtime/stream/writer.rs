//! What a turn's stream writes, event by event (MAKA-MODEL §12, step 7): deltas coalesced into
//! buffered partial events ([`Partials`]); facts ([`Facts`]: text and reasoning, tool calls
//! and results, token usage, permission and sandbox requests and answers; and errors) queued
//! durably and fail-open, waited for by the stream before it hands them on; status changes.

use super::super::batch::run_event_value;
use super::super::batch::Batch;
use super::super::begin::{run_event, runtime_event, Begun};
use super::super::blocking::on_disk;
use super::super::events::SessionEvent;
use super::super::manager::Inner;
use super::super::mapping::{ending_of, error_content, keeps_output, terminal_event, Ending};
use super::facts::{Fact, Facts};
use super::partials::Partials;
use crate::error::Result;
use crate::index::SessionRecord;
use crate::model::{RunEvent, StoredMessage};
use serde_json::{json, Value};

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
    facts: Facts,
    last_error: Option<SessionEvent>,
    pub(super) output: Output,
    pub(super) fact_failures: usize,
    /// The last batch of facts queued and not yet waited for, and how many facts are waiting.
    unsynced: Option<Batch<'a>>,
    unsynced_facts: usize,
    /// The run was last moved to `waiting_for_user` (a question or a permission request
    /// waits for the user).
    waiting: bool,
}

impl<'a> Writer<'a> {
    pub(super) fn new(inner: &'a Inner, begun: &'a Begun) -> Self {
        Writer {
            inner,
            begun,
            partials: Partials::default(),
            facts: Facts::new(begun.header.value()["model"].clone()),
            last_error: None,
            output: Output::default(),
            fact_failures: 0,
            unsynced: None,
            unsynced_facts: 0,
            waiting: false,
        }
    }

    /// Whether the run waits for the user: the last status it was moved to is
    /// `waiting_for_user`.
    pub(super) fn waiting_for_user(&self) -> bool {
        self.waiting
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
        if let Some(fact) = self.facts.of(ids, event) {
            if let SessionEvent::TextComplete { text, .. } = event {
                self.output.summary = text.clone();
            }
            self.fact(fact);
            return None;
        }
        match event {
            // Written above: deltas as partials, the rest as facts.
            SessionEvent::TextDelta { .. }
            | SessionEvent::ThinkingDelta { .. }
            | SessionEvent::TextComplete { .. }
            | SessionEvent::ThinkingComplete { .. }
            | SessionEvent::TokenUsage { .. }
            | SessionEvent::ToolStart { .. }
            | SessionEvent::ToolResult { .. }
            | SessionEvent::PermissionRequest { .. }
            | SessionEvent::PermissionDecisionAck { .. }
            | SessionEvent::PermissionClosureAck { .. }
            | SessionEvent::SandboxBoundaryRequest { .. }
            | SessionEvent::SandboxBoundaryDecisionAck { .. } => {}
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
    fn facts(
        &mut self,
        event: Value,
        message: Option<Value>,
        run_event: Option<(&str, Value)>,
    ) -> bool {
        let (inner, ids) = (self.inner, &self.begun.ids);
        // Every record of the fact is checked before one is queued: a record the ledger
        // refuses fails the fact whole, not after its event is written.
        let checked = || -> Result<_> {
            let event = runtime_event(event)?;
            let message = message.map(StoredMessage::from_value).transpose()?;
            let run_event = run_event
                .map(|(kind, data)| {
                    RunEvent::from_value(run_event_value(inner, ids, kind, Some(data)))
                })
                .transpose()?;
            Ok((event, message, run_event))
        };
        let mut batch = Batch::new(inner, &ids.session_id);
        let mut retained = false;
        let queued = checked().and_then(|(event, message, run_event)| {
            batch.decoded_event(&event)?;
            if let Some(m) = message {
                retained = keeps_output(m.value());
                batch.record(&SessionRecord::Message(m), &|_| Ok(()))?;
            }
            if let Some(e) = run_event {
                batch.record(&SessionRecord::RunEvent(e), &|_| Ok(()))?;
            }
            Ok(())
        });
        let ok = queued.is_ok();
        match ok {
            true => {
                self.unsynced_facts += 1;
                self.output.retained |= retained;
            }
            false => self.fact_failures += 1,
        }
        // A later record's durability covers every earlier one of the session: the last
        // batch that queued anything is the one to wait for.
        if batch.queued() > 0 {
            self.unsynced = Some(batch);
        }
        ok
    }

    /// A fact, then the status it moves the run and the session to (if any).
    fn fact(&mut self, fact: Fact) {
        let Fact {
            event,
            message,
            run_event,
            change,
        } = fact;
        let landed = self.facts(event, message, run_event);
        if let Some(status) = change.and_then(|c| self.facts.settle(c, landed)) {
            on_disk(|| self.status(status));
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
        if run.is_ok() {
            self.waiting = status == "waiting_for_user";
        }
        self.run_fact("run_status_changed", json!({"status": status}));
        let fields = json!({"status": status, "statusUpdatedAt": now});
        let header = inner.stores.sessions.set_fields(&ids.session_id, fields);
        self.fact_failures += usize::from(header.is_err());
    }
}
