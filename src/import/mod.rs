//! Importing a ledger another writer kept (the original runtime's SQLite databases, read by the
//! `makalog import-sqlite` tool): the reader turns each session's rows into a [`SessionPlan`]
//! of decoded records, and the claims into [`GraphClaimPlan`]s; a [`Target`] checks them
//! against what the root holds and writes them through the stores, a session at a time, so
//! what an import holds in memory is one session's plan.
//!
//! An import is idempotent and resumable. Each session's planned records are compared with
//! what the target already holds: the stored records must be a prefix of the plan, byte for
//! byte, and only the rest is written; claims already stored are left as they are. So running
//! an import again writes nothing, and one killed halfway and run again ends with the root an
//! uninterrupted run leaves. Anything the target holds that the plan does not (another
//! session under an id of the import, a claim for other work) refuses the whole import before
//! the importer writes anything.

mod check;
mod plan;
mod target;
mod write;

pub use plan::{GraphClaimPlan, IdClaim, Planned, SessionPlan};
pub use target::{ImportOutcome, Target};
