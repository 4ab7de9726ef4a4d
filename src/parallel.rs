//! Work over many sessions on every core (verify, and the tool's index rebuild and report), or
//! on more threads than cores when it mostly waits (recovery at start): each item handed to the
//! next free thread, the results given back in the items' order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item, in order, computed on up to as many threads as the machine has cores
/// (at most 8).
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    map_on(cores, items, f)
}

/// `f` of every item, in order, computed on up to `threads` threads: for work that mostly
/// waits (on a sync), more threads than cores.
pub fn map_on<T: Sync, R: Send>(threads: usize, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                if let Ok(mut out) = out.lock() {
                    out[i] = Some(r);
                }
            });
        }
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
    fn no_items_no_results() {
        assert!(map_on(16, &[] as &[u8], |_| 1).is_empty());
        assert!(map(&[] as &[u8], |_| 1).is_empty());
    }
}
