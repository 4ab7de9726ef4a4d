//! Taking claims (§5, §9): each request validated, decided against the tables and, if new,
//! appended and synced before its answer; the stored claim answers a repeat.

use super::{ClaimsLog, GraphClaimOutcome, OwnSpawn, SpawnClaimOutcome};
use crate::claims::request::{
    validate_graph_request, validate_session_claim, validate_spawn_claim, AdmissionStatus,
    AdmissionStatusChange, AgentGraphIntentClaim, AgentGraphIntentClaimRequest, SessionCreateClaim,
    SubagentSpawnClaim,
};
use crate::claims::spawn_header::check_child_header;
use crate::claims::table::{ClaimRecord, StoredGraphIntentClaim, StoredSpawnClaim};
use crate::error::{Error, Result};

impl ClaimsLog {
    /// Claims an agent-graph intent now (§9). The same work again returns the stored claim with
    /// `created: false`; different work for the same intent, or targets another intent holds,
    /// is a [`Error::ClaimConflict`] and writes nothing.
    pub fn claim_agent_graph_intent(
        &self,
        request: AgentGraphIntentClaimRequest,
    ) -> Result<GraphClaimOutcome> {
        self.claim_agent_graph_intent_at(request, now_ms())
    }

    /// [`ClaimsLog::claim_agent_graph_intent`] with the claim time given.
    pub fn claim_agent_graph_intent_at(
        &self,
        request: AgentGraphIntentClaimRequest,
        claimed_at: u64,
    ) -> Result<GraphClaimOutcome> {
        validate_graph_request(&request)?;
        let claim = AgentGraphIntentClaim::new(request, claimed_at);
        let (graph_id, intent_id) = (claim.graph_id.clone(), claim.intent_id.clone());
        let (st, created) = self.commit_record(ClaimRecord::Graph(claim))?;
        let stored = st
            .log
            .tables
            .graph_claim(&graph_id, &intent_id)
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(GraphClaimOutcome {
            claim: stored,
            created,
        })
    }

    /// Moves a claimed intent's admission status forward; repeating the current status is a
    /// no-op. Returns the stored claim with its status.
    pub fn set_agent_graph_intent_status(
        &self,
        graph_id: &str,
        intent_id: &str,
        status: AdmissionStatus,
        reason: Option<&str>,
    ) -> Result<StoredGraphIntentClaim> {
        let change = AdmissionStatusChange {
            graph_id: graph_id.to_owned(),
            intent_id: intent_id.to_owned(),
            status,
            reason: reason.map(str::to_owned),
        };
        let (st, _) = self.commit_record(ClaimRecord::Status(change))?;
        st.log
            .tables
            .graph_claim(graph_id, intent_id)
            .cloned()
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))
    }

    /// Claims a subagent spawn (§5): the same key and fingerprint return the stored claim
    /// (`created: false`); another fingerprint, or a child already spawned elsewhere, conflicts.
    pub fn claim_subagent_spawn(&self, claim: SubagentSpawnClaim) -> Result<SpawnClaimOutcome> {
        validate_spawn_claim(&claim)?;
        check_child_header(&claim)?;
        let key = claim.key();
        let (st, created) = self.commit_record(ClaimRecord::Spawn(claim))?;
        let stored: Option<&StoredSpawnClaim> = st.log.tables.spawn_claim(&key);
        let claim = stored
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(SpawnClaimOutcome { claim, created })
    }

    /// Takes a subagent's session id for good and claims its spawn, in one sync: the id claim
    /// first, so a crash keeps neither, the id alone (burned: a retry uses a fresh id), or both.
    /// An id already taken is a conflict, with nothing queued.
    pub fn claim_session_and_spawn(&self, claim: SubagentSpawnClaim) -> Result<SpawnClaimOutcome> {
        self.claim_session_and_spawn_at(claim, now_ms())
    }

    /// [`ClaimsLog::claim_session_and_spawn`] with the id claim's time given (an import keeps
    /// the original's claim time).
    pub fn claim_session_and_spawn_at(
        &self,
        claim: SubagentSpawnClaim,
        created_at: u64,
    ) -> Result<SpawnClaimOutcome> {
        check_child_header(&claim)?;
        let asked = claim.clone();
        Ok(match self.take_id_and_spawn(claim, created_at)? {
            OwnSpawn::Created => SpawnClaimOutcome {
                claim: asked,
                created: true,
            },
            OwnSpawn::Existing(claim) => SpawnClaimOutcome {
                claim,
                created: false,
            },
        })
    }

    /// [`ClaimsLog::claim_session_and_spawn`] of a claim [`spawn_claim_of`](crate::claims::spawn_claim_of) made from a decoded
    /// header: it carries its own child's header by construction, which is not decoded again.
    pub(crate) fn claim_own_spawn(&self, claim: SubagentSpawnClaim) -> Result<OwnSpawn> {
        debug_assert!(check_child_header(&claim).is_ok());
        self.take_id_and_spawn(claim, now_ms())
    }

    fn take_id_and_spawn(&self, claim: SubagentSpawnClaim, created_at: u64) -> Result<OwnSpawn> {
        validate_spawn_claim(&claim)?;
        let session = SessionCreateClaim {
            session_id: claim.child_session_id.clone(),
            created_at,
        };
        validate_session_claim(&session)?;
        let key = claim.key();
        let records = vec![ClaimRecord::Session(session), ClaimRecord::Spawn(claim)];
        let (st, appended) = self.commit_records(records)?;
        if appended.get(1) == Some(&true) {
            // Stored as given: no copy of the claim (and the header it carries) is made.
            return Ok(OwnSpawn::Created);
        }
        let stored: Option<&StoredSpawnClaim> = st.log.tables.spawn_claim(&key);
        let claim = stored
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(OwnSpawn::Existing(claim))
    }

    /// Takes a session id for good; an id already taken is a conflict.
    pub fn claim_session_create(&self, session_id: &str) -> Result<SessionCreateClaim> {
        self.claim_session_create_at(session_id, now_ms())
    }

    /// [`ClaimsLog::claim_session_create`] with the creation time given.
    pub fn claim_session_create_at(
        &self,
        session_id: &str,
        created_at: u64,
    ) -> Result<SessionCreateClaim> {
        let claim = SessionCreateClaim {
            session_id: session_id.to_owned(),
            created_at,
        };
        validate_session_claim(&claim)?;
        drop(self.commit_record(ClaimRecord::Session(claim.clone()))?);
        Ok(claim)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
