//! Helpers shared by the integration tests: temporary roots, file snapshots, record writing.
#![allow(dead_code)]

use makalog::format::RecordKind;
use makalog::root::{create_or_open_root, Owner};
use makalog::segment::{Durability, Record, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::{RealStorage, Storage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes a frame adds to its payload in a new root.
pub const OVERHEAD: u64 = makalog::format::FrameLayout::NEW.overhead() as u64;

/// A new root on simulated storage.
pub fn sim_root() -> Arc<makalog::storage::SimStorage> {
    let storage = Arc::new(makalog::storage::SimStorage::new());
    create_or_open_root(&*storage).expect("create root");
    storage
}

/// A fresh root with its marker, and storage rooted at it.
pub fn temp_root() -> (tempfile::TempDir, Arc<RealStorage>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Arc::new(RealStorage::new(dir.path().join("root")));
    create_or_open_root(&*storage).expect("create root");
    (dir, storage)
}

/// Every file under `dir` with its bytes, keyed by path relative to `dir`.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            if entry.file_type().expect("file_type").is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("prefix").to_path_buf();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// A payload that says which record it is, `len` bytes long (at least 16).
pub fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut p = format!("{{\"record\":{i:08},\"pad\":\"").into_bytes();
    while p.len() + 2 < len {
        p.push(b'a' + (i % 26) as u8);
    }
    p.extend_from_slice(b"\"}");
    p
}

/// Takes the lease of a root; panics if it is held.
pub fn owner(storage: &Arc<impl Storage + 'static>) -> Owner {
    Owner::try_acquire(storage.clone())
        .expect("acquire")
        .expect("lease free")
}

/// Appends `n` durable records of `len` bytes, numbered from `first`, and closes the writer.
pub fn write_n(
    storage: &Arc<impl Storage + 'static>,
    session: &str,
    config: &WriterConfig,
    first: u64,
    n: u64,
    len: usize,
) {
    let (w, _) =
        SegmentWriter::open(&owner(storage), session, config.clone()).expect("open writer");
    for i in first..first + n {
        // Opaque bytes: a run seal, which no reader decodes (verify reads events, headers and
        // messages as the stores do).
        w.append(RecordKind::RunSeal, &payload(i, len), Durability::Durable)
            .expect("append");
    }
    w.close().expect("close");
}

/// Every record of a session, or the first error.
pub fn read_all(storage: &dyn Storage, session: &str) -> makalog::Result<Vec<Record>> {
    SessionReader::open(storage, session, 1)?.collect()
}

/// The segment files of a session, in order, as real paths.
pub fn segment_paths(root: &Path, session: &str) -> Vec<PathBuf> {
    let dir = root.join("sessions").join(session);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    v.sort();
    v
}

/// Config without preallocation, so files end exactly where their data ends.
pub fn exact_config() -> WriterConfig {
    WriterConfig {
        prealloc_step: 0,
        ..WriterConfig::default()
    }
}

/// Writes, by hand, a valid frame right after `last` (the last record of `session`'s last
/// segment, whose file it cuts there): the next sequence number, on the chain, recording
/// `durable_seq` as durable. Returns the frame's offset.
pub fn append_frame_after(
    storage: &RealStorage,
    session: &str,
    last: &Record,
    (kind, body): (RecordKind, &[u8]),
    durable_seq: u64,
) -> u64 {
    use makalog::format::{encode_frame, next_chain, FrameKind, SegmentHeader};
    use std::os::unix::fs::FileExt;
    let path = segment_paths(&storage.describe_root(), session)
        .pop()
        .expect("segment");
    let bytes = std::fs::read(&path).expect("segment bytes");
    let layout = SegmentHeader::decode(&bytes).expect("header").0.layout();
    let seq = last.seq + 1;
    let chain = next_chain(&last.chain, seq, kind.code(), body);
    let mut frame = Vec::new();
    encode_frame(&mut frame, layout, seq, kind, body, &chain, durable_seq);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.write_all_at(&frame, last.end).expect("write a frame");
    file.set_len(last.end + frame.len() as u64).expect("cut");
    last.end
}

pub mod child;
pub mod claims;
pub mod cost;
pub mod counting;
pub mod crash;
pub mod event_store;
pub mod events;
pub mod graph;
pub mod hooked;
pub mod messages;
pub mod permissions;
pub mod runtime_crash;
pub mod scenario;
pub mod scripted;
pub mod store_crash;
pub mod stores;
pub mod turns;
pub mod vector_files;
pub mod vectors;
