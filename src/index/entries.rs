//! The entries a session's view is made of, as the sidecar stores them: covers, runs,
//! invocations with their kept events, event ids and where records lie.

use super::facts::EventFacts;
use super::invocations::utf16_cmp;
use crate::format::ChainValue;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// How far the view covers one segment: up to and including its last record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cover {
    pub ordinal: u64,
    /// Offset of the segment's last record covered.
    pub last_frame_offset: u64,
    /// Offset just past it.
    pub data_end: u64,
    /// Its sequence number.
    pub last_seq: u64,
    /// The chain value it stores.
    pub chain: ChainValue,
}

/// A run: its invocation and turn, and whether a terminal event has sealed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEntry {
    pub invocation_id: String,
    pub turn_id: String,
    pub sealed: bool,
}

/// An event kept by the view with its place in read order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyedEvent {
    pub ts: f64,
    pub run_id: String,
    pub event_seq: u64,
    pub id: String,
    /// Where the event's frame lies: its canonical JSON is read back from there.
    pub at: StoredAt,
}

impl KeyedEvent {
    pub(super) fn of(event: &EventFacts<'_>, at: StoredAt, event_seq: u64) -> KeyedEvent {
        KeyedEvent {
            ts: event.ts,
            run_id: event.run_id.clone().into_owned(),
            event_seq,
            id: event.id.clone().into_owned(),
            at,
        }
    }

    /// Read order (§3): ts, runId, sequence, id.
    pub(super) fn read_cmp(&self, other: &KeyedEvent) -> Ordering {
        self.ts
            .total_cmp(&other.ts)
            .then_with(|| utf16_cmp(&self.run_id, &other.run_id))
            .then_with(|| self.event_seq.cmp(&other.event_seq))
            .then_with(|| utf16_cmp(&self.id, &other.id))
    }
}

/// An invocation's state: its run and turn, its last sequence number, its opening and its
/// first terminal event in read order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvocationEntry {
    pub run_id: String,
    pub turn_id: String,
    pub max_seq: u64,
    pub opening: Option<KeyedEvent>,
    pub terminal: Option<KeyedEvent>,
}

/// Where an event id was stored: fixed size, so the sidecar can search it in place. An append
/// that finds its id here reads the stored event back to tell a repeat from a conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdEntry {
    /// [`id_hash`] of the id: the sort key.
    pub hash: u64,
    /// The record's sequence number in the session.
    pub record_seq: u64,
    /// The event's sequence number in its invocation.
    pub event_seq: u64,
    /// Ordinal of the segment holding the record.
    pub ordinal: u64,
    /// Offset of its frame there.
    pub offset: u64,
}

/// The hash an id is searched by: 64-bit FNV-1a of its UTF-8 bytes. Ids may collide (FNV
/// collisions are easy to construct), so every match is confirmed by reading the stored event
/// back; speed matters, since a rebuild hashes every id.
pub fn id_hash(id: &str) -> u64 {
    let mut h = Fnv::default();
    std::hash::Hasher::write(&mut h, id.as_bytes());
    std::hash::Hasher::finish(&h)
}

/// Hashes the in-memory id map's keys with a per-process random key (SipHash), not with the
/// unkeyed [`id_hash`]: ids crafted to collide under FNV would otherwise make every insert of
/// a session walk one long probe sequence. (Measured: a rebuild runs at the same rate either
/// way, `cargo bench --bench events`.) The sidecar's on-disk table keeps FNV, where every match
/// is confirmed by reading the event back.
pub type IdHasher = std::collections::hash_map::RandomState;

/// 64-bit FNV-1a as a [`std::hash::Hasher`].
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Where a record is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAt {
    pub record_seq: u64,
    pub ordinal: u64,
    pub offset: u64,
}
