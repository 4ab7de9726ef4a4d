//! What the simulated storage decides at random or by fault: a seeded generator, the faults a
//! test injects, and the count of operations and persistence points every call passes through.

use super::{err, State};
use std::io;

/// A small deterministic generator (splitmix64): the same seed gives the same choices.
#[derive(Debug, Clone)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// An injected I/O failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The operation fails with EIO and does nothing.
    Eio,
    /// A write stores a prefix of its bytes and then fails with EIO.
    ShortWrite,
    /// A write fails with ENOSPC and does nothing.
    NoSpace,
    /// A sync fails with EIO and the kernel forgets the writes it was to make durable
    /// (fsyncgate): they stay readable, but no later sync makes them durable and a crash loses
    /// them. On any other operation, as `Eio`.
    SyncLost,
}

/// Which operations fail: the `nth` operation (counting from 1, every call on the storage or a
/// file counts), once or it and every one after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub nth: u64,
    pub forever: bool,
    pub kind: FaultKind,
}

/// Counts an operation and decides whether it may go on: `Ok(None)` to proceed, `Ok(Some(kind))`
/// for a fault the caller applies (short write), `Err` to fail outright.
pub(super) fn begin(
    st: &mut State,
    generation: Option<u64>,
    persistence: bool,
) -> io::Result<Option<FaultKind>> {
    begin_op(st, generation, persistence, false)
}

/// [`begin`] for an operation that is a file sync (`sync`), which a `SyncLost` fault hits.
pub(super) fn begin_op(
    st: &mut State,
    generation: Option<u64>,
    persistence: bool,
    sync: bool,
) -> io::Result<Option<FaultKind>> {
    if st.dead {
        return Err(err(io::ErrorKind::Other, "simulated process is dead"));
    }
    if generation.is_some_and(|g| g != st.generation) {
        return Err(err(
            io::ErrorKind::Other,
            "handle from before a simulated crash",
        ));
    }
    if persistence {
        st.persistence_points += 1;
        if st.crash_before_point == Some(st.persistence_points) {
            st.dead = true;
            return Err(err(io::ErrorKind::Other, "simulated crash"));
        }
    }
    st.ops += 1;
    let n = st.ops;
    let hit = st
        .faults
        .iter()
        .find(|f| f.nth == n || (f.forever && n >= f.nth))
        .copied();
    match hit {
        None => Ok(None),
        Some(f) if f.kind == FaultKind::ShortWrite => Ok(Some(FaultKind::ShortWrite)),
        Some(f) if f.kind == FaultKind::SyncLost && sync => Ok(Some(FaultKind::SyncLost)),
        Some(f) if f.kind == FaultKind::NoSpace => Err(io::Error::from_raw_os_error(28)),
        Some(_) => Err(io::Error::from_raw_os_error(5)),
    }
}
