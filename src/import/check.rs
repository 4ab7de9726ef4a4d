//! Checking a target against an import's plans without writing: a session's stored records
//! must be the plan's first ones, byte for byte, and every claim the target holds under the
//! plan's keys the one the plan makes.

use super::plan::{GraphClaimPlan, IdClaim, SessionPlan};
use super::target::{conflict, Target};
use crate::claims::{AgentGraphIntentClaim, SubagentSpawnClaim};
use crate::error::{Error, Result};
use crate::segment::layout::session_dir;
use crate::segment::SessionReader;
use crate::storage::Storage;
use std::collections::HashMap;

/// What the target holds of a session's id claim.
pub(super) enum IdState {
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

impl Target<'_> {
    /// Checks the target against a session's plan: its id's claim and its records. Returns
    /// how many of the planned records are already stored.
    pub fn check_session(&self, session: &SessionPlan) -> Result<usize> {
        self.check_id(&session.session_id, &session.id_claim)?;
        stored_prefix(self.stores.runtime_events.storage(), session)
    }

    /// Checks that the target holds no other claim under a session's id or spawn key: what an
    /// import checks of every session before it writes, planned or not.
    pub fn check_id(&self, session_id: &str, claim: &IdClaim) -> Result<()> {
        match self.id_state(session_id, claim)? {
            IdState::Other(why) => Err(conflict(format!("session {session_id}: {why}"))),
            _ => Ok(()),
        }
    }

    /// What the target's claims log holds of the session's id claim.
    pub(super) fn id_state(&self, id: &str, claim: &IdClaim) -> Result<IdState> {
        let claims = &self.stores.claims;
        let own = claims.read_session_claim(id)?;
        Ok(match claim {
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

    /// Checks every graph intent claim of the plan against the target's: under its (graph,
    /// intent), the same claim at a status the plan's reaches; and no other intent holding
    /// its claim id or its target turn or run (the claims log's other unique keys). The
    /// target's claims are looked up by those keys, not walked for each planned one: a rerun
    /// over a root holding them all would cost their number squared.
    pub fn check_graph_claims(&self, plans: &[GraphClaimPlan]) -> Result<()> {
        let stored_all = self.stores.claims.list_agent_graph_intent_claims(None)?;
        type Keyed<'a, K> = HashMap<K, Vec<&'a crate::claims::StoredGraphIntentClaim>>;
        type Pair<'a> = (&'a str, &'a str);
        let mut by_intent: Keyed<Pair> = HashMap::new();
        let mut by_id: Keyed<&str> = HashMap::new();
        let mut by_turn: Keyed<Pair> = HashMap::new();
        let mut by_run: Keyed<Pair> = HashMap::new();
        for stored in &stored_all {
            let c = &stored.claim;
            by_intent
                .entry((&c.graph_id, &c.intent_id))
                .or_default()
                .push(stored);
            by_id.entry(&c.claim_id).or_default().push(stored);
            let turn = (c.target_session_id.as_str(), c.target_turn_id.as_str());
            by_turn.entry(turn).or_default().push(stored);
            let run = (c.target_session_id.as_str(), c.target_run_id.as_str());
            by_run.entry(run).or_default().push(stored);
        }
        let none = Vec::new();
        for g in plans {
            let r = &g.request;
            let ours = AgentGraphIntentClaim::new(r.clone(), g.claimed_at);
            let key = (r.graph_id.as_str(), r.intent_id.as_str());
            let same_intent = by_intent.get(&key).unwrap_or(&none).iter().find(|stored| {
                stored.claim != ours
                    || stored.status > g.status
                    || (stored.status == g.status && stored.cancel_reason != g.reason)
            });
            let turn = (r.target_session_id.as_str(), r.target_turn_id.as_str());
            let run = (r.target_session_id.as_str(), r.target_run_id.as_str());
            let other_intent = [
                by_id.get(r.claim_id.as_str()),
                by_turn.get(&turn),
                by_run.get(&run),
            ]
            .into_iter()
            .flatten()
            .flatten()
            .find(|stored| {
                (
                    stored.claim.graph_id.as_str(),
                    stored.claim.intent_id.as_str(),
                ) != key
            });
            if let Some(stored) = same_intent.or(other_intent) {
                let c = &stored.claim;
                return Err(conflict(format!(
                    "agent graph intent {}/{} is claimed in the target otherwise (by {}/{})",
                    r.graph_id, r.intent_id, c.graph_id, c.intent_id
                )));
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
