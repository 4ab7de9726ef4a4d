//! The read-only tools on roots crafted to hang or exhaust them (DESIGN, "Untrusted roots"): a
//! FIFO, symlinks to devices and out of the root, an oversized marker. Each tool returns at
//! once with an error naming the file, and writes nothing.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the tool, killing it if it has not returned within a minute (a generous bound that
/// guards against a hang; it measures nothing). Returns its exit code and output.
fn makalog(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_makalog"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run makalog");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            return (status.code(), text);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("makalog {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn demo_root() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let (code, out) = makalog(&["demo", root.to_str().expect("utf8")]);
    assert_eq!(code, Some(0), "{out}");
    (t, root)
}

/// Every entry under `dir` (not following symlinks) with its bytes, or its link target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("dir")
            .map(|e| e.expect("entry"))
        {
            let kind = e.file_type().expect("type");
            let what = if kind.is_symlink() {
                format!(
                    "-> {}",
                    std::fs::read_link(e.path()).expect("link").display()
                )
            } else if kind.is_dir() {
                stack.push(e.path());
                "dir".to_owned()
            } else if kind.is_file() {
                format!("{:?}", std::fs::read(e.path()).expect("read"))
            } else {
                "other".to_owned()
            };
            out.insert(e.path(), what);
        }
    }
    out
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_fifo_for_the_claims_log_is_refused_by_name_and_nothing_blocks() {
    let (_t, root) = demo_root();
    let claims = root.join("claims.log");
    std::fs::remove_file(&claims).expect("rm");
    mkfifo(&claims);
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let (code, out) = makalog(&["verify", r]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("claims.log"), "{out}");
    assert!(out.contains("not a regular file"), "{out}");
    let (code, out) = makalog(&["claims", r]);
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out.contains("claims.log") && out.contains("not a regular file"),
        "{out}"
    );
    assert_eq!(snapshot(&root), before, "nothing written");
}

#[test]
fn a_marker_that_is_a_symlink_to_a_device_is_not_a_root() {
    let (_t, root) = demo_root();
    let marker = root.join(".makalog-root.json");
    std::fs::remove_file(&marker).expect("rm");
    symlink("/dev/zero", &marker).expect("symlink");
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    for args in [
        vec!["verify", r],
        vec!["invocations", r, "--session", "demo-1"],
        vec!["index", "check", r],
        vec!["dump", r],
    ] {
        let (code, out) = makalog(&args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(out.contains(".makalog-root.json"), "{args:?}: {out}");
    }
    assert_eq!(snapshot(&root), before, "nothing written");
}

#[test]
fn a_sidecar_that_is_a_symlink_to_a_device_is_no_sidecar_and_nothing_blocks() {
    let (_t, root) = demo_root();
    let index = root.join("sessions/demo-1/index");
    std::fs::remove_file(&index).expect("rm");
    symlink("/dev/urandom", &index).expect("symlink");
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let (code, out) = makalog(&["invocations", r, "--session", "demo-1"]);
    assert_eq!(code, Some(0), "listed from a rebuild: {out}");
    assert!(out.contains("completed"), "{out}");
    let (code, out) = makalog(&["index", "check", r]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("sessions/demo-1/index"), "{out}");
    let (code, out) = makalog(&["verify", r]);
    assert_eq!(code, Some(1), "a symlink in a session is a finding: {out}");
    assert!(out.contains("sessions/demo-1/index"), "{out}");
    assert_eq!(snapshot(&root), before, "nothing written");
}

#[test]
fn a_session_directory_that_is_a_symlink_out_of_the_root_is_not_followed() {
    let (t, root) = demo_root();
    let outside = t.path().join("outside");
    std::fs::rename(root.join("sessions/demo-2"), &outside).expect("move out");
    symlink(&outside, root.join("sessions/demo-2")).expect("symlink");
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    let (code, out) = makalog(&["invocations", r, "--session", "demo-2"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("sessions/demo-2"), "{out}");
    let (code, out) = makalog(&["dump", r, "--session", "demo-2"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("sessions/demo-2"), "{out}");
    // The session store's reads, with the sidecar and (a crash lost it) without: the short
    // ways open files by name, so they check the directory first.
    for without_sidecar in [false, true] {
        if without_sidecar {
            std::fs::remove_file(outside.join("index")).expect("remove the sidecar");
        }
        for cmd in ["runs", "messages"] {
            let (code, out) = makalog(&[cmd, r, "--session", "demo-2"]);
            assert_ne!(
                code,
                Some(0),
                "{cmd}, sidecar gone {without_sidecar}: {out}"
            );
            assert!(out.contains("sessions/demo-2"), "{cmd}: {out}");
        }
    }
    let (code, out) = makalog(&["verify", r]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("sessions/demo-2"), "{out}");
    assert_eq!(snapshot(&root), before, "nothing written");
}

/// `sessions` itself a symlink out of the root: the last component's checks (`O_NOFOLLOW`,
/// `lstat`) cannot see a symlink on the way, so every directory on a path is checked.
#[test]
fn a_sessions_directory_that_is_a_symlink_out_of_the_root_is_not_followed() {
    let (t, root) = demo_root();
    let outside = t.path().join("outside");
    std::fs::rename(root.join("sessions"), &outside).expect("move out");
    symlink(&outside, root.join("sessions")).expect("symlink");
    let r = root.to_str().expect("utf8");
    let before = snapshot(&root);
    for args in [
        vec!["runs", r, "--session", "demo-1"],
        vec!["messages", r, "--session", "demo-1"],
        vec!["timeline", r, "--session", "demo-1"],
        vec!["invocations", r, "--session", "demo-1"],
        vec!["dump", r, "--session", "demo-1"],
        vec!["sessions", r],
        vec!["verify", r],
    ] {
        let (code, out) = makalog(&args);
        assert_ne!(code, Some(0), "{args:?}: {out}");
        assert!(out.contains("sessions"), "{args:?}: {out}");
        assert!(
            !out.contains("run_started"),
            "nothing read out there: {out}"
        );
    }
    assert_eq!(snapshot(&root), before, "nothing written");
}

#[test]
fn an_oversized_marker_is_refused_without_reading_it_whole() {
    let (_t, root) = demo_root();
    let marker = root.join(".makalog-root.json");
    // A sparse file of 64 GiB: reading it whole would allocate 64 GiB.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&marker)
        .expect("open");
    f.set_len(64 << 30).expect("grow");
    let (code, out) = makalog(&["verify", root.to_str().expect("utf8")]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains(".makalog-root.json") && out.contains("larger"),
        "{out}"
    );
}

/// A session's last segment and the claims log each claiming 64 GiB (sparse files: zeros after
/// the last frame, which are no data): every tool answers as it did before the zeros came, exit
/// code and output alike, without reading them (they would take minutes, and as much memory).
#[test]
fn a_huge_zero_tail_changes_no_answer() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let commands: Vec<Vec<&str>> = vec![
        vec!["messages", r, "--session", "demo-1"],
        vec!["runs", r, "--session", "demo-1"],
        vec!["timeline", r, "--session", "demo-1", "--json"],
        vec!["invocations", r, "--session", "demo-1"],
        vec!["dump", r, "--session", "demo-1"],
        vec!["sessions", r],
        vec!["verify", r],
        vec!["claims", r],
    ];
    let answers: Vec<_> = commands.iter().map(|args| makalog(args)).collect();
    let before = snapshot(&root);
    let dir = root.join("sessions").join("demo-1");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segments.sort();
    let last = segments.last().expect("a segment");
    let len = std::fs::metadata(last).expect("stat").len();
    let grow = |to: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(last)
            .expect("open")
            .set_len(to)
            .expect("set_len")
    };
    grow(64 << 30);
    let claims = root.join("claims.log");
    let claims_len = std::fs::metadata(&claims).expect("stat").len();
    let grow_claims = |to: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&claims)
            .expect("open")
            .set_len(to)
            .expect("set_len")
    };
    grow_claims(64 << 30);
    for (args, want) in commands.iter().zip(&answers) {
        assert_eq!(want.0, Some(0), "{args:?}: {}", want.1);
        assert_eq!(&makalog(args), want, "{args:?}");
    }
    grow(len);
    grow_claims(claims_len);
    assert_eq!(snapshot(&root), before, "nothing written");
}

/// A sidecar claiming 64 GiB (zeros after its sections): `index check` read it whole, so such
/// a file cost as much memory, or, past what the machine could give, was reported as "no
/// sidecar". It is read as a log is read (FORMAT.md, "Index sidecar"): its bytes and at most
/// `Z` zeros, which differ from a rebuild's.
#[test]
fn a_sidecar_claiming_64_gib_is_read_as_a_log_is_read() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let sidecar = root.join("sessions").join("demo-2").join("index");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sidecar)
        .expect("open")
        .set_len(64 << 30)
        .expect("set_len");
    let (code, out) = makalog(&["index", "check", r]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("sessions/demo-2/index: differs"),
        "read, and not a rebuild's bytes: {out}"
    );
    assert!(!out.contains("no sidecar"), "{out}");
}

/// An empty claims log (a crash between its creation and its header's sync): `verify` reports
/// it and `heads` marks it damaged, but `claims` took it for no log and exited clean.
#[test]
fn an_empty_claims_log_is_a_finding_for_claims_as_for_verify() {
    let (_t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    std::fs::write(root.join("claims.log"), b"").expect("empty");
    let (code, out) = makalog(&["verify", r]);
    assert_eq!(code, Some(1), "{out}");
    let (code, out) = makalog(&["claims", r]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("claims.log"), "names the file: {out}");
}

/// Two copies damaged at the same record, each differently: their valid prefixes are equal,
/// but nothing says what follows the damage is. `diff` said "the same" and exited 0; damage in
/// either copy is a finding.
#[test]
fn copies_equal_up_to_damage_are_not_the_same() {
    let (t, root) = demo_root();
    let copy = t.path().join("copy");
    let status = Command::new("cp")
        .args([
            "-a",
            root.to_str().expect("utf8"),
            copy.to_str().expect("utf8"),
        ])
        .status()
        .expect("cp");
    assert!(status.success());
    let first = |dir: &Path| {
        let mut segs: Vec<PathBuf> = std::fs::read_dir(dir.join("sessions").join("demo-2"))
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "seg"))
            .collect();
        segs.sort();
        segs.remove(0)
    };
    use std::os::unix::fs::FileExt;
    for (dir, byte) in [(&root, 0x11u8), (&copy, 0x22u8)] {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(first(dir))
            .expect("open");
        f.write_all_at(&[byte], 200).expect("damage");
    }
    let (code, out) = makalog(&[
        "diff",
        root.to_str().expect("utf8"),
        copy.to_str().expect("utf8"),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("demo-2: the same records up to damage"),
        "{out}"
    );
    assert!(out.contains("demo-1: the same;"), "{out}");
}
