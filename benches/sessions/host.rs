//! The host touching N sessions in turn, one turn each, with the store's defaults: time,
//! resident memory and open descriptors as it goes; then reopening the root and listing every
//! session's invocations.

use super::common::{self, group, BenchResult};
use super::{session_id, turn};
use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use std::path::Path;
use std::time::{Duration, Instant};

/// Resident and peak resident memory of this process, and its open descriptors.
fn process_usage() -> BenchResult<(u64, u64, usize)> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib = |key: &str| -> BenchResult<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(key))
            .ok_or_else(|| format!("no {key}"))?;
        Ok(line.split_whitespace().nth(1).ok_or("no value")?.parse()?)
    };
    let fds = std::fs::read_dir("/proc/self/fd")?.count();
    Ok((kib("VmRSS:")?, kib("VmHWM:")?, fds))
}

/// The host: one store with the defaults, a turn to each session in turn, durable as the store
/// makes immutable events; samples memory and descriptors as it goes.
pub fn touch_sessions(root: &Path, n: usize) -> BenchResult<Duration> {
    let owner = common::owner(root)?;
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    let (rss0, _, fds0) = process_usage()?;
    let mut samples = Vec::new();
    let step = (n / 5).max(1);
    let start = Instant::now();
    for i in 0..n {
        let s = session_id(i);
        for e in turn(&s, &format!("run-{i}"), i as f64 * 10.0, 1) {
            store.append(&e, Durability::Durable)?;
        }
        if (i + 1) % step == 0 {
            let (rss, _, fds) = process_usage()?;
            samples.push((i + 1, rss, fds, store.open_sessions()));
        }
    }
    let elapsed = start.elapsed();
    store.close()?;
    let (_, peak, _) = process_usage()?;
    println!(
        "  peak RSS of the process so far: {} KiB",
        group(peak as f64)
    );
    println!(
        "  {} sessions touched in {:.1} s ({} sessions/s, {} events/s durable)",
        group(n as f64),
        elapsed.as_secs_f64(),
        group(n as f64 / elapsed.as_secs_f64()),
        group(4.0 * n as f64 / elapsed.as_secs_f64())
    );
    println!(
        "  before: RSS {} KiB, {fds0} descriptors",
        group(rss0 as f64)
    );
    for (done, rss, fds, open) in samples {
        println!(
            "  after {:>7} sessions: RSS {:>7} KiB, {fds:>4} descriptors, {open} sessions open",
            group(done as f64),
            group(rss as f64)
        );
    }
    Ok(elapsed)
}

/// Lists every session's invocations from a freshly opened store (read-only views).
pub fn list_all(root: &Path, n: usize) -> BenchResult<(Duration, usize)> {
    let owner = common::owner(root)?;
    let start = Instant::now();
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    let mut listed = 0;
    for i in 0..n {
        listed += store.list_session_invocations(&session_id(i))?.len();
    }
    let elapsed = start.elapsed();
    store.close()?;
    Ok((elapsed, listed))
}
