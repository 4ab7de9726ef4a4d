//! A subagent's spawn claim as its header asks for it (MAKA-MODEL §5), and the rule the
//! claiming calls keep: a claim that carries a child's header carries its own child's, so the
//! stores can complete that child from it.

use super::request::SubagentSpawnClaim;
use crate::error::{Error, Result};
use crate::model::SessionHeader;
use serde_json::Value;

/// The spawn claim `header` asks for, carrying it: the key from its `subagentParent` (a graph
/// operator's slots are `graph:<graphId>` and its `workId`), the fingerprint from its
/// `subagentSpawn`.
pub fn spawn_claim_of(header: &SessionHeader) -> SubagentSpawnClaim {
    let v = header.value();
    let parent = &v["subagentParent"];
    let s = |x: &Value| x.as_str().unwrap_or_default().to_owned();
    let (swarm_id, item_id) = match parent.get("graph") {
        Some(g) => (format!("graph:{}", s(&g["graphId"])), s(&g["workId"])),
        None => (
            s(&parent["swarm"]["swarmId"]),
            s(&parent["swarm"]["itemId"]),
        ),
    };
    SubagentSpawnClaim {
        parent_session_id: s(&parent["parentSessionId"]),
        parent_run_id: s(&parent["spawnedBy"]["parentRunId"]),
        tool_call_id: s(&parent["spawnedBy"]["toolCallId"]),
        swarm_id,
        item_id,
        request_fingerprint: s(&v["subagentSpawn"]["requestFingerprint"]),
        child_session_id: header.id().to_owned(),
        child_header: Some(v.clone()),
    }
}

/// Checks the child header `claim` carries, if any: a valid session header (§5) of the claimed
/// child whose `subagentParent` and `subagentSpawn` ask for the claim's key and fingerprint.
pub(super) fn check_child_header(claim: &SubagentSpawnClaim) -> Result<()> {
    let Some(value) = &claim.child_header else {
        return Ok(());
    };
    let header = SessionHeader::from_value(value.clone())?;
    let refuse = |why: String| Err(Error::InvalidInput(format!("childHeader: {why}")));
    if header.id() != claim.child_session_id {
        return refuse(format!(
            "is session {}'s, not {}'s",
            header.id(),
            claim.child_session_id
        ));
    }
    if ["subagentParent", "subagentSpawn"]
        .iter()
        .any(|k| header.value().get(*k).is_none())
    {
        return refuse("a subagent's header carries subagentParent and subagentSpawn".into());
    }
    let asked = spawn_claim_of(&header);
    if asked.key() != claim.key() || asked.request_fingerprint != claim.request_fingerprint {
        return refuse("asks for another spawn key or request fingerprint than the claim".into());
    }
    Ok(())
}
