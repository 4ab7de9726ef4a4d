//! A session costs what it holds: disk, creation, opening, descriptors (DESIGN.md, "A session
//! costs what it holds").

mod support;

use makalog::root::Owner;
use makalog::segment::{Durability, WriterConfig};
use makalog::store::{RuntimeEventStore, MAX_CLOSING};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use support::counting::{counting, CountingStorage};
use support::events::{opening, terminal, text, user};

/// One turn of a session: its opening, the user's message, a text, the terminal event.
fn turn(store: &RuntimeEventStore, session: &str, run: &str, ts: f64) {
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

fn metered() -> (tempfile::TempDir, Arc<CountingStorage>) {
    metered_with_syncs().0
}

/// A new root on counting storage, with its counter of `fdatasync` calls.
#[allow(clippy::type_complexity)]
fn metered_with_syncs() -> ((tempfile::TempDir, Arc<CountingStorage>), Arc<AtomicU64>) {
    let t = tempfile::tempdir().expect("tmp");
    let (storage, syncs) = counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    ((t, storage), syncs)
}

fn owner_of(storage: &Arc<CountingStorage>) -> Owner {
    Owner::try_acquire(storage.clone())
        .expect("acquire")
        .expect("lease free")
}

fn session_dir(storage: &CountingStorage, session: &str) -> PathBuf {
    use makalog::storage::Storage;
    storage.describe_root().join("sessions").join(session)
}

fn segment(storage: &CountingStorage, session: &str) -> PathBuf {
    session_dir(storage, session).join("00000000000000000001.seg")
}

/// The data end of a session's only segment: where its last frame ends.
fn data_end(storage: &CountingStorage, session: &str) -> u64 {
    let reader = makalog::segment::SessionReader::open(storage, session, 1).expect("reader");
    let last = reader.last().expect("a record").expect("valid");
    last.end
}

/// Descriptors of this process open on files under `root` (tests run on threads of one
/// process, so only this root's count).
fn open_descriptors(root: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("fds")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(root))
        .count()
}

#[test]
fn a_cleanly_closed_small_session_holds_its_bytes_and_no_zeros() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    turn(&store, "small", "run-1", 1.0);
    let seg = segment(&storage, "small");
    let live = std::fs::metadata(&seg).expect("stat").len();
    assert_eq!(
        live, 4096,
        "an open session keeps one block of zeros ahead, no more"
    );
    store.close().expect("close");
    let end = data_end(&storage, "small");
    assert_eq!(
        std::fs::metadata(&seg).expect("stat").len(),
        end,
        "the zeros are cut"
    );
    let dir = session_dir(&storage, "small");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["00000000000000000001.seg", "index"],
        "a segment and a sidecar"
    );
    for f in [&seg, &dir.join("index")] {
        let m = std::fs::metadata(f).expect("stat");
        assert!(m.len() < 4096, "{}: {} bytes", f.display(), m.len());
        assert!(
            m.blocks() * 512 <= 4096,
            "{} takes one block at most",
            f.display()
        );
    }
}

#[test]
fn opening_reads_what_follows_the_sidecar_and_at_most_the_zeros_the_policy_left() {
    let (t, storage) = metered();
    let config = WriterConfig::default();
    {
        let owner = owner_of(&storage);
        let store = RuntimeEventStore::open(&owner, config.clone());
        for r in 0..300 {
            turn(&store, "big", &format!("run-{r}"), r as f64 * 10.0);
        }
        store.close().expect("close");
    }
    let log_len = std::fs::metadata(segment(&storage, "big"))
        .expect("stat")
        .len();
    assert!(log_len > 200_000, "a log of {log_len} bytes");

    // A clean close left a sidecar that vouches for everything: opening reads a header and
    // the last frame, not the log.
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, config.clone());
    let before = storage.meter.reads();
    store.open_session_now("big").expect("open");
    let read = storage.meter.reads() - before;
    assert!(
        read < 4096,
        "opening read {read} bytes of a {log_len}-byte log"
    );

    // Records after the sidecar, then a crash: an image of the root with the zeros the writer
    // kept ahead of its data, as a machine that lost power leaves them.
    for r in 300..310 {
        turn(&store, "big", &format!("run-{r}"), r as f64 * 10.0);
    }
    let image = t.path().join("image");
    copy_dir(&storage_root(&storage), &image);
    store.close().expect("close");
    drop(owner);

    let (copy, _) = counting(image, u64::MAX);
    let copy = Arc::new(copy);
    let seg = segment(&copy, "big");
    let file_len = std::fs::metadata(&seg).expect("stat").len();
    let end = data_end(&copy, "big");
    let zeros = file_len - end;
    assert!(zeros > 0, "the crash image keeps zeros ahead of the data");
    assert!(
        zeros <= config.max_zeros_ahead(end),
        "no more zeros than the policy puts ahead"
    );
    let new_bytes = 10 * 4 * 350;
    let owner = owner_of(&copy);
    let store = RuntimeEventStore::open(&owner, config.clone());
    let before = copy.meter.reads();
    store.open_session_now("big").expect("open the crash image");
    let read = copy.meter.reads() - before;
    // The tail after the sidecar's point is read by recovery and by the catch-up of the view.
    let bound = 2 * (new_bytes + config.max_zeros_ahead(end)) + 4096;
    assert!(
        read <= bound,
        "opening read {read} bytes; the bound is {bound}"
    );
    assert_eq!(
        store.list_session_invocations("big").expect("list").len(),
        310
    );
    store.close().expect("close");
}

fn storage_root(storage: &CountingStorage) -> PathBuf {
    use makalog::storage::Storage;
    storage.describe_root()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else if e.file_name() != "owner.lock" {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

#[test]
fn a_host_touches_many_more_sessions_than_the_cap_with_bounded_descriptors() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let cap = 4;
    let store = RuntimeEventStore::with_open_limit(&owner, WriterConfig::default(), cap);
    let root = storage_root(&storage);
    let baseline = open_descriptors(&root);
    let mut peak = 0;
    for i in 0..60 {
        turn(&store, &format!("host-{i:03}"), "run-1", i as f64);
        assert!(
            store.open_sessions() <= cap,
            "open: {}",
            store.open_sessions()
        );
        peak = peak.max(open_descriptors(&root));
    }
    // Evicted sessions still being closed hold their segments until they are.
    assert!(
        peak <= baseline + cap + MAX_CLOSING,
        "descriptors: baseline {baseline}, peak {peak}, cap {cap}"
    );
    // Reads of evicted sessions go through read-only views and open nothing for writing; a
    // read of one still being closed waits for its close.
    let before = open_descriptors(&root);
    for i in 0..60 {
        let listed = store
            .list_session_invocations(&format!("host-{i:03}"))
            .expect("list");
        assert_eq!(listed.len(), 1, "host-{i:03}");
        assert_eq!(
            listed[0]
                .terminal_event
                .as_ref()
                .and_then(|t| t["status"].as_str()),
            Some("completed")
        );
    }
    // Evicted sessions were closed cleanly: synced, sidecar written, zeros cut.
    let evicted = "host-000";
    assert_eq!(
        std::fs::metadata(segment(&storage, evicted))
            .expect("stat")
            .len(),
        data_end(&storage, evicted)
    );
    assert!(session_dir(&storage, evicted).join("index").exists());
    assert!(store.open_sessions() <= cap);
    assert!(
        open_descriptors(&root) <= before,
        "reads hold no descriptors"
    );
    store.close().expect("close");
    for i in 0..60 {
        let s = format!("host-{i:03}");
        assert_eq!(
            std::fs::metadata(segment(&storage, &s))
                .expect("stat")
                .len(),
            data_end(&storage, &s),
            "{s}: cut at close"
        );
    }
}

#[test]
fn sessions_in_use_are_never_closed_under_their_callers() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    // Eight threads on sixteen sessions with room for two: every open evicts one, while
    // other threads are appending to the sessions around it.
    let store = RuntimeEventStore::with_open_limit(&owner, WriterConfig::default(), 2);
    std::thread::scope(|scope| {
        for th in 0..8 {
            let store = &store;
            scope.spawn(move || {
                for round in 0..6 {
                    let session = format!("busy-{}", (th * 7 + round * 3) % 16);
                    let run = format!("run-{th}-{round}");
                    turn(store, &session, &run, (th * 100 + round) as f64);
                }
            });
        }
    });
    let mut total = 0;
    for s in 0..16 {
        let session = format!("busy-{s}");
        let listed = store.list_session_invocations(&session).expect("list");
        assert!(listed.iter().all(|i| i.terminal_event.is_some()));
        total += listed.len();
        let events = store.read_session_runtime_events(&session).expect("read");
        assert_eq!(events.len(), listed.len() * 4, "{session}");
    }
    assert_eq!(total, 8 * 6, "every turn of every thread is stored");
    store.close().expect("close");
}

#[test]
fn creating_a_session_costs_two_data_syncs_and_two_directory_syncs() {
    let ((_t, storage), syncs) = metered_with_syncs();
    let data_syncs = || syncs.load(Ordering::SeqCst);
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    // First session: also makes sure of `sessions/` (one sync of the root, once per lease).
    let root_before = storage.meter.dir_syncs_of("");
    store.open_session_now("first").expect("open");
    let dir_before = storage.meter.all_dir_syncs();
    let data_before = data_syncs();
    let n = 10;
    for i in 0..n {
        let session = format!("new-{i}");
        store
            .append(
                &opening(&session, "run-1", "turn-1", 1.0),
                Durability::Durable,
            )
            .expect("first durable append");
    }
    assert_eq!(
        data_syncs() - data_before,
        2 * n,
        "the new segment's header, then the first append"
    );
    assert_eq!(
        storage.meter.all_dir_syncs() - dir_before,
        2 * n,
        "sessions/ for the directory, the directory for the segment"
    );
    assert_eq!(
        storage.meter.dir_syncs_of("") - root_before,
        1,
        "the root once per lease"
    );
    store.close().expect("close");
}

#[test]
fn concurrent_creators_share_the_sync_of_the_sessions_directory() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    store.open_session_now("first").expect("open");
    let before = storage.meter.dir_syncs_of("sessions");
    *storage.meter.slow_dir.lock().expect("meter") =
        Some((PathBuf::from("sessions"), Duration::from_millis(30)));
    let creators = 16;
    let barrier = Barrier::new(creators);
    std::thread::scope(|scope| {
        for i in 0..creators {
            let (store, barrier) = (&store, &barrier);
            scope.spawn(move || {
                barrier.wait();
                let session = format!("c-{i}");
                store
                    .append(&opening(&session, "r", "t", 1.0), Durability::Durable)
                    .expect("create");
            });
        }
    });
    let shared = storage.meter.dir_syncs_of("sessions") - before;
    assert!(
        (1..creators as u64).contains(&shared),
        "{creators} creators, {shared} syncs of sessions/"
    );
    for i in 0..creators {
        assert_eq!(
            store
                .list_session_invocations(&format!("c-{i}"))
                .expect("list")
                .len(),
            1
        );
    }
    store.close().expect("close");
}

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
        listed_dirs, 0,
        "segments named from the covers, the directory not listed"
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

/// Closing a session whose appends were durable syncs nothing: its sidecar only caches the
/// log (a crash that loses it means a rebuild) and the cut of its zeros need not be durable
/// (zeros after the data read as its end). An eviction costs no more.
#[test]
fn closing_a_session_whose_records_are_durable_syncs_nothing() {
    let ((_t, storage), syncs) = metered_with_syncs();
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    for e in [
        opening("s", "r", "t", 1.0),
        user("s", "r", "t", "u", 2.0, "hi"),
        terminal("s", "r", "t", "end", 3.0, "completed"),
    ] {
        store.append(&e, Durability::Durable).expect("append");
    }
    let (data, dirs) = (syncs.load(Ordering::SeqCst), storage.meter.all_dir_syncs());
    store.close().expect("close");
    assert_eq!(syncs.load(Ordering::SeqCst) - data, 0, "no data sync");
    assert_eq!(storage.meter.all_dir_syncs() - dirs, 0, "no directory sync");
    assert!(
        session_dir(&storage, "s").join("index").exists(),
        "the sidecar is written"
    );
    let len = std::fs::metadata(segment(&storage, "s"))
        .expect("stat")
        .len();
    assert_eq!(len, data_end(&storage, "s"), "the zeros are cut");
}

/// The session store's reads of a closed session take the short way the event listing does,
/// no directory listed: the sidecar and the last segment; with no sidecar (a crash lost it),
/// a small log's one segment.
#[test]
fn reading_a_closed_sessions_header_lists_no_directory() {
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
            0,
            "{id}: no directory listed"
        );
    }
}
