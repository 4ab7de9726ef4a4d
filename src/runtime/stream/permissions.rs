//! A turn's permission and sandbox requests and their answers (MAKA-MODEL §1.4, §6, §7). Each
//! is a durable fact: an event whose actions hold the request, the decision or the closure; the
//! run event recovery reads (`permission_requested`, `permission_decided`, `permission_failed`,
//! `sandbox_escalation_requested`, `_granted`, `_denied`); and for a decision on a request of
//! this turn, its `permission_decision` message. While a request is open the run and the
//! session wait for the user.

use super::super::mapping::TurnIds;
use super::facts::Fact;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The requests of the turn, by request id: the tool use and tool each is for, which the
/// decision's message names.
#[derive(Default)]
pub(super) struct Requests(HashMap<String, (Value, Value)>);

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
    /// A permission request (a sandbox escalation with `sandbox`).
    pub fn request(&mut self, ids: &TurnIds, id: &str, ts: f64, request: &Value) -> Fact {
        let sandbox = request["kind"] == "sandbox_escalation";
        let field = |k: &str| request.get(k).cloned().unwrap_or(Value::Null);
        if let Some(request_id) = request["requestId"].as_str() {
            let tool = (field("toolUseId"), field("toolName"));
            self.0.insert(request_id.to_owned(), tool);
        }
        let data = json!({"requestId": field("requestId"), "toolUseId": field("toolUseId"),
                          "toolName": field("toolName"), "category": field("category"),
                          "kind": field("kind")});
        let kind = match sandbox {
            true => "sandbox_escalation_requested",
            false => "permission_requested",
        };
        Fact {
            event: event(ids, id, ts, json!({"permissionRequest": request})),
            message: None,
            run_event: Some((kind, data)),
            status: Some("waiting_for_user"),
        }
    }

    /// A decision on a permission request (`sandbox`: on a sandbox escalation).
    pub fn decision(
        &mut self,
        ids: &TurnIds,
        (id, ts): (&str, f64),
        decision: &Value,
        sandbox: bool,
    ) -> Fact {
        let request_id = decision["requestId"].clone();
        let allowed = decision["decision"] == "allow";
        let kind = match (sandbox, allowed) {
            (true, true) => "sandbox_escalation_granted",
            (true, false) => "sandbox_escalation_denied",
            (false, _) => "permission_decided",
        };
        let asked = request_id.as_str().and_then(|r| self.0.remove(r));
        // §6's message names the tool use, which only the request states.
        let message = asked.map(|(tool_use_id, tool_name)| {
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
                               "turnId": ids.turn_id, "ts": ts, "toolUseId": tool_use_id,
                               "toolName": tool_name, "decision": decision["decision"]});
            m.extend(fixed.as_object().cloned().unwrap_or_default());
            Value::Object(m)
        });
        Fact {
            event: event(ids, id, ts, json!({"permissionDecision": decision})),
            message,
            run_event: Some((
                kind,
                json!({"requestId": request_id, "decision": decision["decision"]}),
            )),
            status: Some("running"),
        }
    }

    /// A permission request closed undecided.
    pub fn closure(
        &mut self,
        ids: &TurnIds,
        (id, ts): (&str, f64),
        request_id: &str,
        reason: &str,
    ) -> Fact {
        self.0.remove(request_id);
        let closed = json!({"requestId": request_id, "reason": reason});
        Fact {
            event: event(ids, id, ts, json!({"permissionClosureAccepted": closed})),
            message: None,
            run_event: Some(("permission_failed", closed)),
            status: Some("running"),
        }
    }
}
