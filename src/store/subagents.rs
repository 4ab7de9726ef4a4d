//! Subagent sessions (MAKA-MODEL §5 createSubagent): a child session created under its spawn
//! claim. The child's id is claimed first (as any session's), then the spawn, whose claim
//! carries the child's header; the header is written after both. A crash between the two leaves a claim whose child has no header, which
//! [`SessionStore::complete_spawns`] (run when the stores open) completes from the claim, so
//! there is never a session without its claim, nor, once the stores are open, a claim without
//! its session.

use super::sessions::SessionStore;
use crate::claims::{spawn_claim_of, OwnSpawn, SubagentSpawnClaim};
use crate::error::{Error, Result};
use crate::model::SessionHeader;
use serde_json::Value;

/// What [`SessionStore::create_subagent`] came to.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentCreated {
    /// The child's header: the one just created, or the existing child's.
    pub header: SessionHeader,
    /// True when this call created the child.
    pub created: bool,
}

fn refused(field: &str, why: &str) -> Error {
    Error::InvalidRecord {
        record: "session header",
        field: field.to_owned(),
        why: why.to_owned(),
    }
}

fn conflict(what: String) -> Error {
    Error::ClaimConflict { what }
}

impl SessionStore {
    /// Creates a subagent session (§5): the header must carry `subagentParent` (not a graph
    /// parent), `subagentRuntime` and `subagentSpawn`. A new id whose spawn key is free is
    /// claimed and created (`created: true`). An id already in use is a conflict, so a retry
    /// uses a fresh id; with the key taken, the request gets the existing child
    /// (`created: false`), unless its fingerprint differs ("reused for different work"), the
    /// child's `subagentParent` is not the request's, or the child's spawn block disagrees with
    /// the claim: each a [`Error::ClaimConflict`]. Nothing is written for a refusal.
    pub fn create_subagent(&self, header: Value) -> Result<SubagentCreated> {
        let header = SessionHeader::from_value(header)?;
        for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
            if header.value().get(key).is_none() {
                return Err(refused(key, "a subagent's header carries it"));
            }
        }
        if header.value()["subagentParent"].get("graph").is_some() {
            return Err(refused(
                "subagentParent.graph",
                "create_subagent refuses graph parents",
            ));
        }
        // A header no segment can hold is refused before anything is claimed for it.
        self.check_fits(&header)?;
        let id = header.id();
        if self.read_session(id)?.is_some() || self.claims().is_session_id_taken(id)? {
            return Err(conflict(format!(
                "session {id} already exists: a retry uses a fresh id"
            )));
        }
        let claim = spawn_claim_of(&header);
        if let Some(stored) = self.claims().read_subagent_spawn_claim(&claim.key())? {
            return self.existing_child(stored, &header);
        }
        // The id is taken for good first, as for any session, then the spawn is claimed: both
        // records made durable by one sync of the claims log.
        if let OwnSpawn::Existing(stored) = self.claims().claim_own_spawn(claim)? {
            // Another call claimed the key first.
            return self.existing_child(stored, &header);
        }
        // A retry that found the claim first may have completed the child (and it may have
        // been updated since): then its header stands.
        let header = match self.write_first_header(&header)? {
            true => header,
            false => self.read_session(header.id())?.unwrap_or(header),
        };
        Ok(SubagentCreated {
            header,
            created: true,
        })
    }

    /// The child of a taken spawn key, for a request that asked for it again.
    fn existing_child(
        &self,
        stored: SubagentSpawnClaim,
        request: &SessionHeader,
    ) -> Result<SubagentCreated> {
        let fingerprint = request.value()["subagentSpawn"]["requestFingerprint"].as_str();
        if fingerprint != Some(stored.request_fingerprint.as_str()) {
            return Err(conflict(format!(
                "subagent spawn of tool call {} in run {} was reused for different work",
                stored.tool_call_id, stored.parent_run_id
            )));
        }
        let child = match self.read_session(&stored.child_session_id)? {
            Some(child) => child,
            None => self.complete_spawn(&stored)?.ok_or_else(|| {
                conflict(format!(
                    "the spawn claim of session {} holds no header to complete it from",
                    stored.child_session_id
                ))
            })?,
        };
        if child.value().get("subagentParent") != request.value().get("subagentParent") {
            return Err(conflict(format!(
                "session {} has another subagentParent than the request",
                child.id()
            )));
        }
        let spawned = child.value()["subagentSpawn"]["requestFingerprint"].as_str();
        if spawned != Some(stored.request_fingerprint.as_str()) {
            return Err(conflict(format!(
                "session {}'s spawn block disagrees with its claim",
                child.id()
            )));
        }
        Ok(SubagentCreated {
            header: child,
            created: false,
        })
    }

    /// Writes the child header a spawn claim carries, if the child has none yet.
    fn complete_spawn(&self, claim: &SubagentSpawnClaim) -> Result<Option<SessionHeader>> {
        let Some(value) = claim.child_header.clone() else {
            return Ok(None);
        };
        let header = SessionHeader::from_value(value)?;
        if header.id() != claim.child_session_id {
            return Err(Error::corrupt(
                crate::claims::CLAIMS_FILE,
                0,
                format!(
                    "the spawn claim of session {} carries session {}'s header",
                    claim.child_session_id,
                    header.id()
                ),
            ));
        }
        if self.write_first_header(&header)? {
            return Ok(Some(header));
        }
        // Its creating call wrote it meanwhile.
        self.read_session(&claim.child_session_id)
    }

    /// Completes every spawn whose claim was made but whose child's header was not written (a
    /// crash between the two); returns how many. The stores run it when they open. A child
    /// that cannot be read or completed (its session damaged, the header its claim carries
    /// refused) is passed: one session's damage refuses that session, not the root's stores,
    /// and its first use reports why.
    pub fn complete_spawns(&self) -> Result<usize> {
        let mut completed = 0;
        for claim in self.claims().list_subagent_spawn_claims()? {
            let done = self
                .read_session(&claim.child_session_id)
                .and_then(|child| match child {
                    Some(_) => Ok(None),
                    None => self.complete_spawn(&claim),
                });
            if matches!(done, Ok(Some(_))) {
                completed += 1;
            }
        }
        Ok(completed)
    }
}

#[cfg(test)]
mod tests {
    use crate::claims::{spawn_claim_of, OwnSpawn};
    use crate::model::SessionHeader;
    use crate::root::try_acquire_owner;
    use crate::store::open_execution_stores_for_write;
    use serde_json::{json, Value};

    fn header(id: &str) -> Value {
        json!({
            "schemaVersion": 1, "id": id, "workspaceRoot": "/w", "cwd": "/w", "name": id,
            "llmConnectionSlug": "fake", "model": "m", "createdAt": 1, "lastUsedAt": 1,
            "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
            "connectionLocked": false, "labels": [], "status": "active", "backend": "fake",
            "permissionMode": "ask"
        })
    }

    fn child(id: &str) -> Value {
        let mut h = header(id);
        h["subagentParent"] = json!({"kind": "subagent", "parentSessionId": "parent",
            "spawnedBy": {"parentRunId": "r", "parentTurnId": "t", "toolCallId": "tool"},
            "lifecycle": "foreground"});
        h["subagentRuntime"] = json!({"schemaVersion": 1, "definitionVersion": 1,
            "agentId": "a", "agentName": "A", "profile": "p", "systemPrompt": "s",
            "toolNames": [], "categoryPolicy": {}});
        h["subagentSpawn"] = json!({"schemaVersion": 1, "requestFingerprint": "a".repeat(64),
            "initialTurnId": "t1", "initialRunId": "r1"});
        h
    }

    /// A creating call stopped after its claims; meanwhile a retry completed the child from
    /// its claim, and the child was renamed. The creating call's header write, coming last,
    /// writes nothing, so the rename stands and the child has one creation header.
    #[test]
    fn a_spawn_a_retry_completed_is_not_written_again_by_its_creating_call() {
        let t = tempfile::tempdir().expect("tmp");
        let owner = try_acquire_owner(&t.path().join("root"))
            .expect("acquire")
            .expect("free");
        let s = open_execution_stores_for_write(&owner).expect("stores");
        s.sessions.create(header("parent")).expect("parent");
        let made = SessionHeader::from_value(child("kid")).expect("header");
        let claimed = s.claims.claim_own_spawn(spawn_claim_of(&made));
        assert!(matches!(claimed, Ok(OwnSpawn::Created)), "{claimed:?}");
        let retry = s.sessions.create_subagent(child("kid-2")).expect("retry");
        assert!(!retry.created);
        assert_eq!(retry.header.id(), "kid", "completed by the retry");
        let mut renamed = made.value().clone();
        renamed["name"] = json!("renamed");
        s.sessions.update_session(renamed).expect("rename");
        assert!(!s
            .sessions
            .write_first_header(&made)
            .expect("the creating call goes on"));
        let now = s.sessions.read_session("kid").expect("read").expect("kid");
        assert_eq!(now.value()["name"], "renamed");
    }
}
