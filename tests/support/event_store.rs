//! The runtime-event store's tests' shared steps: a store over a real root, one session's
//! whole turns written through it, and its sidecar's bytes.

use super::events::*;
use super::owner;
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::{RealStorage, Storage};
use makalog::store::RuntimeEventStore;
use std::sync::Arc;

pub const S: &str = "session-events";

pub fn store(storage: &Arc<RealStorage>) -> RuntimeEventStore {
    RuntimeEventStore::open(&owner(storage), WriterConfig::default())
}

/// Writes one whole turn: opening, user message, `n_text` texts, terminal.
pub fn turn(store: &RuntimeEventStore, run: &str, ts: f64, n_text: usize, status: &str) {
    let t = format!("turn-of-{run}");
    store
        .append(&opening(S, run, &t, ts), Durability::Durable)
        .expect("opening");
    store
        .append(
            &user(S, run, &t, &format!("{run}-user"), ts + 1.0, "hello"),
            Durability::Durable,
        )
        .expect("user");
    for i in 0..n_text {
        store
            .append(
                &text(
                    S,
                    run,
                    &t,
                    &format!("{run}-text-{i}"),
                    ts + 2.0 + i as f64,
                    "words",
                ),
                Durability::Durable,
            )
            .expect("text");
    }
    store
        .append(
            &terminal(S, run, &t, &format!("{run}-end"), ts + 100.0, status),
            Durability::Durable,
        )
        .expect("terminal");
}

/// Where session [`S`]'s sidecar lies on disk.
pub fn sidecar_path(storage: &Arc<RealStorage>) -> std::path::PathBuf {
    storage
        .describe_root()
        .join("sessions")
        .join(S)
        .join("index")
}

pub fn sidecar_bytes(storage: &Arc<RealStorage>) -> Vec<u8> {
    std::fs::read(sidecar_path(storage)).expect("sidecar")
}
