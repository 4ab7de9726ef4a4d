//! Typed stores over the session ledger.

mod identity;
mod live;
mod open_sessions;
mod read_view;
mod reads;
mod runtime_events;
mod stored;

pub use open_sessions::DEFAULT_MAX_OPEN_SESSIONS;
pub use runtime_events::{AppendedEvent, RuntimeEventStore};
