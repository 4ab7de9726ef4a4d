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
