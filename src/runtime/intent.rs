//! Runnable agent-graph intents and their hashes (MAKA-MODEL §9): `stableHash` (SHA-256 of the
//! canonical JSON), an intent's id, the intent fingerprint a claim pins, and a claim's id; the
//! check that a claim is an intent's with a prompt, and what identifies one call for a claim.

use crate::claims::{AgentGraphIntentClaim, AgentGraphIntentClaimRequest};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// An intent the graph found ready to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentGraphRunnableIntent {
    pub schema_version: u32,
    pub intent_id: String,
    pub graph_id: String,
    pub readiness_context_fingerprint: String,
    pub policy_fingerprint: String,
    pub readiness_id: String,
    pub operator_id: String,
    pub target_session_id: String,
    /// `map`, `all_settled` or `supervisor`.
    pub policy_kind: String,
    pub trigger_route_ids: Vec<String>,
    pub trigger_record_ids: Vec<String>,
}

/// `"sha256:"` and the hex SHA-256 of `value`'s canonical JSON (keys sorted at every depth),
/// which for intents is exactly the original's `stableHash`.
pub fn stable_hash(value: &Value) -> String {
    let canonical = crate::event::canonical_string(value);
    format!(
        "sha256:{}",
        crate::format::hex(&Sha256::digest(canonical.as_bytes()))
    )
}

fn first_32_hex(hash: &str) -> &str {
    &hash["sha256:".len().."sha256:".len() + 32]
}

impl AgentGraphRunnableIntent {
    /// The id the intent's other fields give: `graph_intent_` and the first 32 hex digits of
    /// their stable hash.
    pub fn derived_id(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("intentId");
        }
        format!("graph_intent_{}", first_32_hex(&stable_hash(&v)))
    }

    /// The fingerprint a claim of this intent with `prompt` pins:
    /// `stableHash({schemaVersion:1, intent, executionInput:{prompt}})`. A blank prompt is
    /// refused.
    pub fn fingerprint(&self, prompt: &str) -> Result<String> {
        if prompt.trim().is_empty() {
            return Err(Error::InvalidInput("an intent's prompt is blank".into()));
        }
        let intent =
            serde_json::to_value(self).map_err(|e| Error::InvalidInput(format!("intent: {e}")))?;
        Ok(stable_hash(&json!({
            "schemaVersion": 1, "intent": intent, "executionInput": {"prompt": prompt}
        })))
    }
}

impl AgentGraphRunnableIntent {
    /// The request that claims this intent with `prompt` for turn `turn_id` and run `run_id`
    /// of its target session (§9): the claim id derived from the graph and intent, the
    /// fingerprint from the intent and prompt.
    pub fn claim_request(
        &self,
        prompt: &str,
        turn_id: &str,
        run_id: &str,
    ) -> Result<AgentGraphIntentClaimRequest> {
        Ok(AgentGraphIntentClaimRequest {
            schema_version: 1,
            claim_id: claim_id_of(&self.graph_id, &self.intent_id),
            graph_id: self.graph_id.clone(),
            intent_id: self.intent_id.clone(),
            intent_fingerprint: self.fingerprint(prompt)?,
            readiness_context_fingerprint: self.readiness_context_fingerprint.clone(),
            target_operator_id: self.operator_id.clone(),
            target_session_id: self.target_session_id.clone(),
            target_turn_id: turn_id.to_owned(),
            target_run_id: run_id.to_owned(),
        })
    }
}

/// A claim's id: `graph_claim_` and the first 32 hex digits of
/// `stableHash({schemaVersion:1, graphId, intentId})`.
pub fn claim_id_of(graph_id: &str, intent_id: &str) -> String {
    let hash =
        stable_hash(&json!({"schemaVersion": 1, "graphId": graph_id, "intentId": intent_id}));
    format!("graph_claim_{}", first_32_hex(&hash))
}

/// The intent must be of §9's shape (schemaVersion 1, a policy kind it names), and the claim
/// this intent's with this prompt: the same ids, operator, readiness context, and the
/// fingerprint recomputed from the intent and prompt.
pub(super) fn check_intent(
    claim: &AgentGraphIntentClaim,
    intent: &AgentGraphRunnableIntent,
    prompt: &str,
) -> Result<()> {
    let refused = |field: &str, why: String| Error::InvalidRecord {
        record: "agent graph intent",
        field: field.to_owned(),
        why,
    };
    if intent.schema_version != 1 {
        let why = format!("is {}, not 1", intent.schema_version);
        return Err(refused("schemaVersion", why));
    }
    if !matches!(
        intent.policy_kind.as_str(),
        "map" | "all_settled" | "supervisor"
    ) {
        let why = format!(
            "{:?} is not map, all_settled or supervisor",
            intent.policy_kind
        );
        return Err(refused("policyKind", why));
    }
    let pairs = [
        ("intentId", &intent.intent_id, &claim.intent_id),
        ("graphId", &intent.graph_id, &claim.graph_id),
        ("operatorId", &intent.operator_id, &claim.target_operator_id),
        (
            "targetSessionId",
            &intent.target_session_id,
            &claim.target_session_id,
        ),
        (
            "readinessContextFingerprint",
            &intent.readiness_context_fingerprint,
            &claim.readiness_context_fingerprint,
        ),
    ];
    for (field, ours, claimed) in pairs {
        if ours != claimed {
            return Err(Error::ClaimConflict {
                what: format!(
                    "the intent's {field} {ours:?} is not claim {}'s {claimed:?}",
                    claim.claim_id
                ),
            });
        }
    }
    if intent.fingerprint(prompt)? != claim.intent_fingerprint {
        return Err(Error::ClaimConflict {
            what: format!(
                "claim {} was taken for another intent or prompt",
                claim.claim_id
            ),
        });
    }
    Ok(())
}

/// What identifies one call: SHA-256 of the JSON `[1, claim, prompt]`.
pub(super) fn call_fingerprint(claim: &AgentGraphIntentClaim, prompt: &str) -> String {
    let v = json!([
        1,
        serde_json::to_value(claim).unwrap_or(Value::Null),
        prompt
    ]);
    crate::format::hex(&Sha256::digest(
        crate::event::canonical_string(&v).as_bytes(),
    ))
}
