//! The SHA-256 chain that runs across every frame of a session and across its segments.

use sha2::{Digest, Sha256};

/// Length of a chain value in bytes.
pub const CHAIN_LEN: usize = 32;

/// A chain value: SHA-256 committing to every frame before it.
pub type ChainValue = [u8; CHAIN_LEN];

const GENESIS_DOMAIN: &[u8] = b"makalog segment chain v1\0";

/// The chain value a session starts from. It binds the chain to the session id, so a
/// segment copied into another session's directory breaks the chain.
pub fn genesis_chain(session_id: &str) -> ChainValue {
    let mut h = Sha256::new();
    h.update(GENESIS_DOMAIN);
    h.update(session_id.as_bytes());
    h.finalize().into()
}

/// The chain value of a frame: SHA-256(prev ‖ seq u64 LE ‖ kind u8 ‖ payload length u32 LE ‖ payload).
pub fn next_chain(prev: &ChainValue, seq: u64, kind: u8, payload: &[u8]) -> ChainValue {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(seq.to_le_bytes());
    h.update([kind]);
    h.update((payload.len() as u32).to_le_bytes());
    h.update(payload);
    h.finalize().into()
}

/// Lowercase hex of a chain value, as `makalog verify` prints it.
pub fn chain_hex(value: &ChainValue) -> String {
    super::hex(value)
}
