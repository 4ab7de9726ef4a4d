//! What the session-cost tests share: a root on counting storage, its owner, a session's
//! files, and a short turn.

use super::counting::{counting, CountingStorage};
use super::events::{opening, terminal, text, user};
use makalog::root::Owner;
use makalog::segment::Durability;
use makalog::store::RuntimeEventStore;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// One turn of a session: its opening, the user's message, a text, the terminal event.
pub fn turn(store: &RuntimeEventStore, session: &str, run: &str, ts: f64) {
    let t = format!("turn-{run}");
    for e in [
        opening(session, run, &t, ts),
        user(session, run, &t, &format!("{run}-user"), ts + 1.0, "hello"),
        text(session, run, &t, &format!("{run}-text"), ts + 2.0, "hi"),
        terminal(
            session,
            run,
            &t,
            &format!("{run}-end"),
            ts + 3.0,
            "completed",
        ),
    ] {
        store.append(&e, Durability::Durable).expect("append");
    }
}

pub fn metered() -> (tempfile::TempDir, Arc<CountingStorage>) {
    metered_with_syncs().0
}

/// A new root on counting storage, with its counter of `fdatasync` calls.
#[allow(clippy::type_complexity)]
pub fn metered_with_syncs() -> ((tempfile::TempDir, Arc<CountingStorage>), Arc<AtomicU64>) {
    let t = tempfile::tempdir().expect("tmp");
    let (storage, syncs) = counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    ((t, storage), syncs)
}

pub fn owner_of(storage: &Arc<CountingStorage>) -> Owner {
    Owner::try_acquire(storage.clone())
        .expect("acquire")
        .expect("lease free")
}

pub fn session_dir(storage: &CountingStorage, session: &str) -> PathBuf {
    use makalog::storage::Storage;
    storage.describe_root().join("sessions").join(session)
}

pub fn segment(storage: &CountingStorage, session: &str) -> PathBuf {
    session_dir(storage, session).join("00000000000000000001.seg")
}

/// The data end of a session's only segment: where its last frame ends.
pub fn data_end(storage: &CountingStorage, session: &str) -> u64 {
    let reader = makalog::segment::SessionReader::open(storage, session, 1).expect("reader");
    let last = reader.last().expect("a record").expect("valid");
    last.end
}

pub fn storage_root(storage: &CountingStorage) -> PathBuf {
    use makalog::storage::Storage;
    storage.describe_root()
}

/// Two turns (runs `r1`, `r2`) in `session` through a store over `owner`'s root with `config`,
/// then a clean close: a log and a sidecar that covers all of it.
pub fn two_turns_closed(owner: &Owner, session: &str, config: makalog::segment::WriterConfig) {
    let store = RuntimeEventStore::open(owner, config);
    turn(&store, session, "r1", 1.0);
    turn(&store, session, "r2", 10.0);
    store.close().expect("close");
}

/// The last record of `session`'s log, which must be valid to its end.
pub fn last_record(storage: &CountingStorage, session: &str) -> makalog::segment::Record {
    makalog::segment::SessionReader::open(storage, session, 1)
        .expect("reader")
        .last()
        .expect("a record")
        .expect("valid")
}
