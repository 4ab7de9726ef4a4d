//! Reads cost no writes: a read-only view answers as the session open for writing does and
//! writes nothing, and reading a closed session's header lists no directory.

mod support;

use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use support::cost::*;
use support::counting::CountingStorage;
use support::events::{opening, terminal, text};

/// Every file of a root and its bytes.
fn files_of(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// A turn with ten long texts between its opening and its terminal.
fn long_turn(store: &RuntimeEventStore, session: &str, run: &str, ts: f64) {
    let t = format!("turn-{run}");
    let mut events = vec![opening(session, run, &t, ts)];
    for i in 0..10 {
        let words = "w".repeat(300);
        let id = format!("{run}-text-{i}");
        events.push(text(session, run, &t, &id, ts + 1.0 + f64::from(i), &words));
    }
    events.push(terminal(
        session,
        run,
        &t,
        &format!("{run}-end"),
        ts + 50.0,
        "completed",
    ));
    for e in events {
        store.append(&e, Durability::Durable).expect("append");
    }
}

#[test]
fn read_only_views_answer_as_the_session_open_for_writing_and_write_nothing() {
    let (_t, storage) = metered();
    let root = storage_root(&storage);
    // Small segments, so the log rolls: sidecars of many covers and segments past one read.
    let config = WriterConfig {
        segment_size: 40 << 10,
        ..WriterConfig::default()
    };
    let owner = owner_of(&storage);
    let listing = |store: &RuntimeEventStore| store.list_session_invocations("wide").expect("list");
    let store = RuntimeEventStore::open(&owner, config.clone());
    for r in 0..120 {
        long_turn(&store, "wide", &format!("run-{r:03}"), f64::from(r) * 100.0);
    }
    store.close().expect("close");
    let segments = std::fs::read_dir(session_dir(&storage, "wide"))
        .expect("dir")
        .count()
        - 1;
    assert!(segments >= 3, "{segments} segments");

    let log_bytes = |storage: &CountingStorage| -> u64 {
        std::fs::read_dir(session_dir(storage, "wide"))
            .expect("dir")
            .map(|e| e.expect("entry"))
            .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
            .map(|e| e.metadata().expect("stat").len())
            .sum()
    };
    let check = |what: &str| {
        let before = files_of(&root);
        let store = RuntimeEventStore::open(&owner, config.clone());
        let reads = storage.meter.reads();
        let listings = storage.meter.listings.load(Ordering::SeqCst);
        let maps = storage.meter.maps_of("sessions/wide/index");
        let read_only = listing(&store);
        let read = storage.meter.reads() - reads;
        let listed_dirs = storage.meter.listings.load(Ordering::SeqCst) - listings;
        assert_eq!(
            storage.meter.maps_of("sessions/wide/index"),
            maps,
            "{what}: the sidecar read once serves the whole read, never mapped again"
        );
        assert_eq!(files_of(&root), before, "{what}: a read writes nothing");
        store.open_session_now("wide").expect("open");
        assert_eq!(listing(&store), read_only, "{what}");
        let events = store.read_session_runtime_events("wide").expect("events");
        assert_eq!(
            read_only,
            makalog::index::runtime_invocations_from_session_events("wide", &events),
            "{what}: as a rebuild from the events"
        );
        store.close().expect("close");
        (read_only.len(), read, listed_dirs)
    };
    let (listed, read, listed_dirs) = check("a sidecar that vouches for the whole log");
    assert_eq!(listed, 120);
    assert_eq!(
        listed_dirs, 1,
        "segments named from the covers, the directory listed once to show no other"
    );
    // The sidecar, the last segment's tail, and the 240 listed events read back by position
    // (a kilobyte each): not the log.
    assert!(
        read < log_bytes(&storage) * 3 / 4,
        "{read} bytes read of a {}-byte log",
        log_bytes(&storage)
    );

    // Records after the sidecar: a store dropped without closing (its writer still cuts and
    // syncs, but the sidecar stays behind).
    let store = RuntimeEventStore::open(&owner, config.clone());
    for r in 120..125 {
        turn(&store, "wide", &format!("run-{r:03}"), f64::from(r) * 10.0);
    }
    drop(store);
    assert_eq!(check("a sidecar behind the log").0, 125);

    // Enough records after the sidecar to roll into a segment it does not know.
    let store = RuntimeEventStore::open(&owner, config.clone());
    let before = std::fs::read_dir(session_dir(&storage, "wide"))
        .expect("dir")
        .count();
    let mut r = 125;
    while std::fs::read_dir(session_dir(&storage, "wide"))
        .expect("dir")
        .count()
        == before
    {
        turn(&store, "wide", &format!("run-{r:03}"), f64::from(r) * 10.0);
        r += 1;
    }
    drop(store);
    assert_eq!(check("a roll after the sidecar").0, r as usize);

    // No sidecar at all.
    std::fs::remove_file(session_dir(&storage, "wide").join("index")).expect("rm");
    let store = RuntimeEventStore::open(&owner, config.clone());
    assert_eq!(listing(&store).len(), r as usize);
    assert!(
        !session_dir(&storage, "wide").join("index").exists(),
        "a read writes no sidecar"
    );
    store.close().expect("close");
}

/// The session store's reads of a closed session take the short way the event listing does:
/// the sidecar and the last segment; with no sidecar (a crash lost it), a small log's one
/// segment. The directory is listed once, to show no other segment.
#[test]
fn reading_a_closed_sessions_header_lists_its_directory_once() {
    use makalog::store::{open_execution_stores_for_write, ReadOnlySessions};
    let ((_t, storage), _) = metered_with_syncs();
    let owner = owner_of(&storage);
    let s = open_execution_stores_for_write(&owner).expect("stores");
    for id in ["s", "no-sidecar"] {
        s.sessions
            .create(support::stores::session_header(id, 1))
            .expect("session");
    }
    s.close().expect("close");
    std::fs::remove_file(session_dir(&storage, "no-sidecar").join("index")).expect("rm");
    for id in ["s", "no-sidecar"] {
        let listings = storage.meter.listings.load(Ordering::SeqCst);
        let header = ReadOnlySessions::new(&*storage)
            .read_session(id)
            .expect("read");
        assert_eq!(header.map(|h| h.id().to_owned()), Some(id.to_owned()));
        assert_eq!(
            storage.meter.listings.load(Ordering::SeqCst) - listings,
            1,
            "{id}: its directory listed once"
        );
    }
}

/// A read of a session not open here, racing its first open for writing: the read looked and
/// found no open session, then read the files while the opener's record was written and its
/// sync held. It answered that record, which a failed sync or a power loss could still take;
/// now a read that finds the session opened meanwhile answers from its view once durable.
#[test]
fn a_read_racing_a_sessions_open_never_answers_a_record_before_it_is_durable() {
    use std::sync::mpsc;
    use std::time::Duration;
    use support::counting::SyncGate;
    let t = tempfile::tempdir().expect("tmp");
    let (storage, _) = support::counting::counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let owner = support::owner(&storage);
    let stores =
        std::sync::Arc::new(makalog::store::open_execution_stores_for_write(&owner).expect("s"));
    stores
        .sessions
        .create(support::stores::session_header("x", 1))
        .expect("session");
    match std::sync::Arc::try_unwrap(stores) {
        Ok(s) => s.close().expect("close"),
        Err(_) => panic!("the stores are shared"),
    }
    let stores =
        std::sync::Arc::new(makalog::store::open_execution_stores_for_write(&owner).expect("s"));
    // The reader stops at its first look at the session's directory, past its check for an
    // open session.
    let gate = |slot: &std::sync::Mutex<Option<SyncGate>>| {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *slot.lock().expect("meter") = Some(SyncGate {
            entered: entered_tx,
            release: release_rx,
        });
        (entered, release)
    };
    let (look_entered, look_release) = {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        *storage.meter.entry_gate.lock().expect("meter") = Some((
            PathBuf::from("sessions/x"),
            SyncGate {
                entered: entered_tx,
                release: release_rx,
            },
        ));
        (entered, release)
    };
    let (answer_tx, answer) = mpsc::channel();
    let reader =
        {
            let stores = stores.clone();
            std::thread::spawn(move || {
                let _ =
                    answer_tx.send(stores.sessions.read_session("x").map(|h| {
                        h.map(|h| h.value()["name"].as_str().unwrap_or_default().to_owned())
                    }));
            })
        };
    look_entered.recv().expect("the reader looks");
    // The writer opens the session, writes its new header and holds at its sync.
    let (sync_entered, sync_release) = gate(&storage.meter.gate);
    let writer = {
        let stores = stores.clone();
        std::thread::spawn(move || {
            let mut h = support::stores::session_header("x", 1);
            h["name"] = serde_json::json!("renamed");
            stores.sessions.update_session(h).map(|_| ())
        })
    };
    sync_entered.recv().expect("the header's sync started");
    look_release.send(true).expect("the reader reads on");
    // A generous pause, not a measurement: long enough for a wrong answer to arrive. The
    // header as it was is a fair answer (the read began first); the new one is not yet.
    if let Ok(r) = answer.recv_timeout(Duration::from_millis(500)) {
        let name = r.expect("read").expect("a header");
        assert_eq!(
            name, "session x",
            "answered while the header's sync was held"
        );
        sync_release.send(true).expect("the sync goes on");
        writer.join().expect("writer").expect("the update");
        reader.join().expect("reader");
        return;
    }
    sync_release.send(true).expect("the sync goes on");
    writer.join().expect("writer").expect("the update");
    let name = answer
        .recv()
        .expect("an answer")
        .expect("read")
        .expect("a header");
    assert_eq!(name, "renamed", "answered once durable");
    reader.join().expect("reader");
}
