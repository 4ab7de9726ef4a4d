//! Where the runtime takes new ids and the time from: injectable, so a test fixes both.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// New ids and the current time (ms since the epoch) for one runtime.
#[derive(Clone)]
pub struct Sources {
    new_id: Arc<dyn Fn() -> String + Send + Sync>,
    now: Arc<dyn Fn() -> f64 + Send + Sync>,
}

impl Sources {
    /// Sources from the given functions.
    pub fn new(
        new_id: impl Fn() -> String + Send + Sync + 'static,
        now: impl Fn() -> f64 + Send + Sync + 'static,
    ) -> Sources {
        Sources {
            new_id: Arc::new(new_id),
            now: Arc::new(now),
        }
    }

    /// The system clock, and ids of 32 hex digits: a counter mixed with the process, the time
    /// of the first call and the counter's address by SHA-256, so two processes never agree.
    pub fn system() -> Sources {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let seed = format!(
            "{}:{}:{:p}",
            std::process::id(),
            wall_ms(),
            &NEXT as *const AtomicU64
        );
        Sources::new(
            move || {
                use sha2::{Digest, Sha256};
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let digest = Sha256::digest(format!("{seed}:{n}").as_bytes());
                crate::format::hex(&digest[..16])
            },
            wall_ms,
        )
    }

    /// A new id.
    pub fn new_id(&self) -> String {
        (self.new_id)()
    }

    /// The time now, in ms.
    pub fn now(&self) -> f64 {
        (self.now)()
    }
}

fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}
