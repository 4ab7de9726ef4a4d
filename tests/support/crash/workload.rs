//! The workloads: random ones over the segments, the claims log and the stores, and small
//! hand-written ones.

use super::*;

/// A random workload of `len` operations.
pub fn random_workload(rng: &mut SimRng, len: usize) -> Vec<Op> {
    let mut claims = 0u32;
    (0..len)
        .map(|_| {
            let session = rng.below(SESSIONS.len() as u64) as usize;
            match rng.below(13) {
                0..=3 => Op::Append {
                    session,
                    len: 20 + rng.below(200) as usize,
                    durable: rng.below(3) > 0,
                },
                4 => Op::Sync { session },
                5 => {
                    claims += 1;
                    Op::Claim { n: claims }
                }
                6 => Op::RetryClaim {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                },
                7 => Op::ConflictClaim {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                },
                8 => Op::Status {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                    status: if rng.below(2) == 0 {
                        AdmissionStatus::Executing
                    } else {
                        AdmissionStatus::Cancelled
                    },
                },
                9 => {
                    if rng.below(2) == 0 {
                        Op::Spawn {
                            n: rng.below(4) as u32,
                        }
                    } else {
                        Op::SessionClaim {
                            n: rng.below(4) as u32,
                        }
                    }
                }
                _ => {
                    let run = rng.below(3) as u32;
                    let i = rng.below(100) as u32;
                    match rng.below(6) {
                        0 => Op::EventOpen { run },
                        1 | 2 => Op::EventText { run, i },
                        3 => Op::EventPartial { run, i },
                        4 => Op::EventEnd { run },
                        _ => Op::EventClose,
                    }
                }
            }
        })
        .collect()
}

/// A random workload of many small sessions: created, filled, evicted, closed and reopened.
pub fn random_sessions_workload(rng: &mut SimRng, len: usize) -> Vec<Op> {
    (0..len)
        .map(|_| match rng.below(8) {
            0 => Op::SmallClose,
            _ => Op::SmallEvent {
                session: rng.below(u64::from(SMALL_SESSIONS)) as u32,
                i: rng.below(12) as u32,
            },
        })
        .collect()
}

/// Small fixed workloads for exhaustive crash testing.
pub fn small_workloads() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        vec![
            EventOpen { run: 1 },
            EventText { run: 1, i: 1 },
            EventPartial { run: 1, i: 2 },
            EventEnd { run: 1 },
            EventText { run: 1, i: 3 },
            EventClose,
            EventOpen { run: 2 },
        ],
        vec![
            Append {
                session: 0,
                len: 100,
                durable: true,
            },
            Append {
                session: 0,
                len: 150,
                durable: false,
            },
            Append {
                session: 0,
                len: 200,
                durable: true,
            },
            Append {
                session: 0,
                len: 300,
                durable: true,
            },
            Append {
                session: 0,
                len: 250,
                durable: true,
            },
        ],
        vec![
            Claim { n: 1 },
            RetryClaim { n: 1 },
            ConflictClaim { n: 1 },
            Status {
                n: 1,
                status: AdmissionStatus::Executing,
            },
            Claim { n: 2 },
            Spawn { n: 1 },
            SessionClaim { n: 1 },
        ],
        vec![
            Append {
                session: 0,
                len: 300,
                durable: false,
            },
            Append {
                session: 1,
                len: 300,
                durable: true,
            },
            Claim { n: 1 },
            Append {
                session: 0,
                len: 300,
                durable: false,
            },
            Sync { session: 0 },
            Status {
                n: 1,
                status: AdmissionStatus::Cancelled,
            },
            Append {
                session: 1,
                len: 400,
                durable: true,
            },
        ],
        // Many small sessions: created, filled past their first block, evicted, closed.
        vec![
            SmallEvent { session: 0, i: 1 },
            SmallEvent { session: 1, i: 1 },
            SmallEvent { session: 2, i: 1 },
            SmallEvent { session: 0, i: 2 },
            SmallEvent { session: 0, i: 3 },
            SmallEvent { session: 0, i: 4 },
            SmallClose,
            SmallEvent { session: 1, i: 2 },
        ],
    ]
}
