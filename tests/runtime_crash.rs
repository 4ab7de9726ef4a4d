//! Crash consistency of the runtime on simulated storage (MAKA-MODEL §12): whole turns, a
//! stopped question, claimed runs and their retries, an aborted claim, and recovery passes,
//! crashed at every persistence point with every tear; seeded random workloads; and an I/O
//! error at every operation. After each, recovery ends every run exactly once, keeps what was
//! acknowledged, runs no claim twice, and a second recovery writes nothing.

mod support;

use makalog::storage::{FaultKind, SimRng};
use support::runtime_crash::*;
use support::scenario::{
    check_scenario, every_operation_failing_in, every_point_with_every_tear, scenario_of,
};

#[test]
fn every_persistence_point_of_runtime_workloads_with_every_tear() {
    let mut scenarios = 0;
    for (w, ops) in small_runtime_workloads().iter().enumerate() {
        scenarios += every_point_with_every_tear::<Runtime>(ops, w as u64)
            .unwrap_or_else(|e| panic!("runtime workload {w}: {e}"));
    }
    println!("runtime exhaustive: {scenarios} crash scenarios");
}

#[test]
fn seeded_random_runtime_workloads_crash_anywhere() {
    use RuntimeOp::*;
    for seed in 0..40u64 {
        let mut rng = SimRng::new(seed ^ 0x7275_6e74);
        let len = 2 + rng.below(5) as usize;
        let ops: Vec<RuntimeOp> = (0..len)
            .map(|_| {
                let n = rng.below(2) as u8;
                match rng.below(6) {
                    0 | 1 => Turn(n),
                    2 => StoppedQuestion(n),
                    3 => Claimed(n),
                    4 => AbortedClaim(n),
                    _ => Recover,
                }
            })
            .collect();
        let (ops, s) = scenario_of::<Runtime>(ops, seed, rng);
        if let Err(e) = check_scenario::<Runtime>(&ops, s) {
            panic!("runtime seed {seed}: {e}\n  workload: {ops:?}");
        }
    }
}

#[test]
fn io_errors_at_every_runtime_operation_once_and_forever() {
    let ops = small_runtime_workloads().concat();
    // EIO at every operation, once and forever (the store crash model covers every fault
    // kind under the same store calls).
    let (cases, _) = every_operation_failing_in::<Runtime>(&ops, FaultKind::Eio)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(cases > 100, "{cases} fault cases");
    println!("runtime io errors: {cases} fault cases");
}

/// A crash scenario is named by its seed, so a workload must write the same bytes every time it
/// runs: recovery, which ends sessions many at once on real files, ends them one at a time, in
/// order, on the simulated disk. Eight sessions left waiting, then recovered, six times over.
#[test]
fn a_workload_recovering_many_sessions_replays_the_same_bytes() {
    use makalog::storage::{SimStorage, Storage};
    use std::sync::Arc;
    use support::scenario::Harness;
    use RuntimeOp::*;
    assert!(SimStorage::new().deterministic());
    let mut ops: Vec<RuntimeOp> = (0..8).map(StoppedQuestion).collect();
    ops.extend([Reopen, Recover]);
    // Every file but the two that hold the root's random id (its marker, and the claims log's
    // header): the sessions' segments, sidecars and the open-runs file.
    let replay = || {
        let storage = Arc::new(SimStorage::new());
        let model = Runtime::run(&storage, &ops);
        assert_eq!(model.errors, 0);
        let mut files = storage.live_files();
        files.retain(|path, _| !matches!(path.to_str(), Some(".makalog-root.json" | "claims.log")));
        assert!(files.len() > 8, "{:?}", files.keys());
        files
    };
    let first = replay();
    for _ in 0..5 {
        let again = replay();
        let differ: Vec<_> = first
            .iter()
            .filter(|(path, bytes)| again.get(*path) != Some(*bytes))
            .map(|(path, _)| path.display().to_string())
            .collect();
        assert!(
            differ.is_empty() && again.len() == first.len(),
            "a replay wrote other bytes: {differ:?}"
        );
    }
}
