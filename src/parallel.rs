//! Work over many sessions on every core (verify, and the tool's index rebuild and report):
//! each item handed to the next free thread, the results given back in the items' order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item, in order, computed on up to as many threads as the machine has cores
/// (at most 8).
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(items.len().max(1));
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
