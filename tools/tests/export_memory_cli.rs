//! `makalog export` holds one log's files at a time, never the whole root, and `makalog verify
//! BUNDLE` reads the bundle in place: exporting a root of 128 MiB in 16 sessions of 8 MiB and
//! verifying the bundle peak far below the root's size. Alone in its test binary, so the peak
//! its children report (getrusage of RUSAGE_CHILDREN) is theirs.

mod common;

use common::{makalog, s, text};
use makalog::format::RecordKind;
use makalog::root::{create_or_open_root, Owner};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::RealStorage;
use std::sync::Arc;

const SESSIONS: usize = 16;
const RECORDS: usize = 128;
const PAYLOAD: usize = 64 << 10;

/// The peak resident memory of the children waited for so far, in bytes. A child started by
/// a spawn that shares this process's memory until its exec takes this process's peak as its
/// own starting point, so this process's own peak (`VmHWM`: its memory's, not the figure
/// getrusage gives, which an exec carries over from the process that started this one) must
/// stay below `limit` for the figure to say anything of theirs.
fn children_peak(limit: u64) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let own = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        * 1024;
    assert!(own < limit / 2, "the test itself peaked at {own} bytes");
    // SAFETY: getrusage writes the struct it is given and reads nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    // Linux reports kilobytes.
    u64::try_from(usage.ru_maxrss).expect("non-negative") * 1024
}

/// Pins this thread, and the children it starts, to one CPU: the tool reads sessions on as
/// many threads as it has cores (up to 8), each holding a session's bytes, so the peak measured
/// is the same on any machine.
fn on_one_cpu() {
    // SAFETY: the set is a plain bit mask these calls read and write, of the size given.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0, "getaffinity");
        let first = (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .expect("a CPU");
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(first, &mut set);
        assert_eq!(libc::sched_setaffinity(0, size, &set), 0, "setaffinity");
    }
}

#[test]
fn export_peaks_at_one_logs_bytes_not_the_roots() {
    on_one_cpu();
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    {
        let storage = Arc::new(RealStorage::new(&root));
        create_or_open_root(&*storage).expect("root");
        let owner = Owner::try_acquire(storage).expect("owner").expect("free");
        let payload = vec![b'x'; PAYLOAD];
        for n in 0..SESSIONS {
            let (w, _) = SegmentWriter::open(&owner, &format!("big-{n}"), WriterConfig::default())
                .expect("writer");
            for _ in 0..RECORDS {
                w.append(RecordKind::Message, &payload, Durability::Durable)
                    .expect("append");
            }
            w.close().expect("close");
        }
    }
    let root_bytes = (SESSIONS * RECORDS * PAYLOAD) as u64;
    let bundle = t.path().join("root.tar");
    let out = makalog(&["export", s(&root), "-o", s(&bundle)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let peak = children_peak(root_bytes / 2);
    eprintln!("export of a {root_bytes}-byte root peaked at {peak} bytes resident");
    assert!(
        peak < root_bytes / 2,
        "export peaked at {peak} bytes for a root of {root_bytes}"
    );
    // `verify BUNDLE` reads the bundle in place. Its root's records are no stored messages
    // (findings of the root inside), but every file is whole and its heads are the manifest's.
    let out = makalog(&["verify", s(&bundle)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("does not decode"), "{stdout}");
    assert!(
        !stdout.contains("the manifest says") && !stdout.contains("not the one the manifest"),
        "{stdout}"
    );
    let peak = children_peak(root_bytes / 2);
    eprintln!("export and verify of its bundle peaked at {peak} bytes resident");
    assert!(
        peak < root_bytes / 2,
        "verify of the bundle peaked at {peak} bytes for a bundle of {root_bytes}"
    );
    // And its manifest holds the root's heads, as `makalog heads` computes them.
    let mut archive = tar::Archive::new(std::fs::File::open(&bundle).expect("bundle"));
    let mut manifest = None;
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        if entry.path().expect("path").as_os_str() == "makalog-manifest.json" {
            manifest = Some(serde_json::from_reader::<_, serde_json::Value>(&mut entry));
        }
    }
    let manifest = manifest.expect("a manifest").expect("json");
    let heads: serde_json::Value =
        serde_json::from_slice(&makalog(&["heads", s(&root), "--json"]).stdout).expect("heads");
    assert_eq!(manifest["heads"]["sessions"], heads["sessions"]);
    assert_eq!(
        manifest["heads"]["sessions"].as_array().map(Vec::len),
        Some(SESSIONS)
    );
}
