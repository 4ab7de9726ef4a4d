//! A parent session and linked children with a claimed graph intent for one turn of each, as
//! the seed 000 port and the claimed-run tests use them.

use makalog::claims::{AgentGraphIntentClaim, AgentGraphIntentClaimRequest};
use makalog::runtime::{AgentGraphRunnableIntent, ClaimedIntentRun, LOCAL_READ_AGENT_DEFINITION};
use makalog::store::ExecutionStores;
use serde_json::{json, Value};

pub fn parent_header(root: &str) -> Value {
    json!({
        "schemaVersion": 1, "id": "parent", "workspaceRoot": root, "cwd": root,
        "name": "Parent", "llmConnectionSlug": "fake", "model": "fake-model",
        "createdAt": 1, "lastUsedAt": 1, "titleIsManual": false, "isFlagged": false,
        "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
        "status": "active", "backend": "fake", "permissionMode": "ask"
    })
}

pub fn next_hex(value: &str) -> String {
    let code = u8::from_str_radix(value, 16).expect("a hex digit");
    format!("{:x}", (code + 1) % 16)
}

/// A linked child of the parent and the claim request and intent for one turn of it.
pub fn claimed_graph_child(
    stores: &ExecutionStores,
    root: &str,
    suffix: &str,
    prompt: &str,
) -> (AgentGraphIntentClaimRequest, AgentGraphRunnableIntent) {
    let (turn_id, run_id) = (
        format!("graph-turn-{suffix}"),
        format!("graph-run-{suffix}"),
    );
    let d = LOCAL_READ_AGENT_DEFINITION;
    let mut header = parent_header(root);
    header["id"] = json!(format!("graph-child-{suffix}"));
    header["name"] = json!(format!("Graph operator {suffix}"));
    header["permissionMode"] = json!("explore");
    header["collaborationMode"] = json!("agent");
    header["orchestrationMode"] = json!("default");
    header["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": "parent",
        "spawnedBy": {"parentRunId": format!("parent-run-{suffix}"),
                      "parentTurnId": format!("parent-turn-{suffix}"),
                      "toolCallId": format!("graph-tool-{suffix}")},
        "lifecycle": "foreground"
    });
    header["subagentRuntime"] = json!({
        "schemaVersion": 1, "definitionVersion": d.definition_version, "agentId": d.id,
        "agentName": d.name, "profile": d.profile, "systemPrompt": d.system_prompt,
        "toolNames": [], "categoryPolicy": {}, "permissionCeiling": "ask"
    });
    header["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": suffix.repeat(64),
        "initialTurnId": turn_id, "initialRunId": run_id
    });
    let child = stores.sessions.create_subagent(header).expect("child");
    assert!(child.created);
    let intent = AgentGraphRunnableIntent {
        schema_version: 1,
        intent_id: format!("graph_intent_{}", suffix.repeat(32)),
        graph_id: format!("graph-{suffix}"),
        readiness_context_fingerprint: format!("sha256:{}", next_hex(suffix).repeat(64)),
        policy_fingerprint: format!("sha256:{}", next_hex(&next_hex(suffix)).repeat(64)),
        readiness_id: format!("readiness-{suffix}"),
        operator_id: d.id.into(),
        target_session_id: child.header.id().into(),
        policy_kind: "map".into(),
        trigger_route_ids: vec![format!("route-{suffix}")],
        trigger_record_ids: vec![format!("record-{suffix}")],
    };
    let request = AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{}", suffix.repeat(32)),
        graph_id: intent.graph_id.clone(),
        intent_id: intent.intent_id.clone(),
        intent_fingerprint: intent.fingerprint(prompt).expect("fingerprint"),
        readiness_context_fingerprint: intent.readiness_context_fingerprint.clone(),
        target_operator_id: d.id.into(),
        target_session_id: child.header.id().into(),
        target_turn_id: turn_id,
        target_run_id: run_id,
    };
    (request, intent)
}

/// A call running `claim`'s `intent` with `prompt`, with no abort and no readiness callback.
pub fn claimed_run(
    claim: &AgentGraphIntentClaim,
    intent: &AgentGraphRunnableIntent,
    prompt: &str,
) -> ClaimedIntentRun {
    ClaimedIntentRun::new(
        intent.clone(),
        claim.graph_id.clone(),
        claim.intent_id.clone(),
        prompt,
    )
}

/// The parent session under `root`, a linked child and its stored claim for one turn with
/// `prompt`: what a claimed run starts from.
pub fn claimed_child_of_new_parent(
    stores: &ExecutionStores,
    root: &str,
    prompt: &str,
) -> (AgentGraphIntentClaim, AgentGraphRunnableIntent) {
    stores.sessions.create(parent_header(root)).expect("parent");
    let (request, intent) = claimed_graph_child(stores, root, "a", prompt);
    let claim = stores
        .claims
        .claim_agent_graph_intent(request)
        .expect("claim")
        .claim;
    (claim, intent)
}
