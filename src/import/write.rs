//! Writing what of an import a target lacks, after every plan was checked: a session's missing
//! records through the stores, a batch to a sync, and the claims the target does not hold.

use super::check::IdState;
use super::plan::{GraphClaimPlan, IdClaim, Planned, SessionPlan};
use super::target::{conflict, ImportOutcome, Target};
use crate::claims::AdmissionStatus;
use crate::error::{Error, Result};
use crate::store::SessionBatch;

/// Records queued in one batch before it is made durable: one sync covers many records,
/// while what is queued stays bounded.
const BATCH_RECORDS: usize = 4096;

impl Target<'_> {
    /// Writes what of a session the target lacks, its first `have` records being stored
    /// already (as [`Target::check_session`] answered).
    pub fn write_session(
        &self,
        session: &SessionPlan,
        have: usize,
        out: &mut ImportOutcome,
    ) -> Result<()> {
        debug_assert!(have <= session.records.len());
        self.claim_id(session, out)?;
        out.records_present += have;
        if have < session.records.len() {
            out.sessions_written += 1;
        }
        let events = &self.stores.runtime_events;
        // Opened even with nothing to write: an import killed before it closed a session left
        // its log whole but no sidecar, which opening rebuilds (and a current one is kept).
        events.open_session_now(&session.session_id)?;
        let mut batch = SessionBatch::new(events, &session.session_id);
        for planned in &session.records[have..] {
            if let Err(e) = queue(&mut batch, planned) {
                // What was queued before the refusal is in the session's view: made durable.
                batch.commit()?;
                return Err(e);
            }
            out.records_written += 1;
            if batch.queued() >= BATCH_RECORDS {
                batch.commit()?;
                batch = SessionBatch::new(events, &session.session_id);
            }
        }
        batch.commit()
    }

    /// Takes the session's id (and its spawn) unless the target already holds the claim.
    fn claim_id(&self, session: &SessionPlan, out: &mut ImportOutcome) -> Result<()> {
        let claims = &self.stores.claims;
        match (
            self.id_state(&session.session_id, &session.id_claim)?,
            &session.id_claim,
        ) {
            (IdState::Whole, _) => {
                out.claims_present += 1;
                return Ok(());
            }
            (IdState::Other(why), _) => {
                return Err(conflict(format!("session {}: {why}", session.session_id)))
            }
            // Only a spawn's id is ever found alone, so a create's is absent here.
            (IdState::Absent | IdState::IdOnly, IdClaim::Create { at }) => {
                drop(claims.claim_session_create_at(&session.session_id, *at)?)
            }
            (IdState::Absent, IdClaim::Spawn { claim, at }) => {
                drop(claims.claim_session_and_spawn_at(claim.clone(), *at)?)
            }
            (IdState::IdOnly, IdClaim::Spawn { claim, .. }) => {
                drop(claims.claim_subagent_spawn(claim.clone())?)
            }
        }
        out.claims_written += 1;
        Ok(())
    }

    /// Claims each graph intent and moves it to the status it reached, unless already there.
    pub fn write_graph_claims(
        &self,
        plans: &[GraphClaimPlan],
        out: &mut ImportOutcome,
    ) -> Result<()> {
        let claims = &self.stores.claims;
        for g in plans {
            let r = &g.request;
            let stored = match claims.read_agent_graph_intent_claim(&r.graph_id, &r.intent_id)? {
                Some(stored) => {
                    out.claims_present += 1;
                    stored.status
                }
                None => {
                    claims.claim_agent_graph_intent_at(r.clone(), g.claimed_at)?;
                    out.claims_written += 1;
                    AdmissionStatus::Claimed
                }
            };
            if stored != g.status {
                claims.set_agent_graph_intent_status(
                    &r.graph_id,
                    &r.intent_id,
                    g.status,
                    g.reason.as_deref(),
                )?;
                out.claims_written += 1;
            }
        }
        Ok(())
    }

    /// Takes each session id claimed in the source without a session, unless already taken.
    pub fn write_bare_ids(&self, ids: &[(String, u64)], out: &mut ImportOutcome) -> Result<()> {
        for (id, at) in ids {
            if self.stores.claims.is_session_id_taken(id)? {
                out.claims_present += 1;
            } else {
                self.stores.claims.claim_session_create_at(id, *at)?;
                out.claims_written += 1;
            }
        }
        Ok(())
    }
}

fn queue(batch: &mut SessionBatch<'_>, planned: &Planned) -> Result<()> {
    match planned {
        Planned::Record { kind, payload } => batch.record(*kind, payload.as_bytes()),
        Planned::Event { event, seq } => {
            let appended = batch.event(event)?;
            if !appended.created || appended.event_seq != *seq {
                return Err(Error::InvalidInput(format!(
                    "runtime event {} would be stored with sequence {:?} in its invocation, not the source's {:?}",
                    event.id(),
                    appended.event_seq.filter(|_| appended.created),
                    seq
                )));
            }
            Ok(())
        }
    }
}
