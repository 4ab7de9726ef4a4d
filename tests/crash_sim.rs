//! Crash consistency on simulated storage: every persistence point of small workloads with
//! every tear, thousands of seeded random workloads, and I/O errors at every operation.

mod support;

use makalog::storage::{FaultKind, Tear};
use support::crash::*;
use support::scenario::every_point_with_every_tear;

/// Scenarios that once failed: (seed, crash point, tear). Each stays here as a regression test.
const REGRESSIONS: &[(u64, u64, Tear)] = &[
    // A seal footer torn by the crash was refused as damage instead of cut as a torn tail.
    (91, 62, Tear::ZeroTail),
    // Zero-fill written after a seal footer, torn into garbage, was refused as damage.
    (132, 49, Tear::GarbageTail),
    // Recovery adopted frames a dead process had written but not synced, and acknowledged on
    // them, without making them durable: a power loss after recovery lost them.
    (0, 50, Tear::TornLast),
];

/// Random seeds CI runs; `cargo run --release --example crash_campaign -- --seeds N` runs more.
const CI_SEEDS: u64 = 2_000;

#[test]
fn every_persistence_point_of_small_workloads_with_every_tear() {
    let mut scenarios = 0;
    for (w, ops) in small_workloads().iter().enumerate() {
        let points = count_points(ops);
        assert!(
            points > 10,
            "workload {w} passes {points} persistence points"
        );
        scenarios += every_point_with_every_tear::<Engine>(ops, w as u64)
            .unwrap_or_else(|e| panic!("workload {w}: {e}"));
    }
    println!("exhaustive: {scenarios} crash scenarios");
}

#[test]
fn seeded_random_workloads_crash_anywhere() {
    for seed in 0..CI_SEEDS {
        let (ops, s) = random_scenario(seed);
        if let Err(e) = check_scenario(&ops, s) {
            panic!("seed {seed}: {e}\n  workload: {ops:?}");
        }
    }
}

/// Seeds of the many-small-sessions workload CI runs.
const CI_SESSION_SEEDS: u64 = 500;

#[test]
fn seeded_many_session_workloads_crash_anywhere() {
    for seed in 0..CI_SESSION_SEEDS {
        let (ops, s) = random_sessions_scenario(seed);
        if let Err(e) = check_scenario(&ops, s) {
            panic!("sessions seed {seed}: {e}\n  workload: {ops:?}");
        }
    }
}

#[test]
fn regressions_reproduce_from_seed_and_crash_point() {
    for &(seed, crash_point, tear) in REGRESSIONS {
        let (ops, _) = random_scenario(seed);
        check_scenario(
            &ops,
            Scenario {
                seed,
                crash_point,
                tear,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn io_errors_at_every_operation_once_and_forever() {
    // Short writes are in short_write.rs.
    let mut cases = 0;
    let mut calls_after_failure = 0;
    for kind in [FaultKind::Eio, FaultKind::NoSpace, FaultKind::SyncLost] {
        let (c, calls) = every_operation_failing(kind).unwrap_or_else(|e| panic!("{e}"));
        cases += c;
        calls_after_failure += calls;
    }
    assert!(cases > 300, "{cases} fault cases");
    assert!(
        calls_after_failure > 100,
        "failed writers were called {calls_after_failure} times"
    );
    println!(
        "io errors: {cases} fault cases, {calls_after_failure} calls refused by failed writers"
    );
}

/// A file synced into a directory whose own entry never was is lost with the directory: a crash
/// leaves nothing of it in the namespace, so the path can be made again.
#[test]
fn a_crash_loses_what_a_lost_directory_held() {
    use makalog::storage::{OpenMode, SimRng, SimStorage, Storage};
    use std::path::Path;
    let storage = SimStorage::new();
    storage.create_dir(Path::new("a")).expect("mkdir");
    let f = storage
        .open(Path::new("a/f"), OpenMode::CreateNew)
        .expect("create");
    f.write_all_at(b"data", 0).expect("write");
    f.sync_data().expect("sync");
    storage.sync_dir(Path::new("a")).expect("sync a");
    drop(f);
    storage.crash(Tear::None, &mut SimRng::new(1));
    assert_eq!(storage.entry_kind(Path::new("a")).expect("stat"), None);
    assert!(storage.durable_files().is_empty());
    storage.create_dir(Path::new("a")).expect("mkdir again");
    storage
        .open(Path::new("a/f"), OpenMode::CreateNew)
        .expect("the lost file's name is free");
}
