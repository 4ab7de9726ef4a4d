//! The stores of one root opened together for writing under its owner's lease: the claims log,
//! the runtime-event store, and the session store over them.

use super::{AgentRunStore, RuntimeEventStore, SessionStore};
use crate::claims::ClaimsLog;
use crate::error::{Error, Result};
use crate::root::Owner;
use crate::segment::WriterConfig;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The execution stores of a root.
pub struct ExecutionStores {
    pub sessions: SessionStore,
    pub runs: AgentRunStore,
    pub runtime_events: Arc<RuntimeEventStore>,
    pub claims: Arc<ClaimsLog>,
    /// Set while a runtime runs over the stores: its live turns, claimed calls and open-runs
    /// slots are its own, so a second would recover the first one's live turns as interrupted.
    runtime: AtomicBool,
}

/// Opens the claims log (recovering it) and the stores over the owner's root, and completes
/// any subagent spawn a crash left without its child's header; sessions are opened, and
/// recovered, on first use.
pub fn open_execution_stores_for_write(owner: &Owner) -> Result<ExecutionStores> {
    open_execution_stores_with(owner, WriterConfig::default())
}

/// [`open_execution_stores_for_write`] with the sessions' writer configuration given.
pub fn open_execution_stores_with(owner: &Owner, config: WriterConfig) -> Result<ExecutionStores> {
    let (claims, _) = ClaimsLog::open(owner)?;
    let claims = Arc::new(claims);
    let runtime_events = Arc::new(RuntimeEventStore::open(owner, config));
    let sessions = SessionStore::new(runtime_events.clone(), claims.clone());
    // A crash between a spawn claim and its child's header is completed now.
    sessions.complete_spawns()?;
    Ok(ExecutionStores {
        sessions,
        runs: AgentRunStore::new(runtime_events.clone()),
        runtime_events,
        claims,
        runtime: AtomicBool::new(false),
    })
}

impl ExecutionStores {
    /// Marks a runtime as running over the stores; refused while another does.
    pub(crate) fn attach_runtime(&self) -> Result<()> {
        self.runtime
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(|_| Error::AlreadyOpen {
                what: "a SessionManager over these stores (one a store: a second would take \
                       the first one's live turns for interrupted ones)"
                    .into(),
            })
    }

    /// The runtime over the stores is gone.
    pub(crate) fn detach_runtime(&self) {
        debug_assert!(self.runtime.load(Ordering::Acquire));
        self.runtime.store(false, Ordering::Release);
    }

    /// Closes every store: sessions synced, their sidecars written and zeros cut, the claims
    /// log closed; reports every failure after trying all.
    pub fn close(self) -> Result<()> {
        let ExecutionStores {
            sessions,
            runs,
            runtime_events,
            claims,
            runtime: _,
        } = self;
        drop((sessions, runs));
        let in_use = || Error::InvalidInput("a store is still in use while it closes".into());
        let events = Arc::try_unwrap(runtime_events)
            .map_err(|_| in_use())
            .and_then(RuntimeEventStore::close);
        let claims = Arc::try_unwrap(claims)
            .map_err(|_| in_use())
            .and_then(ClaimsLog::close);
        Error::all("the stores' close failed", [events, claims])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A close that fails for both stores reports both.
    #[test]
    fn a_close_reports_every_store_that_failed() {
        let t = tempfile::tempdir().expect("tmp");
        let owner = crate::root::try_acquire_owner(t.path())
            .expect("root")
            .expect("lease");
        let stores = open_execution_stores_for_write(&owner).expect("stores");
        let held = (stores.runtime_events.clone(), stores.claims.clone());
        match stores.close() {
            Err(Error::Several { errors, .. }) => assert_eq!(errors.len(), 2, "{errors:?}"),
            other => panic!("expected both stores' errors, got {other:?}"),
        }
        drop(held);
    }
}
