//! Reading the claims log's tables: each answer waits until the records it rests on are
//! durable, so nothing a failed sync takes back is ever answered.

use super::{ClaimsLog, Guard};
use crate::claims::{SessionCreateClaim, StoredGraphIntentClaim, SubagentSpawnClaim};
use crate::error::Result;

impl ClaimsLog {
    /// The durable claim of (graph, intent), with its status.
    pub fn read_agent_graph_intent_claim(
        &self,
        graph_id: &str,
        intent_id: &str,
    ) -> Result<Option<StoredGraphIntentClaim>> {
        let st = self.commit.lock()?;
        let Some(seq) = st
            .log
            .tables
            .graph_claim(graph_id, intent_id)
            .map(|c| c.last_seq)
        else {
            return Ok(None);
        };
        let st = self.commit.wait_durable(st, seq)?;
        Ok(st.log.tables.graph_claim(graph_id, intent_id).cloned())
    }

    /// Durable graph intent claims in claim order, of one graph or of all.
    pub fn list_agent_graph_intent_claims(
        &self,
        graph_id: Option<&str>,
    ) -> Result<Vec<StoredGraphIntentClaim>> {
        let st = self.all_durable()?;
        Ok(st
            .log
            .tables
            .graph_claims(graph_id)
            .into_iter()
            .cloned()
            .collect())
    }

    /// The durable session-create claim of `session_id`, if the id is taken.
    pub fn read_session_claim(&self, session_id: &str) -> Result<Option<SessionCreateClaim>> {
        let st = self.commit.lock()?;
        let Some(seq) = st.log.tables.session_claim(session_id).map(|c| c.seq) else {
            return Ok(None);
        };
        let st = self.commit.wait_durable(st, seq)?;
        Ok(st
            .log
            .tables
            .session_claim(session_id)
            .map(|c| c.claim.clone()))
    }

    /// The durable spawn claim of a spawn key (parent session, parent run, tool call, swarm id,
    /// item id), if any.
    pub fn read_subagent_spawn_claim(
        &self,
        key: &(String, String, String, String, String),
    ) -> Result<Option<SubagentSpawnClaim>> {
        let st = self.commit.lock()?;
        let Some(seq) = st.log.tables.spawn_claim(key).map(|c| c.seq) else {
            return Ok(None);
        };
        let st = self.commit.wait_durable(st, seq)?;
        Ok(st.log.tables.spawn_claim(key).map(|c| c.claim.clone()))
    }

    /// Every durable spawn claim, in claim order.
    pub fn list_subagent_spawn_claims(&self) -> Result<Vec<SubagentSpawnClaim>> {
        let st = self.all_durable()?;
        Ok(st
            .log
            .tables
            .spawn_claims()
            .into_iter()
            .map(|c| c.claim.clone())
            .collect())
    }

    /// True when `session_id` is taken, by a session-create claim or as a spawn's child, once
    /// what says so is durable.
    pub fn is_session_id_taken(&self, session_id: &str) -> Result<bool> {
        let st = self.all_durable()?;
        Ok(st.log.tables.session_claim(session_id).is_some()
            || st.log.tables.spawn_of_child(session_id).is_some())
    }

    /// The tables once every record queued so far is durable: what a listing answers from.
    pub(super) fn all_durable(&self) -> Result<Guard<'_>> {
        let st = self.commit.lock()?;
        let seq = st.next_seq() - 1;
        self.commit.wait_durable(st, seq)
    }
}
