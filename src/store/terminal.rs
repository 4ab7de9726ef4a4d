//! The terminal commit of a run (MAKA-MODEL §7), in its order: the terminal runtime event
//! (which seals the run), then the run's status, then exactly one run_completed, run_failed or
//! run_cancelled event. Each step that is already done is skipped, so a commit interrupted
//! anywhere is finished by running it again, and never leaves two terminal run events. The
//! steps are queued in the run's session log in that order and made durable by one sync, so a
//! crash keeps a prefix of them, which a repeat of the commit completes.

use super::runs::AgentRunStore;
use super::runtime_events::{Queued, Seen};
use super::HeaderPatch;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::index::SessionRecord;
use crate::model::{RunEvent, RunHeader};
use serde_json::{json, Map, Value};

/// What a terminal commit queues after its steps: records, then a new version of the
/// session's header.
pub(crate) type Then<'a> = (&'a [SessionRecord], Option<&'a HeaderPatch>);

/// The failure class of a failed run whose terminal event names none.
pub const UNKNOWN_CLASS: &str = "unknown";

/// What a terminal commit states beside its event: `extras` for the terminal run event's
/// `data`, and a failed run's `failureMessage` (§7: "if set"; the message of the error that
/// failed the turn).
#[derive(Debug, Default)]
pub(crate) struct RunEnd {
    pub extras: Option<Map<String, Value>>,
    pub failure_message: Option<String>,
}

fn refused(field: &str, why: String) -> Error {
    Error::InvalidRecord {
        record: "terminal runtime event",
        field: field.to_owned(),
        why,
    }
}

impl AgentRunStore {
    /// Ends run `run_id` of `session_id` with `terminal`, a final runtime event of the run
    /// whose status says how (`completed`, `failed`, or `aborted` / `cancelled` for a
    /// cancelled run). `extras` go into the terminal run event's `data`, beside `failureClass`
    /// (`unknown` unless the event's `actions.stateDelta.failureClass` names one) for a failed
    /// run; a cancelled run takes the event's `actions.stateDelta.abortSource` when it names
    /// one. Returns the run's header after the commit.
    pub fn commit_terminal(
        &self,
        session_id: &str,
        run_id: &str,
        terminal: &RuntimeEvent,
        extras: Option<Map<String, Value>>,
    ) -> Result<RunHeader> {
        let end = RunEnd {
            extras,
            failure_message: None,
        };
        self.commit_terminal_then(session_id, run_id, terminal, end, (&[], None))
    }

    /// [`AgentRunStore::commit_terminal`], then `then`'s records of the session (checked by
    /// their kind's decoder, as every record is) and the header its patch makes of the one the
    /// session holds then, queued behind its steps and made durable by the same sync: the
    /// runtime ends a turn (its `turn_state`, the session's header) in one.
    /// Crate-only: the records bypass the session store's own rules, which its callers keep.
    pub(crate) fn commit_terminal_then(
        &self,
        session_id: &str,
        run_id: &str,
        terminal: &RuntimeEvent,
        end: RunEnd,
        then: Then<'_>,
    ) -> Result<RunHeader> {
        // Everything is read before anything is queued, as queued: the steps follow it in the
        // session's log, so one sync makes what was read and the steps durable together.
        let (run, ended) = self.read_run_ended(session_id, run_id, Seen::Queued)?;
        let mut queued = None;
        let read = (session_id, run_id, &run, ended);
        let outcome = self.checked_steps(read, terminal, end, then, &mut queued);
        // Waited for even when a later step was refused: readers of the view wait for what it
        // shows, and nothing else would sync it. An answer or refusal that queued nothing rests
        // on what was read: it is given once that is durable.
        match queued {
            Some(last) => {
                last.wait_durable()?;
            }
            None => self.events().with_session_state(session_id, |_| ())?,
        }
        outcome
    }

    /// The checks of a terminal commit against the run as read, then its steps and `then`'s
    /// records queued; `queued` is left holding the last one queued.
    fn checked_steps(
        &self,
        (session_id, run_id, run, ended): (&str, &str, &RunHeader, bool),
        terminal: &RuntimeEvent,
        end: RunEnd,
        (then, header): Then<'_>,
        queued: &mut Option<Queued>,
    ) -> Result<RunHeader> {
        let v = run.value();
        let checks = [
            ("sessionId", terminal.session_id(), session_id),
            ("runId", terminal.run_id(), run_id),
            (
                "turnId",
                terminal.turn_id(),
                v["turnId"].as_str().unwrap_or_default(),
            ),
        ];
        for (field, got, want) in checks {
            if got != want {
                return Err(refused(field, format!("is {got:?}, the run's is {want:?}")));
            }
        }
        if terminal.partial() || !terminal.is_terminal() {
            return Err(refused(
                "status",
                "the event does not end the invocation".into(),
            ));
        }
        let status = match terminal.status() {
            Some("completed") => "completed",
            Some("failed") => "failed",
            Some("aborted") | Some("cancelled") => "cancelled",
            other => {
                return Err(refused(
                    "status",
                    format!("{other:?} says neither completed, failed nor cancelled"),
                ))
            }
        };
        if run.is_terminal() && run.status() != status {
            return Err(Error::InvalidInput(format!(
                "run {run_id} already ended {}, not {status}",
                run.status()
            )));
        }
        let run = self.queue_steps(run, terminal, status, ended, end, queued)?;
        for record in then {
            *queued = Some(
                self.events()
                    .queue_record_if(session_id, record, &|_| Ok(()))?,
            );
        }
        if let Some(patch) = header {
            *queued = Some(self.events().queue_header_patch(session_id, patch)?.0);
        }
        Ok(run)
    }

    /// Queues the steps of the commit that are not done yet, in their order; `queued` is left
    /// holding the last one queued. Steps 2 and 3 are built and checked first, so input one
    /// of them refuses (extras the run event cannot hold) leaves nothing written.
    fn queue_steps(
        &self,
        run: &RunHeader,
        terminal: &RuntimeEvent,
        status: &str,
        ended: bool,
        end: RunEnd,
        queued: &mut Option<Queued>,
    ) -> Result<RunHeader> {
        let (session_id, run_id) = (run.session_id(), run.run_id());
        let ts = json!(terminal.ts());
        let failure_class = terminal.value()["actions"]["stateDelta"]["failureClass"]
            .as_str()
            .unwrap_or(UNKNOWN_CLASS)
            .to_owned();
        // 2. The run's status.
        let next = if run.is_terminal() {
            None
        } else {
            let mut update = json!({"status": status, "updatedAt": ts, "completedAt": ts});
            if status == "failed" {
                update["failureClass"] = json!(failure_class);
                if let Some(message) = &end.failure_message {
                    update["failureMessage"] = json!(message);
                }
            }
            let source = &terminal.value()["actions"]["stateDelta"]["abortSource"];
            if status == "cancelled" && source.is_string() {
                update["abortSource"] = source.clone();
            }
            let next = run.updated(&update)?;
            self.events()
                .check_fits(RecordKind::Run, next.canonical_json())?;
            Some(next)
        };
        // 3. Exactly one terminal run event: data is {failureClass (only if failed),
        // …extras}, so the extras' own members win.
        let run_event = if ended {
            None
        } else {
            let mut data = Map::new();
            if status == "failed" {
                data.insert("failureClass".into(), json!(failure_class));
            }
            data.extend(end.extras.unwrap_or_default());
            let mut event = json!({
                "type": format!("run_{status}"),
                "id": format!("{run_id}:run_{status}"),
                "runId": run_id,
                "sessionId": session_id,
                "turnId": terminal.turn_id(),
                "ts": ts,
            });
            if !data.is_empty() {
                event["data"] = Value::Object(data);
            }
            let event = SessionRecord::RunEvent(RunEvent::from_value(event)?);
            self.events()
                .check_fits(event.kind(), event.canonical_json())?;
            Some(event)
        };
        // 1. The terminal runtime event: stored once (a repeat is answered from the store).
        *queued = self.events().queue_event(terminal)?.1;
        let base = run.canonical_json();
        let run = match next {
            Some(next) => {
                *queued = Some(self.events().queue_record_if(
                    session_id,
                    &SessionRecord::Run(next.clone()),
                    &|state| match state.runs.get(run_id) {
                        Some(r) if r.header == base => Ok(()),
                        _ => Err(Error::InvalidInput(format!(
                            "run {run_id} changed while its terminal commit was made; commit again"
                        ))),
                    },
                )?);
                next
            }
            None => run.clone(),
        };
        if let Some(event) = run_event {
            *queued = Some(
                self.events()
                    .queue_record_if(session_id, &event, &|_| Ok(()))?,
            );
        }
        Ok(run)
    }
}
