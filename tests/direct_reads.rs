//! Reading what the disk holds past the page cache (`StorageFile::read_persisted_at`), on
//! real files: what reads see once synced, also at offsets and lengths that are not
//! block-aligned and across the end of the file; dirty pages not yet synced are written out
//! by the direct read first, so they read the same. Where the file system refuses direct
//! I/O (or `/proc` is closed to the process), the answer is `None`, and only there.

use makalog::storage::{OpenMode, RealStorage, Storage};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

#[test]
fn direct_reads_see_what_was_written_at_any_offset_and_length() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    let path = Path::new("direct");
    let f = storage.open(path, OpenMode::CreateNew).expect("create");
    let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    f.write_all_at(&bytes, 0).expect("write");
    f.sync_data().expect("sync");
    let mut buf = vec![0u8; 5_000];
    let Some(n) = f.read_persisted_at(&mut buf, 100).expect("direct read") else {
        let refused = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(dir.path().join("direct"));
        let no_proc = std::fs::read_dir("/proc/self/fd").is_err();
        assert!(
            no_proc || refused.is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)),
            "None only where the file system refuses O_DIRECT (EINVAL) or /proc is closed"
        );
        return;
    };
    assert_eq!((n, &buf[..n]), (5_000, &bytes[100..5_100]));
    let mut tail = vec![0u8; 4_096];
    let n = f
        .read_persisted_at(&mut tail, 9_000)
        .expect("read")
        .expect("direct");
    assert_eq!(&tail[..n], &bytes[9_000..], "short at the end of the file");
    assert_eq!(
        f.read_persisted_at(&mut tail, 10_000).expect("read"),
        Some(0)
    );
    // Written, not synced: the direct read writes the dirty pages out first.
    f.write_all_at(b"fresh bytes", 4_090).expect("write");
    let mut fresh = [0u8; 11];
    let n = f
        .read_persisted_at(&mut fresh, 4_090)
        .expect("read")
        .expect("direct");
    assert_eq!(&fresh[..n], b"fresh bytes");
}
