//! A session costs what it holds (DESIGN.md, "A session costs what it holds"): its bytes on
//! disk, what opening it reads, the syncs of creating and closing it. Descriptors and the
//! open-session cap: `session_descriptors.rs`; reads that write nothing: `session_reads.rs`.

mod support;

use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use support::cost::*;
use support::counting::counting;
use support::events::{opening, terminal, user};

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
