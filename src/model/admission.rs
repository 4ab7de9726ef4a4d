//! Root-turn admissions (MAKA-MODEL §8): the record that admits a root turn, with its
//! execution descriptor, and the rule by which a repeat is `existing` or a `conflict`.

use super::fields::{any, object, safe_id, string_or_null};
use crate::claims::AgentGraphIntentClaim;
use crate::event::path::Path;
use crate::event::schema::fields::Decoded;
use crate::event::schema::fields::{
    decode_object, expect_array, expect_object, invalid, Obj, Result as FieldResult,
};
use serde_json::Value;

const RECORD: &str = "root-turn admission";

/// The most source messages one admission carries.
const SOURCE_MESSAGES_MAX: usize = 64;

/// Every execution descriptor kind (HEAD's; the \[SPINE\] additions are not read).
pub const DESCRIPTOR_KINDS: &[&str] = &[
    "external_message",
    "regenerate",
    "context_compact",
    "scheduled_task",
    "legacy_automation",
    "goal",
    "agent_graph_supervisor_wake",
    "safe_boundary_continuation",
    "linked_child_initial",
    "linked_child_resume",
    "linked_child_provider_retry",
    "claimed_agent_graph_intent",
];

/// The orchestration modes a turn may ask for, and where such a request may come from.
const ORCHESTRATION_MODES: &[&str] = &["default", "swarm", "graph"];
const ORCHESTRATION_SOURCES: &[&str] = &["slash_command", "host_api"];

/// Kinds whose admission has no user message.
const WITHOUT_USER_MESSAGE: &[&str] = &[
    "safe_boundary_continuation",
    "context_compact",
    "linked_child_provider_retry",
];

/// Kinds whose admission has no normalized input.
const WITHOUT_INPUT: &[&str] = &["safe_boundary_continuation", "context_compact"];

/// The members two admissions of one turn must share to be the same admission.
const PAYLOAD: &[&str] = &[
    "execution",
    "turnOrchestration",
    "skillInvocation",
    "normalizedInput",
    "sourceMessages",
];

record_type!(
    /// A decoded root-turn admission with its canonical JSON.
    RootTurnAdmission,
    RECORD,
    decode
);

impl RootTurnAdmission {
    /// The admitted turn.
    pub fn turn_id(&self) -> &str {
        self.0.value["turnId"].as_str().unwrap_or_default()
    }

    /// The execution descriptor's kind.
    pub fn execution_kind(&self) -> &str {
        self.0.value["execution"]["kind"]
            .as_str()
            .unwrap_or_default()
    }

    /// True when `other`, for the same turn, is the same admission (§8): the same previous
    /// root turn and an equal payload. Then the stored record answers (`existing`); otherwise
    /// the repeat is a conflict.
    pub fn same_admission(&self, other: &RootTurnAdmission) -> bool {
        let (a, b) = (&self.0.value, &other.0.value);
        a["previousRootTurnId"] == b["previousRootTurnId"]
            && PAYLOAD.iter().all(|&key| a.get(key) == b.get(key))
    }
}

fn decode(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), read_admission)
}

fn read_admission(a: &mut Obj) -> FieldResult<()> {
    a.number_literal("schemaVersion", 1)?;
    for key in ["sessionId", "turnId", "runId"] {
        a.required(key, safe_id)?;
    }
    let kind = a
        .raw_required("execution")?
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let ids = [
        a.input()["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        a.input()["turnId"].as_str().unwrap_or_default().to_owned(),
        a.input()["runId"].as_str().unwrap_or_default().to_owned(),
    ];
    a.object("execution", |e| read_descriptor(e, &ids))?;
    let user = a.required("userMessageId", |v, p| {
        string_or_null(v, p)?;
        Ok(v.is_string())
    })?;
    if user == WITHOUT_USER_MESSAGE.contains(&kind.as_str()) {
        let why = if user {
            format!("must be null for a {kind} admission")
        } else {
            format!("is required for a {kind} admission")
        };
        return Err(invalid(&a.at("userMessageId"), why));
    }
    let previous = a.required("previousRootTurnId", |v, p| {
        string_or_null(v, p)?;
        Ok(v.as_str().map(str::to_owned))
    })?;
    if previous.as_deref() == Some(ids[1].as_str()) {
        return Err(invalid(
            &a.at("previousRootTurnId"),
            "must differ from turnId",
        ));
    }
    // A MessageContent (an object), or null.
    let input = a.required("normalizedInput", |v, p| match v {
        Value::Null => Ok(false),
        Value::Object(_) => Ok(true),
        _ => Err(invalid(p, "must be a MessageContent object or null")),
    })?;
    if input == WITHOUT_INPUT.contains(&kind.as_str()) {
        let why = if input {
            format!("must be null for a {kind} admission")
        } else {
            format!("is required for a {kind} admission")
        };
        return Err(invalid(&a.at("normalizedInput"), why));
    }
    let external = kind == "external_message";
    let orchestration = a.opt_object("turnOrchestration", read_orchestration)?;
    let wake = kind == "agent_graph_supervisor_wake";
    if wake {
        let host_graph = a
            .input()
            .get("turnOrchestration")
            .is_some_and(|o| o["mode"] == "graph" && o["source"] == "host_api");
        if !host_graph {
            return Err(invalid(
                &a.at("turnOrchestration"),
                "an agent_graph_supervisor_wake admission requires mode graph and source host_api",
            ));
        }
    } else if orchestration && !external {
        return Err(invalid(
            &a.at("turnOrchestration"),
            "only an external_message admission (or a supervisor wake) has one",
        ));
    }
    if a.optional("skillInvocation", object)?.is_some() && !external {
        return Err(invalid(
            &a.at("skillInvocation"),
            "only an external_message admission has one",
        ));
    }
    a.required("sourceMessages", |v, p| {
        let messages = expect_array(v, p)?;
        if messages.len() > SOURCE_MESSAGES_MAX {
            return Err(invalid(
                p,
                format!("at most {SOURCE_MESSAGES_MAX} source messages"),
            ));
        }
        if !messages.is_empty() && !external {
            return Err(invalid(
                p,
                "only an external_message admission has source messages",
            ));
        }
        for (i, m) in messages.iter().enumerate() {
            decode_object(m, &p.index(i), |s| {
                s.nonempty("messageId")?;
                s.required("content", any)?;
                s.opt_string("submittedContentDigest")?;
                s.nonempty("placement")?;
                s.nonempty("disposition")?;
                Ok(())
            })?;
        }
        Ok(())
    })?;
    a.int_at_least("admittedAt", 0)?;
    Ok(())
}

/// A turn's orchestration override: exactly a mode and where it came from.
fn read_orchestration(o: &mut Obj) -> FieldResult<()> {
    o.one_of("mode", ORCHESTRATION_MODES)?;
    o.one_of("source", ORCHESTRATION_SOURCES)?;
    Ok(())
}

/// The execution descriptor; `ids` are the admission's session, turn and run.
pub(super) fn read_descriptor(e: &mut Obj, ids: &[String; 3]) -> FieldResult<()> {
    let kind = e.one_of("kind", DESCRIPTOR_KINDS)?;
    let strings: &[&'static str] = match kind {
        "regenerate" => &["sourceTurnId"],
        "scheduled_task" => &["scheduledTaskId"],
        "legacy_automation" => &["automationId"],
        "goal" => &["goalId"],
        "agent_graph_supervisor_wake" => &["graphId", "wakeId", "attemptId"],
        "safe_boundary_continuation" => &[
            "sourceInvocationId",
            "sourceRunId",
            "sourceTurnId",
            "claimId",
            "boundaryDigest",
            "providerReplayDigest",
            "safetyDigest",
            "targetInvocationId",
        ],
        "linked_child_initial" | "claimed_agent_graph_intent" => &["agentId", "agentName"],
        "linked_child_resume" | "linked_child_provider_retry" => {
            &["agentId", "agentName", "sourceRunId"]
        }
        _ => &[],
    };
    for &key in strings {
        e.nonempty(key)?;
    }
    match kind {
        "external_message" => {
            e.opt_string("inputDigest")?;
            e.opt_int_at_least("maxSteps", 1)?;
        }
        "safe_boundary_continuation" => {
            e.int_at_least("sourceRuntimeEventHighWater", 0)?;
        }
        "claimed_agent_graph_intent" => {
            e.required("claim", |v, p| read_claim(v, p, ids))?;
        }
        _ => {}
    }
    Ok(())
}

/// The claim of a `claimed_agent_graph_intent` descriptor: a valid §9 claim whose targets are
/// the admission's session, turn and run.
fn read_claim(value: &Value, path: &Path, ids: &[String; 3]) -> FieldResult<()> {
    expect_object(value, path)?;
    let claim: AgentGraphIntentClaim = serde_json::from_value(value.clone())
        .map_err(|e| invalid(path, format!("not an agent graph intent claim: {e}")))?;
    crate::claims::validate_graph_request(&claim.request())
        .map_err(|e| invalid(path, e.to_string()))?;
    for (field, target, id) in [
        ("targetSessionId", &claim.target_session_id, &ids[0]),
        ("targetTurnId", &claim.target_turn_id, &ids[1]),
        ("targetRunId", &claim.target_run_id, &ids[2]),
    ] {
        if target != id {
            return Err(invalid(
                &path.key(field),
                format!("must equal the admission's {id:?}"),
            ));
        }
    }
    Ok(())
}
