//! The claim tables of a root, rebuilt by replaying the claims log, and what they answer (the
//! rules that decide what a new claim does are in `rules.rs`). Pure: no I/O. Every entry
//! remembers the sequence number of the record that made it, so an answer can wait until that
//! record is durable.

pub use super::record::ClaimRecord;
use super::request::{
    AdmissionStatus, AgentGraphIntentClaim, SessionCreateClaim, SubagentSpawnClaim,
};
use std::collections::{BTreeMap, HashMap};

pub(super) type IntentKey = (String, String);
pub(super) type SpawnKey = (String, String, String, String, String);

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
    pub(super) graph: BTreeMap<IntentKey, StoredGraphIntentClaim>,
    pub(super) by_claim_id: HashMap<String, IntentKey>,
    pub(super) by_target_turn: HashMap<(String, String), IntentKey>,
    pub(super) by_target_run: HashMap<(String, String), IntentKey>,
    pub(super) spawns: BTreeMap<SpawnKey, StoredSpawnClaim>,
    pub(super) spawn_children: HashMap<String, SpawnKey>,
    pub(super) sessions: BTreeMap<String, StoredSessionClaim>,
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
}
