//! How much of a bundle `verify BUNDLE.tar` reads.

use super::check;
use makalog::root::try_acquire_owner;
use makalog::storage::{OpenMode, RealStorage, Storage, StorageFile};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A file whose reads are counted.
struct Counted {
    file: Box<dyn StorageFile>,
    read: AtomicU64,
}

impl StorageFile for Counted {
    fn size(&self) -> std::io::Result<u64> {
        self.file.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, offset)?;
        self.read.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
    fn write_all_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("a bundle is never written"))
    }
    fn sync_data(&self) -> std::io::Result<()> {
        Err(std::io::Error::other("a bundle is never written"))
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("a bundle is never written"))
    }
}

/// Checking a bundle reads its files' bytes to hash them, and its logs to verify them (their
/// frames, then their payloads); the heads compared with the manifest's are the ones the
/// verification found, not read again. This bundle (one log and its sidecar) is read 2.4
/// times over; reading the logs again for their heads made it 3.1.
#[test]
fn a_bundles_logs_are_not_read_again_for_their_heads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    {
        let owner = try_acquire_owner(&root).expect("root").expect("free");
        let stores = open_execution_stores_for_write(&owner).expect("stores");
        stores
            .sessions
            .create(json!({
                "schemaVersion": 1, "id": "s", "workspaceRoot": "/work", "cwd": "/work",
                "name": "s", "llmConnectionSlug": "fake", "model": "fake-model",
                "createdAt": 1, "lastUsedAt": 1, "titleIsManual": false, "isFlagged": false,
                "isArchived": false, "hasUnread": false, "connectionLocked": false,
                "labels": [], "status": "active", "backend": "fake", "permissionMode": "ask"
            }))
            .expect("session");
        for i in 0..400 {
            let m = json!({"type": "user", "id": format!("m{i}"), "turnId": format!("t{}", i / 4),
                           "ts": i, "text": "Please look at the failing test in src/lib.rs."});
            stores.sessions.append_message("s", m).expect("message");
        }
        stores.close().expect("close");
    }
    let bundle = dir.path().join("b.tar");
    assert_eq!(
        crate::export::run(&root, &[], &bundle, true),
        std::process::ExitCode::SUCCESS
    );
    let opened = RealStorage::unmapped(dir.path())
        .open(std::path::Path::new("b.tar"), OpenMode::Read)
        .expect("open");
    let counted = Arc::new(Counted {
        file: opened,
        read: AtomicU64::new(0),
    });
    let len = counted.size().expect("size");
    let file: Arc<dyn StorageFile> = counted.clone();
    let checked = check(&file, len).expect("a bundle");
    assert!(checked.findings.is_empty(), "{:?}", checked.findings);
    let read = counted.read.load(Ordering::SeqCst);
    assert!(
        read as f64 <= 2.7 * len as f64,
        "{read} bytes read of a bundle of {len}"
    );
}

/// The tar reader reads the bundle no further than the length it had when opened, the length
/// its headers were walked to: bytes a growing file gains meanwhile are not read.
#[test]
fn the_reader_stops_at_the_length_the_headers_were_walked_to() {
    let t = tempfile::tempdir().expect("tmp");
    std::fs::write(t.path().join("b.tar"), [7u8; 1024]).expect("write");
    let file = RealStorage::new(t.path())
        .open(std::path::Path::new("b.tar"), OpenMode::Read)
        .expect("open");
    let mut reader = super::SeamReader {
        file: Arc::from(file),
        at: 100,
        len: 512,
    };
    let mut read = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut read).expect("read");
    assert_eq!(read, [7u8; 412]);
}
