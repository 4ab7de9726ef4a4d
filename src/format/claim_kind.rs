//! The kinds of record the claims log holds.

/// What a claims-log frame's payload is. Code 0 is never valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ClaimKind {
    /// An agent-graph intent claim (MAKA-MODEL §9), with its claimedAt.
    GraphIntentClaim = 1,
    /// An admission status change of a graph intent claim: claimed, executing, cancelled.
    GraphIntentStatus = 2,
    /// A subagent-spawn claim (§5): the spawn key, request fingerprint and child session.
    SubagentSpawnClaim = 3,
    /// A session-create claim: a session id taken, never to be reused.
    SessionCreateClaim = 4,
}

impl ClaimKind {
    /// Every kind, in code order.
    pub const ALL: [ClaimKind; 4] = [
        ClaimKind::GraphIntentClaim,
        ClaimKind::GraphIntentStatus,
        ClaimKind::SubagentSpawnClaim,
        ClaimKind::SessionCreateClaim,
    ];
}

impl super::FrameKind for ClaimKind {
    fn from_code(code: u8) -> Option<ClaimKind> {
        ClaimKind::ALL.into_iter().find(|k| *k as u8 == code)
    }
    fn code(self) -> u8 {
        self as u8
    }
    fn name(self) -> &'static str {
        match self {
            ClaimKind::GraphIntentClaim => "graph_intent_claim",
            ClaimKind::GraphIntentStatus => "graph_intent_status",
            ClaimKind::SubagentSpawnClaim => "subagent_spawn_claim",
            ClaimKind::SessionCreateClaim => "session_create_claim",
        }
    }
}
