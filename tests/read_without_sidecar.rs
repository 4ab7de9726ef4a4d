//! Read-only views of sessions with no sidecar (one not closed yet, or whose sidecar a crash
//! lost): a small log that is its first segment alone is read from that segment, the short way;
//! any other (rolled, torn, or a first segment too large to be small) the general way. Either
//! way the answer is what a rebuild from the segments says.

mod support;

use makalog::index::{invocations_from_log, rebuild};
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::RealStorage;
use makalog::store::{ReadOnlySessions, RuntimeEventStore};
use std::path::PathBuf;
use std::sync::Arc;
use support::events::{opening, terminal, user};
use support::*;

const S: &str = "no-sidecar";

fn turns(store: &RuntimeEventStore, from: usize, n: usize) {
    for r in from..from + n {
        let (run, t) = (format!("run-{r}"), format!("turn-{r}"));
        let ts = r as f64 * 10.0;
        for e in [
            opening(S, &run, &t, ts),
            user(S, &run, &t, &format!("u-{r}"), ts + 1.0, "hello"),
            terminal(S, &run, &t, &format!("end-{r}"), ts + 2.0, "completed"),
        ] {
            store.append(&e, Durability::Durable).expect("append");
        }
    }
}

fn dir(storage: &RealStorage) -> PathBuf {
    use makalog::storage::Storage;
    storage.describe_root().join("sessions").join(S)
}

/// Closes the store and removes the sidecar its close wrote.
fn close_without_sidecar(store: RuntimeEventStore, storage: &RealStorage) {
    store.close().expect("close");
    std::fs::remove_file(dir(storage).join("index")).expect("remove the sidecar");
}

/// Twelve turns in segments of 8 KiB (so the log rolls), closed, the sidecar removed.
fn rolled_without_sidecar(storage: &Arc<RealStorage>) {
    let config = WriterConfig {
        segment_size: 8 << 10,
        ..WriterConfig::default()
    };
    let store = RuntimeEventStore::open(&owner(storage), config);
    turns(&store, 0, 12);
    close_without_sidecar(store, storage);
}

/// The read-only listing equals the invocations a rebuild from the segments finds.
fn read_equals_rebuild(storage: &Arc<RealStorage>, want: usize) {
    let store = RuntimeEventStore::open(&owner(storage), WriterConfig::default());
    let listed = store.list_session_invocations(S).expect("list");
    let view = rebuild(&**storage, S).expect("rebuild");
    assert_eq!(
        listed,
        invocations_from_log(&**storage, &view).expect("rebuilt")
    );
    assert_eq!(listed.len(), want);
    assert!(
        !dir(storage).join("index").exists(),
        "a read writes no sidecar"
    );
}

#[test]
fn a_small_log_reads_from_its_one_segment_as_a_rebuild_does() {
    let (_t, storage) = temp_root();
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    turns(&store, 0, 1);
    close_without_sidecar(store, &storage);
    read_equals_rebuild(&storage, 1);
}

#[test]
fn a_rolled_log_without_its_sidecar_reads_the_general_way() {
    let (_t, storage) = temp_root();
    rolled_without_sidecar(&storage);
    assert!(
        std::fs::read_dir(dir(&storage)).expect("dir").count() > 1,
        "the log rolled"
    );
    read_equals_rebuild(&storage, 12);
}

#[test]
fn a_small_log_with_a_torn_tail_reads_the_general_way() {
    let (_t, storage) = temp_root();
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    turns(&store, 0, 2);
    close_without_sidecar(store, &storage);
    let seg = dir(&storage).join("00000000000000000001.seg");
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes.extend_from_slice(&[0x5a; 40]);
    std::fs::write(&seg, &bytes).expect("tear");
    let before = snapshot(&dir(&storage));
    read_equals_rebuild(&storage, 2);
    assert_eq!(snapshot(&dir(&storage)), before, "a read writes nothing");
}

/// An open session (or a crash image) keeps zeros after its data: read the short way (its
/// directory listed once a read, to show no other segment), by the listing of invocations as by
/// the session store.
#[test]
fn zeros_after_a_small_logs_data_are_its_end_on_the_short_way() {
    use support::counting::counting;
    let t = tempfile::tempdir().expect("tmp");
    let (storage, _) = counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    turns(&store, 0, 1);
    store.close().expect("close");
    let session = t.path().join("root/sessions").join(S);
    std::fs::remove_file(session.join("index")).expect("remove the sidecar");
    let seg = session.join("00000000000000000001.seg");
    let len = std::fs::metadata(&seg).expect("stat").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open")
        .set_len(len + 2048)
        .expect("zeros");
    let view = rebuild(&*storage, S).expect("rebuild");
    let want = invocations_from_log(&*storage, &view).expect("rebuilt");
    let listings = storage
        .meter
        .listings
        .load(std::sync::atomic::Ordering::SeqCst);
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    assert_eq!(store.list_session_invocations(S).expect("list"), want);
    let sessions = ReadOnlySessions::new(&*storage);
    assert!(sessions.list_session_runs(S).expect("runs").is_empty());
    assert_eq!(
        storage
            .meter
            .listings
            .load(std::sync::atomic::Ordering::SeqCst)
            - listings,
        2,
        "one listing a read, no more"
    );
    assert_eq!(want.len(), 1);
}

/// A first segment past what a small log can be (here 64 MiB, sparse) goes the general way:
/// the short way reads one bounded buffer, never the file whole.
#[test]
fn a_large_first_segment_reads_the_general_way() {
    let (_t, storage) = temp_root();
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    turns(&store, 0, 1);
    close_without_sidecar(store, &storage);
    let seg = dir(&storage).join("00000000000000000001.seg");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open")
        .set_len(64 << 20)
        .expect("grow");
    let before = snapshot(&dir(&storage));
    read_equals_rebuild(&storage, 1);
    assert_eq!(snapshot(&dir(&storage)), before, "a read writes nothing");
}

/// A session directory that is a symlink (out of the root) is never followed, by the short ways
/// either: they open files by name, so they check the directory first.
#[test]
fn a_session_directory_that_is_a_symlink_is_not_followed_by_the_short_ways() {
    let (t, storage) = temp_root();
    let store = RuntimeEventStore::open(&owner(&storage), WriterConfig::default());
    turns(&store, 0, 1);
    store.close().expect("close");
    let outside = t.path().join("outside");
    std::fs::rename(dir(&storage), &outside).expect("move out");
    std::os::unix::fs::symlink(&outside, dir(&storage)).expect("symlink");
    for without_sidecar in [false, true] {
        if without_sidecar {
            std::fs::remove_file(outside.join("index")).expect("remove the sidecar");
        }
        let runs = ReadOnlySessions::new(&*storage).list_session_runs(S);
        match runs {
            Err(e) => assert!(e.to_string().contains("no-sidecar"), "{e}"),
            Ok(runs) => panic!("followed the symlink (sidecar gone: {without_sidecar}): {runs:?}"),
        }
    }
}

/// A first segment that lost its seal footer, with the log going on in the next: the general
/// way refuses it (a segment followed by another has no footer), and so does the short way.
#[test]
fn a_first_segment_that_lost_its_footer_is_refused_as_the_general_way_refuses_it() {
    let (_t, storage) = temp_root();
    rolled_without_sidecar(&storage);
    let first = dir(&storage).join("00000000000000000001.seg");
    let len = std::fs::metadata(&first).expect("stat").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .expect("open")
        .set_len(len - 68)
        .expect("cut the footer");
    assert!(rebuild(&*storage, S).is_err(), "the general way refuses");
    let runs = ReadOnlySessions::new(&*storage).list_session_runs(S);
    assert!(runs.is_err(), "the short way answered: {runs:?}");
}
