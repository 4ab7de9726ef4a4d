//! Crash scenarios over any harness: run a workload on simulated storage, crash it at a chosen
//! persistence point with a chosen tear (or fail one operation), recover, and check what
//! recovery keeps against what the workload submitted and had acknowledged.
//!
//! A harness says how to run its operations, how to recover and read a root back, and which
//! recovered states its model allows; the checks every harness gets are here.

use makalog::storage::{Fault, SimRng, SimStorage, Storage, Tear};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

/// A workload's operations, how they run, and what recovery must keep of them.
pub trait Harness {
    type Op: Debug;
    type Model;
    type Recovered: PartialEq + Debug;
    /// Runs `ops` on `storage` (whatever faults or crash point it was given).
    fn run(storage: &Arc<SimStorage>, ops: &[Self::Op]) -> Self::Model;
    /// Opens the root for writing (which recovers it) and reads everything back. Any error is a
    /// failed invariant: crashes never leave damage that recovery may refuse.
    fn recover(storage: &Arc<SimStorage>) -> Result<Self::Recovered, String>;
    /// Whether `got` is a state the model allows: everything acknowledged, nothing invented.
    fn check(model: &Self::Model, got: &Self::Recovered) -> Result<(), String>;
    /// Calls made to a writer after it had failed (each refused).
    fn calls_after_failure(_model: &Self::Model) -> usize {
        0
    }
}

/// One crash scenario: the workload, where it crashes, how the crash tears, and the seed of
/// every random choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub seed: u64,
    pub crash_point: u64,
    pub tear: Tear,
}

/// A crash point among the workload's persistence points and a tear, drawn from `rng`.
pub fn scenario_of<H: Harness>(
    ops: Vec<H::Op>,
    seed: u64,
    mut rng: SimRng,
) -> (Vec<H::Op>, Scenario) {
    let points = count_points::<H>(&ops);
    let crash_point = 1 + rng.below(points + 1);
    let tear = Tear::ALL[rng.below(Tear::ALL.len() as u64) as usize];
    (
        ops,
        Scenario {
            seed,
            crash_point,
            tear,
        },
    )
}

/// Persistence points a workload passes when nothing fails.
pub fn count_points<H: Harness>(ops: &[H::Op]) -> u64 {
    let storage = Arc::new(SimStorage::new());
    H::run(&storage, ops);
    storage.persistence_points()
}

/// Every persistence point of `ops` (and one past the last) with every tear; returns the
/// scenarios checked.
pub fn every_point_with_every_tear<H: Harness>(ops: &[H::Op], salt: u64) -> Result<u64, String> {
    let mut scenarios = 0;
    for crash_point in 1..=count_points::<H>(ops) + 1 {
        for tear in Tear::ALL {
            let s = Scenario {
                seed: crash_point * 31 + salt,
                crash_point,
                tear,
            };
            check_scenario::<H>(ops, s)?;
            scenarios += 1;
        }
    }
    Ok(scenarios)
}

/// Runs a scenario and checks every invariant: acknowledged writes survive, the recovered state
/// is one the model allows, recovering twice equals recovering once and writes nothing more, a
/// process crash (the machine stays up) is recovered durably, and a crash during recovery is
/// itself survivable.
pub fn check_scenario<H: Harness>(ops: &[H::Op], s: Scenario) -> Result<(), String> {
    let fail = |what: String| {
        Err(format!(
            "{what}\n  reproduce with seed {} crash point {} tear {:?}",
            s.seed, s.crash_point, s.tear
        ))
    };
    let storage = Arc::new(SimStorage::new());
    storage.crash_before_point(s.crash_point);
    let model = H::run(&storage, ops);
    let mut rng = SimRng::new(s.seed);
    storage.crash(s.tear, &mut rng);
    let crashed = storage.durable_files();

    let first = match H::recover(&storage) {
        Ok(r) => r,
        Err(e) => return fail(format!("recovery failed: {e}")),
    };
    if let Err(e) = H::check(&model, &first) {
        return fail(e);
    }
    let after_first = storage.live_files();
    match H::recover(&storage) {
        Ok(again) if again == first => {}
        Ok(_) => return fail("a second recovery read something else".into()),
        Err(e) => return fail(format!("second recovery failed: {e}")),
    }
    if storage.live_files() != after_first {
        return fail("a second recovery wrote again".into());
    }

    // The process dies at the same point but the machine stays up: recovery adopts what is in
    // the page cache, and must make it durable before going on, so a power loss right after
    // recovery changes nothing.
    let restarted = Arc::new(SimStorage::new());
    restarted.crash_before_point(s.crash_point);
    H::run(&restarted, ops);
    restarted.restart();
    let adopted = match H::recover(&restarted) {
        Ok(r) => r,
        Err(e) => return fail(format!("recovery after a process crash failed: {e}")),
    };
    if let Err(e) = H::check(&model, &adopted) {
        return fail(format!("after a process crash: {e}"));
    }
    restarted.crash(Tear::None, &mut rng);
    match H::recover(&restarted) {
        Ok(r) if r == adopted => {}
        Ok(_) => {
            return fail(
                "recovery adopted bytes it did not make durable: a power loss after it lost them"
                    .into(),
            )
        }
        Err(e) => {
            return fail(format!(
                "a power loss after recovery left a state that does not recover: {e}"
            ))
        }
    }

    // From the same crashed state, crash again somewhere inside recovery, then recover.
    let replay = Arc::new(SimStorage::new());
    restore(&replay, &crashed);
    let before = replay.persistence_points();
    replay.crash_before_point(before + 1 + rng.below(8));
    let _ = H::recover(&replay);
    replay.crash(
        Tear::ALL[rng.below(Tear::ALL.len() as u64) as usize],
        &mut rng,
    );
    match H::recover(&replay) {
        Ok(r) if r == first => Ok(()),
        Ok(r) => match H::check(&model, &r) {
            Ok(()) => fail(format!(
                "a crash during recovery changed what recovery keeps: {first:?} then {r:?}"
            )),
            Err(e) => fail(format!("after a crash during recovery: {e}")),
        },
        Err(e) => fail(format!(
            "recovery after a crash during recovery failed: {e}"
        )),
    }
}

/// Lays `files` into an empty simulated storage, durably.
pub fn restore(storage: &Arc<SimStorage>, files: &BTreeMap<PathBuf, Vec<u8>>) {
    use makalog::storage::OpenMode;
    let mut dirs: Vec<PathBuf> = files
        .keys()
        .flat_map(|p| {
            p.ancestors()
                .skip(1)
                .map(|a| a.to_path_buf())
                .collect::<Vec<_>>()
        })
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    dirs.sort();
    dirs.dedup();
    for d in &dirs {
        storage.create_dir(d).expect("mkdir");
    }
    for (p, bytes) in files {
        let f = storage.open(p, OpenMode::CreateNew).expect("create");
        f.write_all_at(bytes, 0).expect("write");
        f.sync_data().expect("sync");
    }
    for d in dirs.iter().chain(std::iter::once(&PathBuf::new())) {
        storage.sync_dir(d).expect("sync dir");
    }
}

/// Fails the `nth` operation (once or from then on) while running `ops`, then crashes with a
/// random tear and checks that recovery is correct; and again with the process dying instead,
/// checking that recovery makes what it adopts durable. Returns whether the fault was reached and
/// how many calls went to writers that had failed.
pub fn check_fault<H: Harness>(
    ops: &[H::Op],
    fault: Fault,
    seed: u64,
) -> Result<(bool, usize), String> {
    let storage = Arc::new(SimStorage::new());
    storage.inject(fault);
    let model = H::run(&storage, ops);
    let hit = storage.operations() >= fault.nth;
    storage.clear_faults();
    let mut rng = SimRng::new(seed);
    let tear = Tear::ALL[rng.below(Tear::ALL.len() as u64) as usize];
    storage.crash(tear, &mut rng);
    let got = H::recover(&storage).map_err(|e| format!("{fault:?}: recovery failed: {e}"))?;
    H::check(&model, &got).map_err(|e| format!("{fault:?} then {tear:?} (seed {seed}): {e}"))?;
    // The process dies after the fault instead, the machine up: what a failed sync left stays
    // readable and is never persisted by itself. The next owner's recovery must make what it
    // adopts durable, so a power loss right after it changes nothing.
    let restarted = Arc::new(SimStorage::new());
    restarted.inject(fault);
    let model = H::run(&restarted, ops);
    restarted.clear_faults();
    restarted.restart();
    let adopted = H::recover(&restarted)
        .map_err(|e| format!("{fault:?}, the process died: recovery failed: {e}"))?;
    H::check(&model, &adopted).map_err(|e| format!("{fault:?}, the process died: {e}"))?;
    restarted.crash(Tear::None, &mut rng);
    match H::recover(&restarted) {
        Ok(r) if r == adopted => {}
        Ok(_) => {
            return Err(format!(
                "{fault:?}, the process died: recovery adopted bytes it did not make durable"
            ))
        }
        Err(e) => {
            return Err(format!(
                "{fault:?}, the process died, then the power: recovery failed: {e}"
            ))
        }
    }
    Ok((hit, H::calls_after_failure(&model)))
}

/// Runs `ops` with a fault of `kind` injected at every operation in turn, once and for ever,
/// checking each; returns the cases run and the calls failed writers refused.
pub fn every_operation_failing_in<H: Harness>(
    ops: &[H::Op],
    kind: makalog::storage::FaultKind,
) -> Result<(u64, usize), String> {
    let (mut cases, mut calls_after_failure) = (0, 0);
    for forever in [false, true] {
        for nth in 1.. {
            let fault = Fault { nth, forever, kind };
            match check_fault::<H>(ops, fault, nth)? {
                (true, calls) => calls_after_failure += calls,
                (false, _) => break,
            }
            cases += 1;
        }
    }
    Ok((cases, calls_after_failure))
}
