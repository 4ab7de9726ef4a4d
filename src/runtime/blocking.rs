//! Store calls wait for syncs. Made from a task, such a wait must not hold every runtime
//! worker: with two workers, two sessions syncing would stop every other session's stream,
//! its aborts and its timers. Handing a worker's tasks to another thread first
//! (`block_in_place`) keeps them running, but wakes a thread each time: about 100 µs a wait
//! on this machine, where the sync took about 130. So a wait runs in place while the
//! other workers are free, and hands its worker on only when it would leave none free: at most
//! `workers - 1` workers wait in place at once, so as many syncs are still in flight as
//! sessions write. On a current-thread runtime (tests) there is no other worker and the call
//! runs in place.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Workers waiting in place now, counted across every runtime of the process: a runtime's own
/// waits are among them, so it never has more than `workers - 1` in place; other runtimes'
/// waits only make it hand on sooner.
static IN_PLACE: AtomicUsize = AtomicUsize::new(0);

/// Runs `wait`, which may block on the disk, without holding up the runtime's other tasks.
pub(super) fn on_disk<T>(wait: impl FnOnce() -> T) -> T {
    on_disk_counted(&IN_PLACE, wait)
}

/// [`on_disk`] with the count of workers waiting in place given (tests give their own).
fn on_disk_counted<T>(in_place: &AtomicUsize, wait: impl FnOnce() -> T) -> T {
    let Ok(h) = Handle::try_current() else {
        return wait();
    };
    if h.runtime_flavor() != RuntimeFlavor::MultiThread {
        return wait();
    }
    let free = h.metrics().num_workers().saturating_sub(1);
    let took = in_place.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < free).then_some(n + 1)
    });
    if took.is_err() {
        return tokio::task::block_in_place(wait);
    }
    let _slot = Slot(in_place);
    wait()
}

/// A worker's place among those waiting in place, given back however the wait ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Two tasks wait on the disk at once on a runtime of two workers: one waits in place, the
    /// other hands its worker on, so a third task still runs (here, the one that ends both
    /// waits). Were both to wait in place, nothing could run it.
    #[test]
    fn waits_leave_a_worker_free() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let waiting = Arc::new(AtomicUsize::new(0));
        static IN_PLACE: AtomicUsize = AtomicUsize::new(0);
        let (done_tx, done) = mpsc::channel();
        let mut ends = Vec::new();
        for _ in 0..2 {
            let (end, wait) = mpsc::channel::<()>();
            ends.push(end);
            let (waiting, done_tx) = (waiting.clone(), done_tx.clone());
            rt.spawn(async move {
                let ended = on_disk_counted(&IN_PLACE, || {
                    waiting.fetch_add(1, Ordering::AcqRel);
                    wait.recv()
                });
                done_tx.send(ended.is_ok()).unwrap();
            });
        }
        let releaser = ends.clone();
        rt.spawn(async move {
            while waiting.load(Ordering::Acquire) < 2 {
                tokio::task::yield_now().await;
            }
            for end in &releaser {
                end.send(()).unwrap();
            }
        });
        let ended: Vec<bool> = (0..2)
            .map(|_| done.recv_timeout(Duration::from_secs(60)))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|_| {
                // Free the stuck waits so the runtime can shut down, then fail.
                for end in &ends {
                    let _ = end.send(());
                }
                panic!("both workers waited in place and the releasing task never ran");
            });
        assert_eq!(ended, [true, true]);
    }

    /// A wait that panics gives its place back, and the panic reaches the caller.
    #[test]
    fn a_panicking_wait_gives_its_place_back() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        static IN_PLACE: AtomicUsize = AtomicUsize::new(0);
        let caught = rt.block_on(async {
            tokio::spawn(async {
                on_disk_counted(&IN_PLACE, || {
                    assert_eq!(
                        IN_PLACE.load(Ordering::Acquire),
                        1,
                        "the wait runs in place"
                    );
                    panic!("disk wait failed")
                })
            })
            .await
        });
        assert!(caught.unwrap_err().is_panic());
        assert_eq!(IN_PLACE.load(Ordering::Acquire), 0);
    }
}
