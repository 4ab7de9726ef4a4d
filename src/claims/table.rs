//! The claim tables of a root, rebuilt by replaying the claims log, and the rules that decide
//! what a new claim does. Pure: no I/O. Every entry remembers the sequence number of the record
//! that made it, so an answer can wait until that record is durable.

pub use super::record::ClaimRecord;
use super::request::{
    AdmissionStatus, AdmissionStatusChange, AgentGraphIntentClaim, SessionCreateClaim,
    SubagentSpawnClaim,
};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};

type IntentKey = (String, String);
type SpawnKey = (String, String, String, String, String);

/// A graph intent claim with its admission status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredGraphIntentClaim {
    pub claim: AgentGraphIntentClaim,
    pub status: AdmissionStatus,
    /// Why it was cancelled, once it is.
    pub cancel_reason: Option<String>,
    /// Sequence number of the claim record.
    pub seq: u64,
    /// Sequence number of the latest record about it (claim or status change).
    pub last_seq: u64,
}

/// A stored subagent-spawn claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSpawnClaim {
    pub claim: SubagentSpawnClaim,
    pub seq: u64,
}

/// A stored session-create claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSessionClaim {
    pub claim: SessionCreateClaim,
    pub seq: u64,
}

/// What a new claim comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Append a record for it.
    Append,
    /// Nothing to append: the answer is already stored by the record with this sequence number.
    Stored { seq: u64 },
}

/// Every claim of a root.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimTables {
    graph: BTreeMap<IntentKey, StoredGraphIntentClaim>,
    by_claim_id: HashMap<String, IntentKey>,
    by_target_turn: HashMap<(String, String), IntentKey>,
    by_target_run: HashMap<(String, String), IntentKey>,
    spawns: BTreeMap<SpawnKey, StoredSpawnClaim>,
    spawn_children: HashMap<String, SpawnKey>,
    sessions: BTreeMap<String, StoredSessionClaim>,
}

fn conflict<T>(what: String) -> Result<T> {
    Err(Error::ClaimConflict { what })
}

impl ClaimTables {
    /// The graph intent claim for (graph, intent).
    pub fn graph_claim(&self, graph_id: &str, intent_id: &str) -> Option<&StoredGraphIntentClaim> {
        self.graph.get(&(graph_id.to_owned(), intent_id.to_owned()))
    }

    /// Graph intent claims in claim order, of one graph or of all.
    pub fn graph_claims(&self, graph_id: Option<&str>) -> Vec<&StoredGraphIntentClaim> {
        let mut v: Vec<_> = self
            .graph
            .values()
            .filter(|c| graph_id.is_none_or(|g| c.claim.graph_id == g))
            .collect();
        v.sort_by_key(|c| c.seq);
        v
    }

    /// Subagent-spawn claims in claim order.
    pub fn spawn_claims(&self) -> Vec<&StoredSpawnClaim> {
        let mut v: Vec<_> = self.spawns.values().collect();
        v.sort_by_key(|c| c.seq);
        v
    }

    /// The spawn claim of a spawn key, if any.
    pub fn spawn_claim(&self, key: &SpawnKey) -> Option<&StoredSpawnClaim> {
        self.spawns.get(key)
    }

    /// The spawn claim whose child is `session_id`, if any.
    pub fn spawn_of_child(&self, session_id: &str) -> Option<&StoredSpawnClaim> {
        self.spawn_children
            .get(session_id)
            .and_then(|key| self.spawns.get(key))
    }

    /// The session-create claim of an id, if it is taken.
    pub fn session_claim(&self, session_id: &str) -> Option<&StoredSessionClaim> {
        self.sessions.get(session_id)
    }

    /// Session-create claims in claim order.
    pub fn session_claims(&self) -> Vec<&StoredSessionClaim> {
        let mut v: Vec<_> = self.sessions.values().collect();
        v.sort_by_key(|c| c.seq);
        v
    }

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

    /// One JSON object per claim, as `makalog claims --json` prints them: graph intent claims
    /// (of one graph, or all), then, when no graph is named, spawn and session-create claims.
    pub fn to_json_lines(&self, graph_id: Option<&str>) -> Vec<serde_json::Value> {
        let mut out: Vec<serde_json::Value> = self
            .graph_claims(graph_id)
            .into_iter()
            .map(|c| {
                let mut v = serde_json::json!({
                    "type": "graph_intent_claim",
                    "seq": c.seq,
                    "claim": c.claim,
                    "status": c.status,
                });
                if let Some(reason) = &c.cancel_reason {
                    v["cancelReason"] = serde_json::Value::String(reason.clone());
                }
                v
            })
            .collect();
        if graph_id.is_none() {
            out.extend(self.spawn_claims().into_iter().map(|c| {
                serde_json::json!({"type": "subagent_spawn_claim", "seq": c.seq, "claim": c.claim})
            }));
            out.extend(self.session_claims().into_iter().map(|c| {
                serde_json::json!({"type": "session_create_claim", "seq": c.seq, "claim": c.claim})
            }));
        }
        out
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
