//! The claims log: the root's idempotency claims (agent-graph intent claims and their admission
//! status, subagent-spawn claims, session-create claims) in one fsynced, hash-chained log,
//! replayed idempotently at open.

mod log;
mod record;
mod replay;
mod request;
mod rules;
mod spawn_header;
mod table;

pub(crate) use log::OwnSpawn;
pub use log::{ClaimsLog, GraphClaimOutcome, SpawnClaimOutcome};
pub use replay::{replay_claims, replay_claims_visiting, ClaimsLink, ClaimsReplay, CLAIMS_FILE};
pub use request::{
    validate_graph_request, validate_spawn_claim, AdmissionStatus, AdmissionStatusChange,
    AgentGraphIntentClaim, AgentGraphIntentClaimRequest, SessionCreateClaim, SubagentSpawnClaim,
};
pub use spawn_header::spawn_claim_of;
pub use table::{
    ClaimRecord, ClaimTables, Decision, StoredGraphIntentClaim, StoredSessionClaim,
    StoredSpawnClaim,
};
