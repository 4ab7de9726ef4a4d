//! Typed stores over the session ledger.

mod runtime_events;

pub use runtime_events::{AppendedEvent, RuntimeEventStore};
