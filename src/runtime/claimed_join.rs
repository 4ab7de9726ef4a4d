//! Calls for one claim join (MAKA-MODEL §12 runClaimedAgentGraphIntent step 2): the first
//! call runs the claim and tells its outcome, its result or its failure, to the calls waiting
//! on it, and to no later one; each call keeps its own abort.

use super::claimed::{aborted, conflict};
use super::claimed_call::{ClaimedIntentRun, ClaimedRunResult};
use super::intent::{call_fingerprint, check_intent};
use super::manager::{lock, SessionManager};
use crate::error::{Error, Result};
use std::sync::Arc;

impl SessionManager {
    /// Runs the claimed intent `run.intent_id` of graph `run.graph_id` in its child session,
    /// exactly once.
    pub async fn run_claimed_agent_graph_intent(
        &self,
        run: ClaimedIntentRun,
    ) -> Result<ClaimedRunResult> {
        let stores = self.stores();
        let stored = stores
            .claims
            .read_agent_graph_intent_claim(&run.graph_id, &run.intent_id)?
            .ok_or_else(|| Error::NotFound {
                what: format!(
                    "claim of intent {} of graph {}",
                    run.intent_id, run.graph_id
                ),
            })?;
        let claim = stored.claim;
        check_intent(&claim, &run.intent, &run.prompt)?;
        let call = call_fingerprint(&claim, &run.prompt);
        let claim_lock = {
            let mut calls = lock(&self.inner.claimed)?;
            let entry = calls
                .entry(claim.claim_id.clone())
                .or_insert_with(|| (call.clone(), Arc::default()));
            if entry.0 != call {
                return Err(conflict(format!(
                    "claim {} is running with another prompt",
                    claim.claim_id
                )));
            }
            entry.1.clone()
        };
        // The first call runs the claim and tells its outcome to the calls waiting on it, then
        // takes the claim out of the map, so no later call gets it. A call that ended by its
        // own abort, or was dropped, tells nothing: the next waiting runs the claim itself.
        // Each call waits as long as its own abort allows.
        let waited = claim_lock.clone().lock_owned();
        let outcome = match run.abort.clone() {
            Some(signal) => tokio::select! {
                biased;
                outcome = waited => Some(outcome),
                () = signal.wait() => None,
            },
            None => Some(waited.await),
        };
        let Some(mut outcome) = outcome else {
            self.forget_claim(&claim.claim_id, &claim_lock)?;
            return Err(aborted(&claim, "waiting for the call it joined"));
        };
        let result = match &*outcome {
            Some(Ok(result)) => Ok(result.clone()),
            Some(Err(what)) => Err(Error::JoinedCallFailed {
                claim_id: claim.claim_id.clone(),
                what: what.clone(),
            }),
            None => {
                let result = self.run_claim(&claim, run).await;
                match &result {
                    Err(Error::Aborted { .. }) => {}
                    told => {
                        *outcome = Some(match told {
                            Ok(r) => Ok(r.clone()),
                            Err(e) => Err(e.to_string()),
                        });
                        let mut calls = lock(&self.inner.claimed)?;
                        if calls
                            .get(&claim.claim_id)
                            .is_some_and(|(_, l)| Arc::ptr_eq(l, &claim_lock))
                        {
                            calls.remove(&claim.claim_id);
                        }
                    }
                }
                result
            }
        };
        drop(outcome);
        self.forget_claim(&claim.claim_id, &claim_lock)?;
        result
    }

    /// Takes claim `claim_id`'s entry out of the map once no call holds or waits on it (only
    /// the map and the caller hold `claim_lock`), unless another entry replaced it.
    fn forget_claim(
        &self,
        claim_id: &str,
        claim_lock: &Arc<tokio::sync::Mutex<Option<super::manager::Joined>>>,
    ) -> Result<()> {
        let mut calls = lock(&self.inner.claimed)?;
        let ours = calls
            .get(claim_id)
            .is_some_and(|(_, l)| Arc::ptr_eq(l, claim_lock));
        if ours && Arc::strong_count(claim_lock) == 2 {
            calls.remove(claim_id);
        }
        Ok(())
    }
}
