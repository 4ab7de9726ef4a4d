//! Where a turn comes from, beyond its text (MAKA-MODEL §12 steps 1–4): its lineage (the turn,
//! run or session it continues, retries, regenerates or branches from) and its origin (a
//! scheduled task, a goal, an agent graph's wake or a legacy automation, §1.2's TurnOrigin),
//! each stated where the ledger has a place for it: the run header (§7), the invocation's
//! opening (§1.3), the user message and event (§6, §1.2) and every `turn_state` (§6).

use crate::error::{Error, Result};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// A turn's lineage: each id optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnLineage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_from_turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regenerated_from_turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_of_turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_from_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_from_run_id: Option<String>,
}

/// The lineage fields a `turn_state` holds (§6); the run header and the opening hold them all.
const TURN_LINEAGE: [&str; 5] = [
    "parentTurnId",
    "retriedFromTurnId",
    "regeneratedFromTurnId",
    "branchOfTurnId",
    "parentSessionId",
];

impl TurnLineage {
    /// Every field given, by its ledger name (the run header's and the opening's).
    pub fn fields(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// The fields a `turn_state` holds.
    pub fn turn_fields(&self) -> Map<String, Value> {
        turn_lineage(self.fields())
    }

    /// Refuses an empty id, by its field, before anything is written.
    pub fn check(&self) -> Result<()> {
        for (key, value) in self.fields() {
            if value.as_str().is_none_or(str::is_empty) {
                return Err(Error::InvalidInput(format!(
                    "lineage.{key}: an id is not empty"
                )));
            }
        }
        Ok(())
    }
}

/// The lineage fields a `turn_state` holds, of `record`'s members (recovery's final state
/// takes them from the turn's latest).
pub(super) fn turn_lineage(mut record: Map<String, Value>) -> Map<String, Value> {
    record.retain(|k, _| TURN_LINEAGE.contains(&k.as_str()));
    record
}

/// Refuses an origin whose ids are empty, by field, before anything is written (the
/// invocation's root takes none empty); the rest of its shape is the user event's to check.
pub fn check_origin(origin: &Value) -> Result<()> {
    let ids: &[&str] = match origin["kind"].as_str() {
        Some("scheduled_task") => &["scheduledTaskId"],
        Some("legacy_automation" | "automation") => &["automationId"],
        Some("goal") => &["goalId"],
        Some("agent_graph") => &["graphId", "wakeId", "attemptId"],
        _ => &[],
    };
    for id in ids {
        if origin[*id].as_str().is_none_or(str::is_empty) {
            return Err(Error::InvalidInput(format!(
                "origin.{id}: an id is not empty"
            )));
        }
    }
    Ok(())
}

/// The run header's fields an origin sets (§7: at most one of them, the wake with its attempt).
pub fn origin_run_fields(origin: &Value) -> Map<String, Value> {
    let pairs: &[(&str, &str)] = match origin["kind"].as_str() {
        Some("scheduled_task") => &[("scheduledTaskId", "scheduledTaskId")],
        Some("legacy_automation" | "automation") => &[("legacyAutomationId", "automationId")],
        Some("goal") => &[("goalId", "goalId")],
        Some("agent_graph") => &[
            ("agentGraphWakeId", "wakeId"),
            ("agentGraphWakeAttemptId", "attemptId"),
        ],
        _ => &[],
    };
    pairs
        .iter()
        .filter_map(|(to, from)| Some(((*to).to_owned(), origin.get(*from)?.clone())))
        .collect()
}

/// The invocation's root an origin makes (§1.3); a turn without one is the user's.
pub fn origin_root(origin: Option<&Value>) -> Value {
    let Some(o) = origin else {
        return json!({"kind": "user"});
    };
    match o["kind"].as_str() {
        Some("scheduled_task") => {
            json!({"kind": "scheduled_task", "scheduledTaskId": o["scheduledTaskId"]})
        }
        Some("goal") => json!({"kind": "goal", "goalId": o["goalId"]}),
        Some("agent_graph") => json!({"kind": "agent_graph_supervisor_wake",
                                      "wakeId": o["wakeId"], "attemptId": o["attemptId"]}),
        Some("legacy_automation" | "automation") => {
            json!({"kind": "legacy_automation", "legacyAutomationId": o["automationId"]})
        }
        _ => json!({"kind": "user"}),
    }
}
