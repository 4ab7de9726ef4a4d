//! The runtime (MAKA-MODEL §11–§12), on tokio: backends and their registry, the fake backend,
//! and `SessionManager`, which runs turns through backends and writes them to the stores in
//! the order of §12.
//!
//! Store calls are synchronous; made from a task, they wait for their syncs in place while
//! another worker stays free, and hand their worker on otherwise (`blocking`).

mod abort;
mod agents;
mod attachments;
mod backend;
mod batch;
mod begin;
mod blocking;
mod claimed;
mod claimed_call;
mod claimed_join;
mod composition;
mod events;
mod fake;
mod intent;
mod lineage;
mod live_turns;
mod manager;
mod mapping;
mod open_runs;
mod opening;
mod recover;
mod recovery_rules;
mod restart;
mod sources;
mod stops;
mod stream;
mod turn_events;

pub use abort::{AbortController, AbortSignal};
pub use agents::{AgentDefinition, LOCAL_READ_AGENT_DEFINITION};
pub use attachments::{AttachmentKind, AttachmentRef, StorageRef};
pub use backend::{Backend, BackendContext, BackendFactory, BackendRegistry, SendInput};
pub use claimed_call::{AdmitExecution, Admitted, ClaimedIntentRun, ClaimedRunResult, OnEvent};
pub use composition::ExecutionComposition;
pub use events::{SessionEvent, ToolResultDetails, ToolStartDetails};
pub use fake::{FakeBackend, FAKE_ASK_USER_QUESTION_PROMPT, FAKE_ERROR_PROMPT_PREFIX};
pub use intent::{claim_id_of, stable_hash, AgentGraphRunnableIntent};
pub use lineage::TurnLineage;
pub use manager::{SessionManager, Turn, TurnInput, TurnOutcome};
pub use open_runs::{read_open_runs, Listing, IDLE_KEPT, OPEN_RUNS_FILE, SLOT_LEN};
pub use recover::RecoveredRun;
pub use recovery_rules::{recovery_reason, APP_RESTARTED, SANDBOX_BOUNDARY_CLOSED};
pub use restart::RecoveryReport;
pub use sources::Sources;
pub use stops::DISPOSED;
pub use turn_events::TurnEvents;
