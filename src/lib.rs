//! makalog: the durable ledger of a coding-agent runtime, in append-only, checksummed,
//! hash-chained segment files that can be verified and replayed offline.
//!
//! Layers, each calling only the ones below it: [`format`] and [`event`] (pure bytes and the
//! canonical RuntimeEvent), [`storage`] (the one door to the disk, real or simulated),
//! [`recovery`] (the decision table) and group commit, [`root`] (marker and owner lease),
//! [`segment`] (per-session log: writer, reader, scan) and [`claims`] (the claims log),
//! [`index`] (the materialized view and its sidecar), [`store`] (the runtime-event store),
//! [`verify`] (offline checks of a whole root).

pub mod claims;
mod commit;
pub mod error;
pub mod event;
pub mod forensics;
pub mod format;
pub mod import;
pub mod index;
pub mod model;
pub mod parallel;
pub mod recovery;
pub mod root;
pub mod runtime;
pub mod segment;
pub mod storage;
pub mod store;
pub mod verify;

pub use error::{Error, Result};
