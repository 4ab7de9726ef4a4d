//! makalog: the durable ledger of a coding-agent runtime, in append-only, checksummed,
//! hash-chained segment files that can be verified and replayed offline.
//!
//! Layers, each calling only the ones below it: [`format`] (pure bytes), [`storage`] (the one
//! door to the disk), [`segment`] (per-session log: writer, reader, recovery), [`root`] (the
//! marker), [`verify`] (offline checks of a whole root).

pub mod claims;
mod commit;
pub mod error;
pub mod event;
pub mod format;
pub mod index;
pub mod recovery;
pub mod root;
pub mod segment;
pub mod storage;
pub mod store;
pub mod verify;

pub use error::{Error, Result};
