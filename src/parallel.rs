//! Work over many sessions on every core (verify, and the tool's index rebuild and report), or
//! on more threads than cores when it mostly waits (recovery at start): each item handed to the
//! next free thread, the results given back in the items' order.

use crate::storage::Storage;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item, in order, computed on up to as many threads as the machine has cores
/// (at most 8).
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_on(cores(), items, f)
}

/// How many threads work over `storage` may use: `wanted`, or one on a storage that must
/// replay exactly ([`Storage::deterministic`], the simulated disk), so a seed replays one order.
pub fn threads_for(storage: &dyn Storage, wanted: usize) -> usize {
    match storage.deterministic() {
        true => 1,
        false => wanted,
    }
}

/// How many cores the machine has, at most 8. Asked of the system once a process: the answer
/// reads the cgroup's files, which costs more than a short read it would share.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
    })
}

/// `f` of consecutive ranges that cover `0..n` in order, with their results in order: as many
/// ranges as `threads`, run at once (the first on the calling thread), but none shorter than
/// `min_each`; one range, on the calling thread, when `n` is too small to share. A range whose
/// thread cannot be started (a thread limit) runs on the calling thread after the first.
pub fn map_ranges<R: Send>(
    threads: usize,
    n: usize,
    min_each: usize,
    f: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let parts = threads.min(n / min_each.max(1)).max(1);
    // Balanced: each range holds ⌊n/parts⌋ or ⌈n/parts⌉ items, so at least `min_each`.
    let range = |i: usize| i * n / parts..(i + 1) * n / parts;
    std::thread::scope(|scope| {
        let f = &f;
        let others: Vec<_> = (1..parts)
            .map(|i| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || f(range(i)))
                    .map_err(|_| i)
            })
            .collect();
        let mut out = Vec::with_capacity(parts);
        out.push(f(range(0)));
        // A range whose thread panicked panics here, as `scope` would.
        out.extend(others.into_iter().map(|started| match started {
            Ok(thread) => match thread.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(i) => f(range(i)),
        }));
        debug_assert_eq!(out.len(), parts);
        out
    })
}

/// `f` of every item, in order, computed on up to `threads` threads, the calling thread one of
/// them: for work that mostly waits (on a sync), more threads than cores.
pub fn map_on<T: Sync, R: Send>(threads: usize, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let r = f(item);
        if let Ok(mut out) = out.lock() {
            out[i] = Some(r);
        }
    };
    let work = &work;
    std::thread::scope(|scope| {
        // The calling thread works too: every item is done even when no other thread can be
        // started (a thread limit), only on fewer threads.
        for _ in 1..threads {
            let _ = std::thread::Builder::new().spawn_scoped(scope, work);
        }
        work();
    });
    // A thread that panicked made `scope` panic above, so every slot is filled.
    let out: Vec<R> = out
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect();
    debug_assert_eq!(out.len(), items.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_results_in_order_and_never_more_threads_than_asked() {
        let items: Vec<usize> = (0..200).collect();
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let calls = AtomicUsize::new(0);
        let out = map_on(5, &items, |i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_micros(200));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(calls.into_inner(), 200);
        let most = most.into_inner();
        assert!((1..=5).contains(&most), "{most} at once");
    }

    #[test]
    fn ranges_cover_every_item_once_in_order_and_small_work_stays_whole() {
        for (threads, n, min_each) in [
            (2, 10_000, 2_048),
            (3, 7, 1),
            (8, 100, 40),
            (4, 5, 10),
            (8, 65, 8),
        ] {
            let ranges = map_ranges(threads, n, min_each, |r| r);
            let flat: Vec<usize> = ranges.iter().cloned().flatten().collect();
            assert_eq!(flat, (0..n).collect::<Vec<_>>(), "{threads} {n} {min_each}");
            assert!(ranges.len() <= threads.max(1));
            assert!(ranges.len() == 1 || ranges.iter().all(|r| r.len() >= min_each.min(n)));
        }
        assert_eq!(map_ranges(4, 5, 10, |r| r), vec![0..5]);
        assert_eq!(map_ranges(2, 0, 10, |r| r), vec![0..0]);
        assert_eq!(map_ranges(2, 10_000, 2_048, |r| r).len(), 2);
    }

    #[test]
    fn no_items_no_results() {
        assert!(map_on(16, &[] as &[u8], |_| 1).is_empty());
        assert!(map(&[] as &[u8], |_| 1).is_empty());
    }
}
