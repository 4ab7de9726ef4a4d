//! The rules that decide what a new claim does (MAKA-MODEL §5 and §9), and how a record
//! appended for one changes the tables. Pure: no I/O.

use super::request::{
    AdmissionStatus, AdmissionStatusChange, AgentGraphIntentClaim, SessionCreateClaim,
    SubagentSpawnClaim,
};
use super::table::{
    ClaimRecord, ClaimTables, Decision, StoredGraphIntentClaim, StoredSessionClaim,
    StoredSpawnClaim,
};
use crate::error::{Error, Result};

fn conflict<T>(what: String) -> Result<T> {
    Err(Error::ClaimConflict { what })
}

impl ClaimTables {
    /// Decides a new graph intent claim (§9): the stored claim answers a request for the same
    /// work; a different claim for the same intent, or one whose claim id, target turn or target
    /// run another intent holds, is a conflict.
    pub fn decide_graph(&self, claim: &AgentGraphIntentClaim) -> Result<Decision> {
        let key = (claim.graph_id.clone(), claim.intent_id.clone());
        if let Some(stored) = self.graph.get(&key) {
            if stored.claim.same_work(claim) {
                return Ok(Decision::Stored { seq: stored.seq });
            }
            return conflict(format!(
                "agent graph intent {}/{} was reused for different work",
                claim.graph_id, claim.intent_id
            ));
        }
        if let Some(other) = self.by_claim_id.get(&claim.claim_id) {
            return conflict(format!(
                "claim id {} already claims intent {}/{}",
                claim.claim_id, other.0, other.1
            ));
        }
        let turn = (
            claim.target_session_id.clone(),
            claim.target_turn_id.clone(),
        );
        if let Some(other) = self.by_target_turn.get(&turn) {
            return conflict(format!(
                "session {} turn {} is already claimed by intent {}/{}",
                turn.0, turn.1, other.0, other.1
            ));
        }
        let run = (claim.target_session_id.clone(), claim.target_run_id.clone());
        if let Some(other) = self.by_target_run.get(&run) {
            return conflict(format!(
                "session {} run {} is already claimed by intent {}/{}",
                run.0, run.1, other.0, other.1
            ));
        }
        Ok(Decision::Append)
    }

    fn insert_graph(&mut self, claim: AgentGraphIntentClaim, seq: u64) {
        let key = (claim.graph_id.clone(), claim.intent_id.clone());
        self.by_claim_id.insert(claim.claim_id.clone(), key.clone());
        self.by_target_turn.insert(
            (
                claim.target_session_id.clone(),
                claim.target_turn_id.clone(),
            ),
            key.clone(),
        );
        self.by_target_run.insert(
            (claim.target_session_id.clone(), claim.target_run_id.clone()),
            key.clone(),
        );
        self.graph.insert(
            key,
            StoredGraphIntentClaim {
                claim,
                status: AdmissionStatus::Claimed,
                cancel_reason: None,
                seq,
                last_seq: seq,
            },
        );
    }

    /// Decides an admission status change: forward only (claimed → executing → cancelled, or
    /// claimed → cancelled); cancelling needs a reason; repeating the current status is a no-op.
    pub fn decide_status(&self, change: &AdmissionStatusChange) -> Result<Decision> {
        let Some(stored) = self.graph_claim(&change.graph_id, &change.intent_id) else {
            return Err(Error::InvalidInput(format!(
                "no claim for agent graph intent {}/{}",
                change.graph_id, change.intent_id
            )));
        };
        match change.status {
            AdmissionStatus::Cancelled
                if change.reason.as_deref().is_none_or(|r| r.trim().is_empty()) =>
            {
                return Err(Error::InvalidInput(
                    "cancelling a claim needs a reason".into(),
                ))
            }
            AdmissionStatus::Claimed | AdmissionStatus::Executing if change.reason.is_some() => {
                return Err(Error::InvalidInput(
                    "only a cancellation carries a reason".into(),
                ))
            }
            _ => {}
        }
        if stored.status == change.status && stored.cancel_reason == change.reason {
            return Ok(Decision::Stored {
                seq: stored.last_seq,
            });
        }
        if change.status <= stored.status {
            return Err(Error::InvalidInput(format!(
                "agent graph intent {}/{} cannot move from {:?} to {:?}",
                change.graph_id, change.intent_id, stored.status, change.status
            )));
        }
        Ok(Decision::Append)
    }

    fn apply_status(&mut self, change: AdmissionStatusChange, seq: u64) {
        if let Some(stored) = self
            .graph
            .get_mut(&(change.graph_id.clone(), change.intent_id.clone()))
        {
            stored.status = change.status;
            stored.cancel_reason = change.reason;
            stored.last_seq = seq;
        }
    }

    /// Decides a subagent-spawn claim (§5): the same key with the same fingerprint answers with
    /// the stored claim; another fingerprint, or a child another key already spawned, conflicts.
    pub fn decide_spawn(&self, claim: &SubagentSpawnClaim) -> Result<Decision> {
        if let Some(stored) = self.spawns.get(&claim.key()) {
            if stored.claim.request_fingerprint == claim.request_fingerprint {
                return Ok(Decision::Stored { seq: stored.seq });
            }
            return conflict(format!(
                "subagent spawn of tool call {} in run {} was reused for different work",
                claim.tool_call_id, claim.parent_run_id
            ));
        }
        if self.spawn_children.contains_key(&claim.child_session_id) {
            return conflict(format!(
                "session {} is already the child of another spawn",
                claim.child_session_id
            ));
        }
        Ok(Decision::Append)
    }

    fn insert_spawn(&mut self, claim: SubagentSpawnClaim, seq: u64) {
        self.spawn_children
            .insert(claim.child_session_id.clone(), claim.key());
        self.spawns
            .insert(claim.key(), StoredSpawnClaim { claim, seq });
    }

    /// Decides a session-create claim: an id already taken is a conflict, so retries use a
    /// fresh id.
    pub fn decide_session(&self, claim: &SessionCreateClaim) -> Result<Decision> {
        if self.sessions.contains_key(&claim.session_id) {
            return conflict(format!("session id {} is already taken", claim.session_id));
        }
        Ok(Decision::Append)
    }

    fn insert_session(&mut self, claim: SessionCreateClaim, seq: u64) {
        self.sessions
            .insert(claim.session_id.clone(), StoredSessionClaim { claim, seq });
    }

    /// Decides any record by the rules of its kind.
    pub fn decide(&self, record: &ClaimRecord) -> Result<Decision> {
        match record {
            ClaimRecord::Graph(c) => self.decide_graph(c),
            ClaimRecord::Status(s) => self.decide_status(s),
            ClaimRecord::Spawn(c) => self.decide_spawn(c),
            ClaimRecord::Session(c) => self.decide_session(c),
        }
    }

    /// Applies a record the caller decided to append.
    pub fn apply(&mut self, record: ClaimRecord, seq: u64) {
        match record {
            ClaimRecord::Graph(c) => self.insert_graph(c, seq),
            ClaimRecord::Status(s) => self.apply_status(s, seq),
            ClaimRecord::Spawn(c) => self.insert_spawn(c, seq),
            ClaimRecord::Session(c) => self.insert_session(c, seq),
        }
    }
}
