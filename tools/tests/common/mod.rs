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

/// Every record of a session's valid prefix (it must have no damage before its end).
pub fn records(root: &Path, session: &str) -> Vec<makalog::segment::Record> {
    let storage = makalog::storage::RealStorage::new(root);
    makalog::segment::SessionReader::open(&storage, session, 1)
        .expect("reader")
        .map(|r| r.expect("valid"))
        .collect()
}

/// Appends one raw record to a session of `root` under the owner lease, durably: how a test
/// puts a record the stores would refuse behind a sound frame.
pub fn append_raw(
    root: &Path,
    session: &str,
    kind: makalog::format::RecordKind,
    payload: &[u8],
) -> makalog::segment::Appended {
    let owner = makalog::root::try_acquire_owner(root)
        .expect("owner")
        .expect("free");
    let config = makalog::segment::WriterConfig::default();
    let (w, _) = makalog::segment::SegmentWriter::open(&owner, session, config).expect("writer");
    let ack = w
        .append(kind, payload, makalog::segment::Durability::Durable)
        .expect("append");
    w.close().expect("close");
    ack
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

/// Copies a root (or any directory) file by file.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from)
        .expect("dir")
        .map(|e| e.expect("entry"))
    {
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// A copy of `root` at `to` in which session `session`'s record `seq` says something else
/// (one letter of its first text changed) and every later record's CRC and chain value, every
/// segment header's previous chain and every seal were recomputed: the session written again,
/// through the library, as a forger with the tool's own code would. Its old sidecar is left.
pub fn forge(root: &Path, to: &Path, session: &str, seq: u64) {
    copy_dir(root, to);
    let records = records(root, session);
    let dir = to.join("sessions").join(session);
    for e in std::fs::read_dir(&dir).expect("dir").map(|e| e.expect("e")) {
        if e.file_name() != "index" {
            std::fs::remove_file(e.path()).expect("rm");
        }
    }
    let owner = makalog::root::try_acquire_owner(to)
        .expect("owner")
        .expect("free");
    let config = makalog::segment::WriterConfig {
        segment_size: 8192,
        ..makalog::segment::WriterConfig::default()
    };
    let (writer, _) = makalog::segment::SegmentWriter::open(&owner, session, config).expect("w");
    for r in records {
        let mut payload = r.payload.clone();
        if r.seq == seq {
            let text = String::from_utf8(payload).expect("utf8");
            let at = text.find("\"text\":\"").expect("a text field") + 8;
            let mut changed = text.into_bytes();
            changed[at] = if changed[at] == b'X' { b'Y' } else { b'X' };
            payload = changed;
        }
        writer
            .append(r.kind, &payload, makalog::segment::Durability::Durable)
            .expect("append");
    }
    writer.close().expect("close");
}

/// The first member of the JSON array `list` whose `key` is `value`.
pub fn find(list: &serde_json::Value, key: &str, value: &str) -> serde_json::Value {
    list.as_array()
        .expect("an array")
        .iter()
        .find(|e| e[key] == value)
        .cloned()
        .unwrap_or_else(|| panic!("no {key} {value} in {list}"))
}

/// A path as the tool's argument.
#[cfg(feature = "sqlite")]
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// Runs `makalog import-sqlite DB ROOT --json`: its exit code, its report and its stderr.
#[cfg(feature = "sqlite")]
pub fn import(db: &Path, root: &Path) -> (i32, serde_json::Value, String) {
    let out = makalog(&["import-sqlite", s(db), s(root), "--json"]);
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), report, text(&out.stderr))
}

/// Asserts that `verify` finds the root clean and `index check` its sidecars equal to rebuilds.
pub fn assert_clean(root: &Path) {
    for args in [vec!["verify"], vec!["index", "check"]] {
        let mut argv = args.clone();
        argv.push(root.to_str().expect("utf8"));
        let out = makalog(&argv);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stdout)
        );
    }
}

/// The lines `makalog ARGS --json` prints, parsed; the command must exit 0.
pub fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    let out = makalog(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A writable copy of the fixture's runtime database.
#[cfg(feature = "sqlite")]
pub fn fixture_copy(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    std::fs::create_dir_all(&db).expect("dir");
    std::fs::copy(
        sqlite_gen::fixture_dir().join("runtime.sqlite"),
        db.join("runtime.sqlite"),
    )
    .expect("copy");
    db
}

#[cfg(feature = "sqlite")]
pub mod sqlite_gen;

/// A valid subagent session header (MAKA-MODEL §5) of session `id` spawned by session `parent`.
pub fn subagent_header(id: &str, parent: &str) -> serde_json::Value {
    serde_json::json!({
        "schemaVersion": 1, "id": id, "workspaceRoot": "/w", "cwd": "/w", "name": id,
        "llmConnectionSlug": "fake", "model": "m", "createdAt": 1, "lastUsedAt": 1,
        "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
        "connectionLocked": false, "labels": [], "status": "active", "backend": "fake",
        "permissionMode": "ask",
        "subagentParent": {"kind": "subagent", "parentSessionId": parent,
            "spawnedBy": {"parentRunId": "r", "parentTurnId": "t", "toolCallId": format!("tool-{id}")},
            "lifecycle": "foreground"},
        "subagentRuntime": {"schemaVersion": 1, "definitionVersion": 1, "agentId": "a",
            "agentName": "A", "profile": "p", "systemPrompt": "s", "toolNames": [],
            "categoryPolicy": {}},
        "subagentSpawn": {"schemaVersion": 1, "requestFingerprint": "a".repeat(64),
            "initialTurnId": "t1", "initialRunId": "r1"}
    })
}

/// The bundle's entries: name and bytes, in order.
pub fn entries(bundle: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let data = std::fs::read(bundle).expect("read");
    let mut archive = tar::Archive::new(&data[..]);
    archive
        .entries()
        .expect("entries")
        .map(|e| {
            let mut e = e.expect("entry");
            let path = e.path().expect("path").into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut bytes).expect("bytes");
            (path, bytes)
        })
        .collect()
}

/// Runs `makalog export ROOT -o OUT` with `extra` arguments.
pub fn export(root: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["export", s(root), "-o", s(out)];
    args.extend_from_slice(extra);
    makalog(&args)
}

/// Cuts `file` (a segment) to `len` bytes: at a frame boundary, what is left is a clean log.
pub fn cut_at(file: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .expect("open")
        .set_len(len)
        .expect("cut");
}

/// A tar of `entries`, in order.
pub fn write_tar(path: &Path, entries: &[(PathBuf, Vec<u8>)]) {
    let mut b = tar::Builder::new(std::fs::File::create(path).expect("create"));
    for (name, bytes) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o600);
        b.append_data(&mut h, name, &bytes[..]).expect("append");
    }
    b.finish().expect("finish");
}
