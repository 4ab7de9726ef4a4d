//! Store calls wait for syncs. Made from a task, such a wait must not hold a runtime worker:
//! with two workers, two sessions syncing would stop every other session's stream, its aborts
//! and its timers. On a multi-threaded runtime the worker hands its other tasks to a new
//! worker first (`block_in_place`), so as many syncs are in flight as sessions write; on a
//! current-thread runtime (tests) there is no other worker and the call runs in place.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `wait`, which may block on the disk, without holding up the runtime's other tasks.
pub(super) fn on_disk<T>(wait: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}
