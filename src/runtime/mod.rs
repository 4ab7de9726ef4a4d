//! The runtime (MAKA-MODEL §11–§12), on tokio: backends and their registry, the fake backend,
//! and `SessionManager`, which runs turns through backends and writes them to the stores in
//! the order of §12.
//!
//! Store calls are synchronous and block the calling task for the length of a sync; a host
//! runs the manager on a multi-threaded runtime.

mod abort;
mod backend;
mod begin;
mod events;
mod fake;
mod manager;
mod mapping;
mod sources;
mod stream;

pub use abort::{AbortController, AbortSignal};
pub use backend::{Backend, BackendContext, BackendFactory, BackendRegistry, SendInput};
pub use events::SessionEvent;
pub use fake::{FakeBackend, FAKE_ASK_USER_QUESTION_PROMPT, FAKE_ERROR_PROMPT_PREFIX};
pub use manager::{SessionManager, Turn, TurnInput, TurnOutcome};
pub use sources::Sources;
