//! A turn's permission and sandbox requests and their answers (MAKA-MODEL §1.4, §6, §7). Each
//! is a durable fact: an event whose actions hold the request, the decision or the closure; the
//! run event recovery reads (`permission_requested`, `_decided`, `_failed` for a permission,
//! `sandbox_escalation_requested`, `_granted`, `_denied`, `_failed` for a sandbox escalation:
//! the request's `kind` decides which, also for its answer); and for a decision on a request
//! of this turn, its `permission_decision` message. While a request is open the run and the
//! session wait for the user; they run again once every open request is answered.

use super::super::mapping::TurnIds;
use super::facts::Fact;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// An open request: the tool use and tool it is for (which a decision's message names), and
/// whether it is a sandbox escalation.
pub(super) struct Open {
    tool_use_id: Value,
    tool_name: Value,
    sandbox: bool,
}

/// What a request or an answer does to the open requests, once its fact is queued or refused.
pub(super) enum Change {
    Open(String, Open),
    Close(String),
}

/// The turn's open requests, by request id.
#[derive(Default)]
pub(super) struct Requests(HashMap<String, Open>);

/// The event of a request or an answer: role and author system, `actions` as given.
fn event(ids: &TurnIds, id: &str, ts: f64, actions: Value) -> Value {
    ids.event(
        id,
        ts,
        false,
        "system",
        "system",
        json!({"actions": actions}),
    )
}

impl Requests {
    /// A permission request or a sandbox escalation (by its `kind`).
    pub fn request(&self, ids: &TurnIds, id: &str, ts: f64, request: &Value) -> Fact {
        let sandbox = request["kind"] == "sandbox_escalation";
        let field = |k: &str| request.get(k).cloned().unwrap_or(Value::Null);
        let data = json!({"requestId": field("requestId"), "toolUseId": field("toolUseId"),
                          "toolName": field("toolName"), "category": field("category"),
                          "kind": field("kind")});
        let kind = match sandbox {
            true => "sandbox_escalation_requested",
            false => "permission_requested",
        };
        let open = Open {
            tool_use_id: field("toolUseId"),
            tool_name: field("toolName"),
            sandbox,
        };
        let change = request["requestId"]
            .as_str()
            .map(|r| Change::Open(r.to_owned(), open));
        Fact {
            run_event: Some((kind, data)),
            change,
            ..Fact::new(
                event(ids, id, ts, json!({"permissionRequest": request})),
                None,
            )
        }
    }

    /// A decision on a request; `sandbox_ack` when it came as a sandbox boundary's answer,
    /// which decides the run event only for a request this turn did not see.
    pub fn decision(
        &self,
        ids: &TurnIds,
        (id, ts): (&str, f64),
        decision: &Value,
        sandbox_ack: bool,
    ) -> Fact {
        let request_id = decision["requestId"].clone();
        let asked = request_id.as_str().and_then(|r| self.0.get(r));
        let allowed = decision["decision"] == "allow";
        let kind = match (asked.map_or(sandbox_ack, |a| a.sandbox), allowed) {
            (true, true) => "sandbox_escalation_granted",
            (true, false) => "sandbox_escalation_denied",
            (false, _) => "permission_decided",
        };
        // §6's message names the tool use, which only the request states.
        let message = asked.map(|asked| {
            let mut m = Map::new();
            for key in [
                "rememberForTurn",
                "reviewer",
                "rationale",
                "riskLevel",
                "hint",
            ] {
                if let Some(v) = decision.get(key) {
                    m.insert(key.into(), v.clone());
                }
            }
            let fixed = json!({"type": "permission_decision", "id": request_id,
                               "turnId": ids.turn_id, "ts": ts, "toolUseId": asked.tool_use_id,
                               "toolName": asked.tool_name, "decision": decision["decision"]});
            m.extend(fixed.as_object().cloned().unwrap_or_default());
            Value::Object(m)
        });
        let data = json!({"requestId": request_id, "decision": decision["decision"]});
        Fact {
            run_event: Some((kind, data)),
            change: request_id.as_str().map(|r| Change::Close(r.to_owned())),
            ..Fact::new(
                event(ids, id, ts, json!({"permissionDecision": decision})),
                message,
            )
        }
    }

    /// A request closed undecided.
    pub fn closure(
        &self,
        ids: &TurnIds,
        (id, ts): (&str, f64),
        request_id: &str,
        reason: &str,
    ) -> Fact {
        let sandbox = self.0.get(request_id).is_some_and(|a| a.sandbox);
        let kind = match sandbox {
            true => "sandbox_escalation_failed",
            false => "permission_failed",
        };
        let closed = json!({"requestId": request_id, "reason": reason});
        Fact {
            run_event: Some((kind, closed.clone())),
            change: Some(Change::Close(request_id.to_owned())),
            ..Fact::new(
                event(ids, id, ts, json!({"permissionClosureAccepted": closed})),
                None,
            )
        }
    }

    /// Applies `change` once its fact was queued (`landed`) or refused: a request is tracked
    /// only once its fact landed (a decision's message names only a request the ledger
    /// holds), an answer closes its request either way. The status the run and the session
    /// move to: waiting for the user on a request, running once no request is open.
    pub fn settle(&mut self, change: Change, landed: bool) -> Option<&'static str> {
        match change {
            Change::Open(id, open) => {
                if landed {
                    self.0.insert(id, open);
                }
                Some("waiting_for_user")
            }
            Change::Close(id) => {
                self.0.remove(&id);
                self.0.is_empty().then_some("running")
            }
        }
    }
}
