//! One record of the claims log: a claim or a status change, with its frame kind, its JSON
//! payload, and its strict decoding.

use super::request::{
    validate_graph_request, validate_session_claim, validate_spawn_claim, AdmissionStatusChange,
    AgentGraphIntentClaim, SessionCreateClaim, SubagentSpawnClaim,
};
use crate::error::{Error, Result};
use crate::format::ClaimKind;

/// One record of the claims log, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimRecord {
    Graph(AgentGraphIntentClaim),
    Status(AdmissionStatusChange),
    Spawn(SubagentSpawnClaim),
    Session(SessionCreateClaim),
}

impl ClaimRecord {
    /// The frame kind of this record.
    pub fn kind(&self) -> ClaimKind {
        match self {
            ClaimRecord::Graph(_) => ClaimKind::GraphIntentClaim,
            ClaimRecord::Status(_) => ClaimKind::GraphIntentStatus,
            ClaimRecord::Spawn(_) => ClaimKind::SubagentSpawnClaim,
            ClaimRecord::Session(_) => ClaimKind::SessionCreateClaim,
        }
    }

    /// The payload: JSON with keys sorted at every depth (serde_json's map is ordered).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let value = match self {
            ClaimRecord::Graph(c) => serde_json::to_value(c),
            ClaimRecord::Status(s) => serde_json::to_value(s),
            ClaimRecord::Spawn(c) => serde_json::to_value(c),
            ClaimRecord::Session(c) => serde_json::to_value(c),
        };
        value
            .map(|v| v.to_string().into_bytes())
            .map_err(|e| Error::InvalidInput(format!("claim does not encode: {e}")))
    }

    /// Decodes and validates a payload of `kind`.
    pub fn decode(kind: ClaimKind, payload: &[u8]) -> std::result::Result<ClaimRecord, String> {
        fn parse<T: serde::de::DeserializeOwned>(payload: &[u8]) -> std::result::Result<T, String> {
            serde_json::from_slice(payload).map_err(|e| format!("payload does not decode: {e}"))
        }
        let record = match kind {
            ClaimKind::GraphIntentClaim => {
                let c: AgentGraphIntentClaim = parse(payload)?;
                validate_graph_request(&c.request()).map_err(|e| e.to_string())?;
                ClaimRecord::Graph(c)
            }
            ClaimKind::GraphIntentStatus => ClaimRecord::Status(parse(payload)?),
            ClaimKind::SubagentSpawnClaim => {
                let c: SubagentSpawnClaim = parse(payload)?;
                validate_spawn_claim(&c).map_err(|e| e.to_string())?;
                ClaimRecord::Spawn(c)
            }
            ClaimKind::SessionCreateClaim => {
                let c: SessionCreateClaim = parse(payload)?;
                validate_session_claim(&c).map_err(|e| e.to_string())?;
                ClaimRecord::Session(c)
            }
        };
        Ok(record)
    }
}
