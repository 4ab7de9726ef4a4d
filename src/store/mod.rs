//! Typed stores over the session ledger.

mod admissions;
mod appends;
mod batch;
mod catalog;
mod event_reads;
mod execution;
mod first_segment;
mod identity;
mod live;
mod messages;
mod open_sessions;
mod read_only_sessions;
mod read_view;
mod reads;
mod runs;
mod runtime_events;
mod sessions;
mod sidecar_file;
mod stored;
mod subagents;
mod terminal;
mod vouched;

pub use admissions::{Admission, Rejection};
pub use batch::SessionBatch;
pub use event_reads::SessionRuntimeEvents;
pub use execution::{open_execution_stores_for_write, open_execution_stores_with, ExecutionStores};
pub use identity::check_identity;
pub use open_sessions::{DEFAULT_MAX_OPEN_SESSIONS, MAX_CLOSING};
pub use read_only_sessions::{ReadOnlySessions, ReadableSessions, SessionContents};
pub use read_view::{read_only_index, Sidecars};
pub(crate) use runs::run_is_new;
pub use runs::{AgentRunStore, RunWithEvents};
pub use runtime_events::{AppendedEvent, RuntimeEventStore};
pub use sessions::SessionStore;
pub use subagents::SubagentCreated;
pub use terminal::UNKNOWN_CLASS;
