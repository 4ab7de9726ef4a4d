//! What an import writes: per session, how its id is claimed and its records in order; the
//! graph intent claims with their admission status.

use crate::claims::{AdmissionStatus, AgentGraphIntentClaimRequest, SubagentSpawnClaim};
use crate::event::RuntimeEvent;
use crate::format::RecordKind;

/// One record of a session, decoded and in its canonical form.
#[derive(Debug, Clone)]
pub enum Planned {
    /// A record of another kind than a runtime event: its canonical JSON.
    Record { kind: RecordKind, payload: String },
    /// A canonical runtime event, and the sequence number in its invocation the source gave
    /// it (checked against the one the store assigns; partial events have none).
    Event {
        event: RuntimeEvent,
        seq: Option<u64>,
    },
}

impl Planned {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        match self {
            Planned::Record { kind, .. } => *kind,
            Planned::Event { .. } => RecordKind::RuntimeEvent,
        }
    }

    /// The bytes the record's frame holds.
    pub fn payload(&self) -> &[u8] {
        match self {
            Planned::Record { payload, .. } => payload.as_bytes(),
            Planned::Event { event, .. } => event.canonical_json().as_bytes(),
        }
    }
}

/// How a session's id is taken in the claims log before its first record.
#[derive(Debug, Clone)]
pub enum IdClaim {
    /// A session created on its own, its id claimed at `at` (ms).
    Create { at: u64 },
    /// A subagent: its id and its spawn claimed together at `at` (ms); the claim carries the
    /// child's header, which must be the session's first record.
    Spawn { claim: SubagentSpawnClaim, at: u64 },
}

/// One session of an import.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub session_id: String,
    pub id_claim: IdClaim,
    /// The records in the order they are written; the first is the session's header.
    pub records: Vec<Planned>,
}

/// A graph intent claim and the admission status it reached.
#[derive(Debug, Clone)]
pub struct GraphClaimPlan {
    pub request: AgentGraphIntentClaimRequest,
    pub claimed_at: u64,
    pub status: AdmissionStatus,
    /// The cancellation reason, for a cancelled claim.
    pub reason: Option<String>,
}
