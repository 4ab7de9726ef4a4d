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
    let config = WriterConfig {
        segment_size: 8 << 10,
        ..WriterConfig::default()
    };
    let store = RuntimeEventStore::open(&owner(&storage), config);
    turns(&store, 0, 12);
    close_without_sidecar(store, &storage);
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
    turns(&store, 0, 1);
    close_without_sidecar(store, &storage);
    let seg = dir(&storage).join("00000000000000000001.seg");
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes.extend_from_slice(&[0x5a; 40]);
    std::fs::write(&seg, &bytes).expect("tear");
    let before = snapshot(&dir(&storage));
    let read = ReadOnlySessions::new(&*storage).list_session_runs(S);
    assert!(read.is_ok(), "the valid prefix reads: {read:?}");
    assert_eq!(snapshot(&dir(&storage)), before, "a read writes nothing");
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
    let sessions = ReadOnlySessions::new(&*storage);
    let header = sessions.read_session(S);
    assert!(
        header.is_ok(),
        "zeros after the data are its end: {header:?}"
    );
}
