//! A sync that fails may leave the kernel believing the unsynced pages clean (fsyncgate): they
//! stay readable, but no later sync writes them and a power loss takes them away. A log whose
//! write or sync failed is poisoned; when it is opened again in the same process, what its
//! failed writer had written is written back and synced before it is read, so nothing is
//! acknowledged on top of bytes the disk may not hold. The store opens such a session again
//! by itself.

mod support;

use makalog::claims::ClaimsLog;
use makalog::error::Error;
use makalog::format::RecordKind;
use makalog::root::Owner;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::{Fault, FaultKind, SimRng, SimStorage, Tear};
use makalog::store::RuntimeEventStore;
use std::sync::Arc;
use support::{payload, read_all, sim_root};

const S: &str = "fsyncgate";

/// Text event `i` of the session's one run, saying `words`.
fn text_event(i: u32, words: &str) -> makalog::event::RuntimeEvent {
    support::events::text(
        S,
        "run-1",
        "turn-1",
        &format!("text-{i}"),
        f64::from(i),
        words,
    )
}

fn owner(storage: &Arc<SimStorage>) -> Owner {
    Owner::try_acquire(storage.clone())
        .expect("lease")
        .expect("free")
}

/// No zeros ahead: a durable append is one write and one sync.
fn config() -> WriterConfig {
    WriterConfig {
        prealloc_step: 0,
        ..WriterConfig::default()
    }
}

/// The next sync fails and loses the writes it was to make durable.
fn lose_next_sync(storage: &SimStorage) {
    storage.inject(Fault {
        nth: storage.operations() + 2,
        forever: false,
        kind: FaultKind::SyncLost,
    });
}

/// A writer of `owner` with two records acknowledged and a third whose sync was lost: failed.
fn writer_after_a_lost_sync(storage: &SimStorage, owner: &Owner) -> SegmentWriter {
    let (w, _) = SegmentWriter::open(owner, S, config()).expect("open");
    for i in 1..=2 {
        w.append(RecordKind::Message, &payload(i, 200), Durability::Durable)
            .expect("append");
    }
    lose_next_sync(storage);
    let failed = w.append(RecordKind::Message, &payload(3, 200), Durability::Durable);
    assert!(matches!(failed, Err(Error::Io { .. })), "{failed:?}");
    assert!(!w.is_healthy());
    w
}

/// Opens the log under `owner` (the lost record reads back from the page cache), has one more
/// record acknowledged, loses the power, and checks every acknowledged record survived.
fn acknowledge_then_lose_power(storage: &Arc<SimStorage>, owner: Owner, seed: u64) {
    let (w, _) = SegmentWriter::open(&owner, S, config()).expect("reopen");
    let next = w.next_seq();
    assert_eq!(next, 4, "the lost record reads back from the page cache");
    w.append(
        RecordKind::Message,
        &payload(next, 200),
        Durability::Durable,
    )
    .expect("acknowledged after the reopen");
    drop(w);
    drop(owner);
    storage.crash(Tear::None, &mut SimRng::new(seed));
    let (w, _) = SegmentWriter::open(&self::owner(storage), S, config())
        .expect("every acknowledged record survives the power loss");
    drop(w);
    let recs = read_all(&**storage, S).expect("read");
    assert_eq!(
        recs.len() as u64,
        next,
        "the records before and the one after"
    );
    for r in &recs {
        assert_eq!(r.payload, payload(r.seq, 200));
    }
}

#[test]
fn a_writer_reopened_after_a_lost_sync_never_builds_on_the_lost_bytes() {
    let storage = sim_root();
    let owner = owner(&storage);
    drop(writer_after_a_lost_sync(&storage, &owner));
    acknowledge_then_lose_power(&storage, owner, 1);
}

#[test]
fn the_store_opens_a_session_whose_sync_failed_again_by_itself() {
    let storage = sim_root();
    let owner = owner(&storage);
    let store = RuntimeEventStore::open(&owner, config());
    let ev = |i: u32| text_event(i, "words");
    store.append(&ev(0), Durability::Durable).expect("first");
    store.append(&ev(1), Durability::Durable).expect("second");
    lose_next_sync(&storage);
    assert!(store.append(&ev(2), Durability::Durable).is_err());
    // The next call opens the session again; it was poisoned, never refused for good.
    let later = store
        .append(&ev(3), Durability::Durable)
        .expect("after the failure");
    assert!(later.created);
    drop(store);
    drop(owner);
    storage.crash(Tear::None, &mut SimRng::new(2));
    let owner = self::owner(&storage);
    let store = RuntimeEventStore::open(&owner, config());
    let ids: Vec<String> = store
        .read_session_runtime_events(S)
        .expect("the session opens after the power loss")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    for want in ["text-0", "text-1", "text-3"] {
        assert!(
            ids.iter().any(|id| id == want),
            "{want} missing from {ids:?}"
        );
    }
}

#[test]
fn a_claims_log_reopened_after_a_lost_sync_keeps_every_acknowledged_claim() {
    let storage = sim_root();
    let owner = owner(&storage);
    let (log, _) = ClaimsLog::open(&owner).expect("open");
    log.claim_session_create_at("one", 1).expect("claim");
    lose_next_sync(&storage);
    assert!(log.claim_session_create_at("two", 2).is_err());
    drop(log);
    let (log, _) = ClaimsLog::open(&owner).expect("reopen");
    log.claim_session_create_at("three", 3)
        .expect("claim after");
    drop(log);
    drop(owner);
    storage.crash(Tear::None, &mut SimRng::new(3));
    let (log, _) = ClaimsLog::open(&self::owner(&storage)).expect("open after the power loss");
    for id in ["one", "three"] {
        assert!(
            log.read_session_claim(id).expect("read").is_some(),
            "{id} lost"
        );
    }
}

/// A second store of the same owner, reading a session whose last sync failed in the first
/// one, must answer only what a power loss keeps: the failed writer's bytes are written back
/// and synced before they are served, even by a read.
#[test]
fn a_new_store_of_the_same_owner_never_reads_what_a_failed_sync_left_unsynced() {
    let storage = sim_root();
    let owner = owner(&storage);
    let ev = |i: u32| text_event(i, "w");
    let first = RuntimeEventStore::open(&owner, config());
    first.append(&ev(0), Durability::Durable).expect("first");
    storage.inject(Fault {
        nth: storage.operations() + 2,
        forever: false,
        kind: FaultKind::Eio,
    });
    assert!(first.append(&ev(1), Durability::Durable).is_err());
    let _ = first.close();
    let second = RuntimeEventStore::open(&owner, config());
    let read: Vec<String> = second
        .read_session_runtime_events(S)
        .expect("read")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    drop(second);
    drop(owner);
    storage.crash(Tear::None, &mut SimRng::new(3));
    let owner = self::owner(&storage);
    let after: Vec<String> = RuntimeEventStore::open(&owner, config())
        .read_session_runtime_events(S)
        .expect("read after the power loss")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(read, after, "what was read survived the power loss");
}

/// The process whose sync failed dies while the machine stays up, its page cache with it: the
/// next owner reads the lost bytes as if durable. It must not acknowledge records on top of
/// them: its open writes back what the disk does not hold before anything builds on it.
#[test]
fn a_new_owner_after_a_process_whose_sync_failed_died_never_builds_on_the_lost_bytes() {
    let storage = sim_root();
    let first = owner(&storage);
    std::mem::forget(writer_after_a_lost_sync(&storage, &first));
    std::mem::forget(first);
    storage.restart();
    acknowledge_then_lose_power(&storage, owner(&storage), 4);
}

/// The same for the claims log: a claim the next owner acknowledges survives a power loss.
#[test]
fn a_claims_log_of_a_new_owner_after_a_process_whose_sync_failed_died_keeps_its_claims() {
    let storage = sim_root();
    let first = owner(&storage);
    let (log, _) = ClaimsLog::open(&first).expect("open");
    log.claim_session_create_at("one", 1).expect("claim");
    lose_next_sync(&storage);
    assert!(log.claim_session_create_at("two", 2).is_err());
    std::mem::forget(log);
    std::mem::forget(first);
    storage.restart();
    let (log, _) = ClaimsLog::open(&owner(&storage)).expect("the next owner");
    log.claim_session_create_at("three", 3)
        .expect("acknowledged by the next owner");
    drop(log);
    storage.crash(Tear::None, &mut SimRng::new(5));
    let (log, _) = ClaimsLog::open(&owner(&storage)).expect("open after the power loss");
    for id in ["one", "three"] {
        assert!(
            log.read_session_claim(id).expect("read").is_some(),
            "{id} lost"
        );
    }
}

/// A failed `fsync` of the root, made after creating `sessions/` in it, is never retried and
/// carried on from: the entry may or may not be durable, so every later open that needs it
/// fails too, until the root is owned again.
#[test]
fn a_failed_sync_of_the_root_directory_is_never_retried_by_the_same_owner() {
    let mut reached = false;
    for nth in 1..40 {
        let storage = sim_root();
        let owner = owner(&storage);
        storage.inject(Fault {
            nth: storage.operations() + nth,
            forever: false,
            kind: FaultKind::Eio,
        });
        let first = SegmentWriter::open(&owner, S, config());
        let root_sync_failed = matches!(
            &first,
            Err(Error::Io { file, op: "fsync directory", .. }) if file.as_os_str().is_empty()
        );
        drop(first);
        storage.clear_faults();
        if !root_sync_failed {
            continue;
        }
        reached = true;
        let again = SegmentWriter::open(&owner, S, config());
        assert!(
            matches!(again, Err(Error::Io { .. })),
            "fault at {nth}: the failed root sync was retried and carried on from: {:?}",
            again.map(|_| ())
        );
        drop(owner);
        let (w, _) = SegmentWriter::open(&self::owner(&storage), S, config())
            .expect("a new owner of the root opens it");
        drop(w);
    }
    assert!(reached, "no fault hit the root's sync");
}
