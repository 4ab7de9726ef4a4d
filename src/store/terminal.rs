//! The terminal commit of a run (MAKA-MODEL §7), in its order: the terminal runtime event
//! (which seals the run), then the run's status, then exactly one run_completed, run_failed or
//! run_cancelled event. Each step that is already done is skipped, so a commit interrupted
//! anywhere is finished by running it again, and never leaves two terminal run events.

use super::runs::AgentRunStore;
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::model::RunHeader;
use crate::segment::Durability;
use serde_json::{json, Map, Value};

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
    /// run. Returns the run's header after the commit.
    pub fn commit_terminal(
        &self,
        session_id: &str,
        run_id: &str,
        terminal: &RuntimeEvent,
        extras: Option<Map<String, Value>>,
    ) -> Result<RunHeader> {
        let run = self.read_run(session_id, run_id)?;
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
        // 1. The terminal runtime event: stored once (a repeat is answered from the store).
        self.events().append(terminal, Durability::Durable)?;
        // 2. The run's status.
        let ts = json!(terminal.ts());
        let failure_class = terminal.value()["actions"]["stateDelta"]["failureClass"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned();
        let run = if run.is_terminal() {
            run
        } else {
            let mut update = json!({"status": status, "updatedAt": ts, "completedAt": ts});
            if status == "failed" {
                update["failureClass"] = json!(failure_class);
            }
            self.update_run(session_id, run_id, &update)?
        };
        // 3. Exactly one terminal run event.
        let events = self.read_events(session_id, run_id)?;
        if !events.iter().any(|(_, e)| e.is_terminal()) {
            let mut data = extras.unwrap_or_default();
            if status == "failed" {
                data.insert("failureClass".into(), json!(failure_class));
            }
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
            self.append_event(event)?;
        }
        Ok(run)
    }
}
