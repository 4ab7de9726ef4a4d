//! Writing an import through the stores: what the target already holds is checked against the
//! plan first, then only what is missing is written.

use super::plan::{GraphClaimPlan, IdClaim, Planned, SessionPlan};
use crate::claims::{AdmissionStatus, AgentGraphIntentClaim, SubagentSpawnClaim};
use crate::error::{Error, Result};
use crate::segment::layout::session_dir;
use crate::segment::SessionReader;
use crate::storage::Storage;
use crate::store::{ExecutionStores, SessionBatch};
use std::collections::HashSet;

/// Records queued in one batch before it is made durable: one sync covers many records,
/// while what is queued stays bounded.
const BATCH_RECORDS: usize = 4096;

/// What applying a plan came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOutcome {
    /// Session records written now.
    pub records_written: usize,
    /// Session records the target already held.
    pub records_present: usize,
    /// Sessions that got at least one record now.
    pub sessions_written: usize,
    /// Claims (ids, spawns, graph intents and their status changes) written now.
    pub claims_written: usize,
    /// Claims the target already held.
    pub claims_present: usize,
}

impl ImportOutcome {
    /// True when the target already held everything.
    pub fn wrote_nothing(&self) -> bool {
        self.records_written == 0 && self.claims_written == 0
    }
}

/// What the target holds of a session's id claim.
enum IdState {
    /// Nothing: the id is free.
    Absent,
    /// The claim the plan makes, whole.
    Whole,
    /// A subagent's id claim at the plan's time without its spawn: what a crash between the
    /// two records of one sync leaves.
    IdOnly,
    /// Another claim.
    Other(String),
}

/// True when two spawn claims are the same, the child's header compared in canonical form.
fn same_spawn(a: &SubagentSpawnClaim, b: &SubagentSpawnClaim) -> bool {
    let header =
        |c: &SubagentSpawnClaim| c.child_header.as_ref().map(crate::event::canonical_string);
    a.key() == b.key()
        && a.request_fingerprint == b.request_fingerprint
        && a.child_session_id == b.child_session_id
        && header(a) == header(b)
}

fn conflict(what: String) -> Error {
    Error::ImportConflict { what }
}

/// The root an import writes into, open for writing.
pub struct Target<'a> {
    stores: &'a ExecutionStores,
    /// The children of the target's spawn claims.
    spawned: HashSet<String>,
}

impl<'a> Target<'a> {
    /// The target `stores` write to.
    pub fn new(stores: &'a ExecutionStores) -> Result<Self> {
        let spawned = stores
            .claims
            .list_subagent_spawn_claims()?
            .into_iter()
            .map(|c| c.child_session_id)
            .collect();
        Ok(Target { stores, spawned })
    }

    /// True when the target holds anything of session `id`: its files or its id's claim.
    pub fn holds(&self, id: &str) -> Result<bool> {
        let dir = session_dir(id);
        Ok(self
            .stores
            .runtime_events
            .storage()
            .entry_kind(&dir)
            .map_err(|e| Error::io(&dir, "stat", e))?
            .is_some()
            || self.stores.claims.is_session_id_taken(id)?)
    }

    /// Checks the target against a session's plan without writing: its stored records must be
    /// the plan's first ones, byte for byte, and its id's claim the one the plan makes.
    /// Returns how many of the planned records are already stored.
    pub fn check_session(&self, session: &SessionPlan) -> Result<usize> {
        if let IdState::Other(why) = self.id_state(session)? {
            return Err(conflict(format!("session {}: {why}", session.session_id)));
        }
        stored_prefix(self.stores.runtime_events.storage(), session)
    }

    /// What the target's claims log holds of the session's id claim.
    fn id_state(&self, session: &SessionPlan) -> Result<IdState> {
        let id = &session.session_id;
        let claims = &self.stores.claims;
        let own = claims.read_session_claim(id)?;
        Ok(match &session.id_claim {
            IdClaim::Create { .. } if self.spawned.contains(id) => {
                IdState::Other("it is a subagent in the target, not in the source".into())
            }
            IdClaim::Create { at } => match own {
                None => IdState::Absent,
                Some(c) if c.created_at == *at => IdState::Whole,
                Some(c) => IdState::Other(format!(
                    "its id is taken in the target since {}, not {at}",
                    c.created_at
                )),
            },
            IdClaim::Spawn { claim, at } => match claims.read_subagent_spawn_claim(&claim.key())? {
                Some(stored) if same_spawn(&stored, claim) => IdState::Whole,
                Some(stored) => IdState::Other(format!(
                    "its spawn is claimed in the target for other work (child {})",
                    stored.child_session_id
                )),
                // A crash may keep the id's claim and tear the spawn's, made in one sync.
                None => match own {
                    Some(c) if c.created_at == *at && !self.spawned.contains(id) => IdState::IdOnly,
                    None if !self.spawned.contains(id) => IdState::Absent,
                    _ => IdState::Other("its id is taken in the target by another claim".into()),
                },
            },
        })
    }

    /// Checks that every graph intent claim the target holds is the plan's, at a status the
    /// plan's reaches.
    pub fn check_graph_claims(&self, plans: &[GraphClaimPlan]) -> Result<()> {
        for g in plans {
            let r = &g.request;
            let Some(stored) = self
                .stores
                .claims
                .read_agent_graph_intent_claim(&r.graph_id, &r.intent_id)?
            else {
                continue;
            };
            let ours = AgentGraphIntentClaim::new(r.clone(), g.claimed_at);
            let status_differs = stored.status > g.status
                || (stored.status == g.status && stored.cancel_reason != g.reason);
            if stored.claim != ours || status_differs {
                return Err(conflict(format!(
                    "agent graph intent {}/{} is claimed in the target otherwise",
                    r.graph_id, r.intent_id
                )));
            }
        }
        Ok(())
    }

    /// Writes what of a session the target lacks, its first `have` records being stored
    /// already (as [`Target::check_session`] answered); `progress` is told each batch's
    /// records as they become durable.
    pub fn write_session(
        &self,
        session: &SessionPlan,
        have: usize,
        out: &mut ImportOutcome,
        progress: &mut dyn FnMut(usize),
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
            queue(&mut batch, planned)?;
            out.records_written += 1;
            if batch.queued() >= BATCH_RECORDS {
                progress(batch.queued());
                batch.commit()?;
                batch = SessionBatch::new(events, &session.session_id);
            }
        }
        let queued = batch.queued();
        batch.commit()?;
        progress(queued);
        Ok(())
    }

    /// Takes the session's id (and its spawn) unless the target already holds the claim.
    fn claim_id(&self, session: &SessionPlan, out: &mut ImportOutcome) -> Result<()> {
        let claims = &self.stores.claims;
        match (self.id_state(session)?, &session.id_claim) {
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

/// How many of the session's planned records its log already holds; a record that is not the
/// planned one, or one beyond the plan, is a conflict.
fn stored_prefix(storage: &dyn Storage, session: &SessionPlan) -> Result<usize> {
    let id = &session.session_id;
    let dir = session_dir(id);
    if storage
        .entry_kind(&dir)
        .map_err(|e| Error::io(&dir, "stat", e))?
        .is_none()
    {
        return Ok(0);
    }
    let mut n = 0;
    for record in SessionReader::open(storage, id, 1)? {
        let r = record?;
        match session.records.get(n) {
            Some(p) if p.kind() == r.kind && p.payload() == &r.payload[..] => n += 1,
            Some(_) => {
                return Err(conflict(format!(
                    "session {id} in the target holds another {} at record seq {} ({}, byte {})",
                    r.kind.name(),
                    r.seq,
                    r.file.display(),
                    r.offset
                )))
            }
            None => {
                return Err(conflict(format!(
                    "session {id} in the target holds more records than the source has ({})",
                    session.records.len()
                )))
            }
        }
    }
    Ok(n)
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
