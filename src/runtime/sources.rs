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

    /// The system clock, and ids of 32 hex digits: 16 from a digest (SHA-256) of the process,
    /// the time of the first call and a counter's address, so two processes never agree, then
    /// 16 from the process's counter through a bijective mix, so no two ids of a process agree.
    /// One digest a process, not one an id: a turn takes an id for every streamed event. The
    /// ids are unique, not secret: the mix is invertible, so one id tells the next.
    pub fn system() -> Sources {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let seed = format!(
            "{}:{}:{:p}",
            std::process::id(),
            wall_ms(),
            &NEXT as *const AtomicU64
        );
        let digest = {
            use sha2::{Digest, Sha256};
            Sha256::digest(seed.as_bytes())
        };
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&digest[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (prefix, key) = (word(0), word(8));
        let mut head = String::with_capacity(16);
        push_hex16(&mut head, prefix);
        Sources::new(
            move || {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let mut id = String::with_capacity(32);
                id.push_str(&head);
                push_hex16(&mut id, mix(n ^ key));
                id
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

/// Appends `v` as 16 lowercase hex digits (`{:016x}` without the formatting machinery: a
/// turn takes an id for every streamed event).
fn push_hex16(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..16).rev() {
        out.push(DIGITS[((v >> (shift * 4)) & 0xf) as usize] as char);
    }
}

/// SplitMix64's finalizer: a bijection of u64 (each step is invertible), so distinct counters
/// give distinct ids.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn system_ids_are_32_hex_digits_and_never_repeat() {
        let sources = Sources::system();
        let ids: Vec<String> = (0..10_000).map(|_| sources.new_id()).collect();
        assert!(ids
            .iter()
            .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())));
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
        // Another runtime of the process shares the counter, so its ids are new too.
        let other = Sources::system();
        assert!((0..1_000).all(|_| !ids.contains(&other.new_id())));
    }

    #[test]
    fn hex_digits_are_what_the_formatter_prints() {
        for v in [0, 1, 0xf, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut s = String::new();
            push_hex16(&mut s, v);
            assert_eq!(s, format!("{v:016x}"));
        }
    }

    #[test]
    fn the_mix_is_a_bijection_on_a_sample() {
        let outs: HashSet<u64> = (0..100_000u64).map(|n| mix(n ^ 0x1234_5678)).collect();
        assert_eq!(outs.len(), 100_000);
        assert_ne!(mix(1), 1);
    }
}
