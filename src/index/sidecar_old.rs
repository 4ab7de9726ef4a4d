//! The readers of older sidecars' sections. In version 1 (the layout of version 2) an
//! invocation's opening and terminal events held their canonical JSON instead of where their
//! frames lie; the ids section says where every recorded event lies, so a version 1 sidecar
//! reads into the same view a rebuild makes. Version 3's session state has no start
//! rejections (its writer knew none). Either is rewritten in this build's version the next
//! time it is written.

use super::entries::{id_hash, InvocationEntry, KeyedEvent, StoredAt};
use super::messages::Messages;
use super::session_state::SessionState;
use super::sidecar::{bincode_err, find_ids};
use crate::format::FormatError;
use serde::Deserialize;

#[derive(Deserialize)]
struct KeyedEventV1 {
    ts: f64,
    run_id: String,
    event_seq: u64,
    id: String,
    /// Read past: version 2 reads the JSON from the log.
    _json: String,
}

#[derive(Deserialize)]
struct InvocationEntryV1 {
    run_id: String,
    turn_id: String,
    max_seq: u64,
    opening: Option<KeyedEventV1>,
    terminal: Option<KeyedEventV1>,
}

/// The invocations section of a version 1 sidecar, each kept event placed by the ids section
/// (the entry with its id and its sequence number in its invocation).
pub(super) fn invocations(
    body: &[u8],
    ids: &[u8],
) -> Result<Vec<(String, InvocationEntry)>, FormatError> {
    let old: Vec<(String, InvocationEntryV1)> = bincode::deserialize(body).map_err(bincode_err)?;
    let place = |k: KeyedEventV1| -> Result<KeyedEvent, FormatError> {
        let entry = find_ids(ids, id_hash(&k.id))?
            .into_iter()
            .find(|e| e.event_seq == k.event_seq)
            .ok_or_else(|| {
                FormatError::new(
                    0,
                    format!("version 1 sidecar: event {} is not in its ids", k.id),
                )
            })?;
        Ok(KeyedEvent {
            ts: k.ts,
            run_id: k.run_id,
            event_seq: k.event_seq,
            id: k.id,
            at: StoredAt {
                record_seq: entry.record_seq,
                ordinal: entry.ordinal,
                offset: entry.offset,
            },
        })
    };
    old.into_iter()
        .map(|(id, inv)| {
            Ok((
                id,
                InvocationEntry {
                    run_id: inv.run_id,
                    turn_id: inv.turn_id,
                    max_seq: inv.max_seq,
                    opening: inv.opening.map(place).transpose()?,
                    terminal: inv.terminal.map(place).transpose()?,
                },
            ))
        })
        .collect()
}

#[derive(Deserialize)]
struct SessionStateV3 {
    header: Option<String>,
    messages: Messages,
    runs: super::run_state::Runs,
    admissions: std::collections::BTreeMap<String, String>,
}

/// The session state section of a version 3 sidecar.
pub(super) fn session_state_v3(body: &[u8]) -> Result<SessionState, FormatError> {
    let old: SessionStateV3 = bincode::deserialize(body).map_err(bincode_err)?;
    Ok(SessionState {
        header: old.header,
        messages: old.messages,
        runs: old.runs,
        admissions: old.admissions,
        ..SessionState::default()
    })
}
