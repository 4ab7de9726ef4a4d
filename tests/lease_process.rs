//! The single-owner lease against a second real process. Its own test binary: a child forked
//! while another test holds a lock would inherit that lock's descriptor until it execs, and
//! hold the lock that long.

use makalog::root::{create_or_open_root, try_acquire_owner, Owner};
use makalog::storage::RealStorage;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

const CHILD_ENV: &str = "MAKALOG_LEASE_CHILD_ROOT";

fn child(root: &Path) -> String {
    let out = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "lease_child_process", "--ignored", "--nocapture"])
        .env(CHILD_ENV, root)
        .output()
        .expect("spawn child");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn another_process_is_refused_while_the_lease_is_held() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let storage = Arc::new(RealStorage::new(&root));
    create_or_open_root(&*storage).expect("create");
    let owner = Owner::try_acquire(storage).expect("acquire").expect("free");
    assert!(child(&root).contains("lease: busy"));
    drop(owner);
    assert!(child(&root).contains("lease: acquired"));
}

/// Run by `another_process_is_refused_while_the_lease_is_held` in a child process.
#[test]
#[ignore = "the child half of a two-process test; its parent runs it"]
fn lease_child_process() {
    let root = std::env::var_os(CHILD_ENV).expect("run by its parent test with the root set");
    match try_acquire_owner(Path::new(&root)).expect("try") {
        Some(_) => println!("lease: acquired"),
        None => println!("lease: busy"),
    }
}
