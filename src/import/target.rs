//! The root an import writes into, and what writing to it came to.

use crate::error::{Error, Result};
use crate::segment::layout::session_dir;
use crate::store::ExecutionStores;
use std::collections::HashSet;

/// What writing an import came to.
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

/// The root an import writes into, open for writing: checked against every plan first
/// (`check.rs`), then written (`write.rs`).
pub struct Target<'a> {
    pub(super) stores: &'a ExecutionStores,
    /// The children of the target's spawn claims.
    pub(super) spawned: HashSet<String>,
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

    /// True when the target holds anything of session `id` (a valid session id): its files or
    /// its id's claim.
    pub fn holds(&self, id: &str) -> Result<bool> {
        crate::format::validate_session_id(id).map_err(Error::InvalidInput)?;
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
}

pub(super) fn conflict(what: String) -> Error {
    Error::ImportConflict { what }
}
