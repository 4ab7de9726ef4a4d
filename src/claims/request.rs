//! The claims themselves and the rules a request must follow (MAKA-MODEL §5 and §9).

use crate::error::{Error, Result};
use crate::format::validate_session_id;
use serde::{Deserialize, Serialize};

/// A request to claim an agent-graph intent (MAKA-MODEL §9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentGraphIntentClaimRequest {
    pub schema_version: u32,
    pub claim_id: String,
    pub graph_id: String,
    pub intent_id: String,
    pub intent_fingerprint: String,
    pub readiness_context_fingerprint: String,
    pub target_operator_id: String,
    pub target_session_id: String,
    pub target_turn_id: String,
    pub target_run_id: String,
}

/// A stored claim: the request plus when the store took it. Its fields are declared in the
/// order of their JSON names, which is the order the log's payload keeps them in (keys sorted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentGraphIntentClaim {
    pub claim_id: String,
    /// Milliseconds since the Unix epoch.
    pub claimed_at: u64,
    pub graph_id: String,
    pub intent_fingerprint: String,
    pub intent_id: String,
    pub readiness_context_fingerprint: String,
    pub schema_version: u32,
    pub target_operator_id: String,
    pub target_run_id: String,
    pub target_session_id: String,
    pub target_turn_id: String,
}

impl AgentGraphIntentClaim {
    /// The claim of `request` taken at `claimed_at`.
    pub fn new(request: AgentGraphIntentClaimRequest, claimed_at: u64) -> Self {
        AgentGraphIntentClaim {
            schema_version: request.schema_version,
            claim_id: request.claim_id,
            graph_id: request.graph_id,
            intent_id: request.intent_id,
            intent_fingerprint: request.intent_fingerprint,
            readiness_context_fingerprint: request.readiness_context_fingerprint,
            target_operator_id: request.target_operator_id,
            target_session_id: request.target_session_id,
            target_turn_id: request.target_turn_id,
            target_run_id: request.target_run_id,
            claimed_at,
        }
    }

    /// The request this claim was taken for.
    pub fn request(&self) -> AgentGraphIntentClaimRequest {
        AgentGraphIntentClaimRequest {
            schema_version: self.schema_version,
            claim_id: self.claim_id.clone(),
            graph_id: self.graph_id.clone(),
            intent_id: self.intent_id.clone(),
            intent_fingerprint: self.intent_fingerprint.clone(),
            readiness_context_fingerprint: self.readiness_context_fingerprint.clone(),
            target_operator_id: self.target_operator_id.clone(),
            target_session_id: self.target_session_id.clone(),
            target_turn_id: self.target_turn_id.clone(),
            target_run_id: self.target_run_id.clone(),
        }
    }

    /// True when `other` asks for the same work: the fields §9 compares agree (claim id,
    /// fingerprints, operator and session). Turn id, run id and claimedAt are not compared.
    pub fn same_work(&self, other: &AgentGraphIntentClaim) -> bool {
        self.claim_id == other.claim_id
            && self.intent_fingerprint == other.intent_fingerprint
            && self.readiness_context_fingerprint == other.readiness_context_fingerprint
            && self.target_operator_id == other.target_operator_id
            && self.target_session_id == other.target_session_id
    }
}

/// Where a claimed intent's execution stands; it only moves forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionStatus {
    Claimed,
    Executing,
    Cancelled,
}

/// An admission status change, as appended to the log (fields in the order of their JSON
/// names, as in the payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionStatusChange {
    pub graph_id: String,
    pub intent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub status: AdmissionStatus,
}

/// A subagent-spawn claim (§5): one child per spawn key. Fields in the order of their JSON
/// names, as in the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubagentSpawnClaim {
    /// The child's session header, written after the claim: kept here so that a crash between
    /// the claim and the header is completed when the stores open again. Absent in claims made
    /// without a session store (and in version 1 logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_header: Option<serde_json::Value>,
    pub child_session_id: String,
    /// Empty when the spawn is not part of a swarm (the workId for graph operators).
    pub item_id: String,
    pub parent_run_id: String,
    pub parent_session_id: String,
    /// 64 lowercase hex digits.
    pub request_fingerprint: String,
    /// Empty when the spawn is not part of a swarm (`graph:<graphId>` for graph operators).
    pub swarm_id: String,
    pub tool_call_id: String,
}

impl SubagentSpawnClaim {
    /// The spawn key: (parent session, parent run, tool call, swarm id, item id).
    pub fn key(&self) -> (String, String, String, String, String) {
        (
            self.parent_session_id.clone(),
            self.parent_run_id.clone(),
            self.tool_call_id.clone(),
            self.swarm_id.clone(),
            self.item_id.clone(),
        )
    }
}

/// A session-create claim: the id is taken for good, so a retry must use a fresh one. Fields in
/// the order of their JSON names, as in the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCreateClaim {
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub session_id: String,
}

/// Checks an agent-graph intent claim request (§9). The message names the field.
pub fn validate_graph_request(r: &AgentGraphIntentClaimRequest) -> Result<()> {
    if r.schema_version != 1 {
        return invalid("schemaVersion", "must be 1");
    }
    hex_id("claimId", &r.claim_id, "graph_claim_", 32)?;
    hex_id("intentId", &r.intent_id, "graph_intent_", 32)?;
    hex_id("intentFingerprint", &r.intent_fingerprint, "sha256:", 64)?;
    hex_id(
        "readinessContextFingerprint",
        &r.readiness_context_fingerprint,
        "sha256:",
        64,
    )?;
    for (field, value) in [
        ("graphId", &r.graph_id),
        ("targetOperatorId", &r.target_operator_id),
        ("targetSessionId", &r.target_session_id),
        ("targetTurnId", &r.target_turn_id),
        ("targetRunId", &r.target_run_id),
    ] {
        opaque_id(field, value, 256)?;
        if value.trim() != value {
            return invalid(field, "must not start or end with white space");
        }
    }
    Ok(())
}

/// Checks a subagent-spawn claim: ids of 1 to 512 characters without control characters, a
/// 64-hex fingerprint, a valid child session id.
pub fn validate_spawn_claim(c: &SubagentSpawnClaim) -> Result<()> {
    opaque_id("parentSessionId", &c.parent_session_id, 512)?;
    opaque_id("parentRunId", &c.parent_run_id, 512)?;
    opaque_id("toolCallId", &c.tool_call_id, 512)?;
    for (field, value) in [("swarmId", &c.swarm_id), ("itemId", &c.item_id)] {
        if !value.is_empty() {
            opaque_id(field, value, 512)?;
        }
    }
    if c.swarm_id.is_empty() != c.item_id.is_empty() {
        return invalid("swarmId", "swarmId and itemId are both set or both empty");
    }
    hex_id("requestFingerprint", &c.request_fingerprint, "", 64)?;
    if c.child_header.as_ref().is_some_and(|h| !h.is_object()) {
        return invalid("childHeader", "a session header is a JSON object");
    }
    validate_session_id(&c.child_session_id)
        .map_err(|why| Error::InvalidInput(format!("childSessionId: {why}")))
}

/// Checks a session-create claim.
pub fn validate_session_claim(c: &SessionCreateClaim) -> Result<()> {
    validate_session_id(&c.session_id)
        .map_err(|why| Error::InvalidInput(format!("sessionId: {why}")))
}

fn invalid<T>(field: &str, why: &str) -> Result<T> {
    Err(Error::InvalidInput(format!("{field}: {why}")))
}

/// `prefix` followed by exactly `digits` lowercase hex digits.
fn hex_id(field: &str, value: &str, prefix: &str, digits: usize) -> Result<()> {
    let ok = value.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == digits
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{field}: must be {prefix:?} followed by {digits} lowercase hex digits"
        )))
    }
}

/// 1 to `max` UTF-16 code units (as the original counts), no control characters.
fn opaque_id(field: &str, value: &str, max: usize) -> Result<()> {
    let units = value.encode_utf16().count();
    if units == 0 || units > max {
        return Err(Error::InvalidInput(format!(
            "{field}: must be 1 to {max} characters, got {units}"
        )));
    }
    if value.chars().any(char::is_control) {
        return invalid(field, "must not contain control characters");
    }
    Ok(())
}
