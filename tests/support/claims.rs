//! The claims tests' shared steps: valid graph-intent requests and spawn claims, the claims
//! log of a real root opened, and its file's bytes.

use super::owner;
use makalog::claims::{AgentGraphIntentClaimRequest, ClaimsLog, SubagentSpawnClaim, CLAIMS_FILE};
use makalog::storage::{RealStorage, Storage};
use std::path::PathBuf;
use std::sync::Arc;

pub fn hex32(c: char) -> String {
    c.to_string().repeat(32)
}

/// A valid request for intent `n` (n < 16) of graph `graph-1`.
pub fn request(n: u32) -> AgentGraphIntentClaimRequest {
    let c = char::from_digit(n, 16).expect("hex digit");
    AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{}", hex32(c)),
        graph_id: "graph-1".into(),
        intent_id: format!("graph_intent_{}", hex32(c)),
        intent_fingerprint: format!("sha256:{}", c.to_string().repeat(64)),
        readiness_context_fingerprint: format!("sha256:{}", "b".repeat(64)),
        target_operator_id: "local-read".into(),
        target_session_id: "session-child".into(),
        target_turn_id: format!("turn-{n}"),
        target_run_id: format!("run-{n}"),
    }
}

pub fn root_path(storage: &Arc<RealStorage>) -> PathBuf {
    storage.describe_root()
}

pub fn claims_bytes(storage: &Arc<RealStorage>) -> Vec<u8> {
    std::fs::read(root_path(storage).join(CLAIMS_FILE)).expect("claims.log")
}

pub fn open(storage: &Arc<RealStorage>) -> ClaimsLog {
    ClaimsLog::open(&owner(storage)).expect("open claims").0
}

pub fn spawn(tool: &str, fingerprint: char, child: &str) -> SubagentSpawnClaim {
    SubagentSpawnClaim {
        parent_session_id: "parent".into(),
        parent_run_id: "parent-run".into(),
        tool_call_id: tool.into(),
        swarm_id: String::new(),
        item_id: String::new(),
        request_fingerprint: fingerprint.to_string().repeat(64),
        child_session_id: child.into(),
        child_header: None,
    }
}
