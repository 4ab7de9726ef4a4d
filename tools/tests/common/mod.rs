//! Helpers shared by the CLI's test binaries.
// Each test binary uses only part of them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the built `makalog` with `args`.
pub fn makalog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_makalog"))
        .args(args)
        .output()
        .expect("run makalog")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir` with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("dir")
            .map(|e| e.expect("entry"))
        {
            if e.file_type().expect("type").is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), std::fs::read(e.path()).expect("read"));
            }
        }
    }
    out
}

/// A root the demo wrote and verified.
pub fn demo_root() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let out = makalog(&["demo", root.to_str().expect("utf8")]);
    assert!(
        out.status.success(),
        "demo: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("verify: clean"));
    (t, root)
}

/// A session's last record, the segment holding it, and where its data ends.
pub fn last_record(root: &Path, session: &str) -> (makalog::segment::Record, PathBuf, u64) {
    let storage = makalog::storage::RealStorage::new(root);
    let last = makalog::segment::SessionReader::open(&storage, session, 1)
        .expect("reader")
        .last()
        .expect("a record")
        .expect("valid");
    let seg = root.join(&last.file);
    let data_end = last.end;
    (last, seg, data_end)
}
