//! Crash consistency of the execution stores on simulated storage: every persistence point of
//! small store workloads with every tear (including the crash between a spawn claim and its
//! child's header), seeded random workloads, and I/O errors at every operation.

mod support;

use makalog::storage::FaultKind;
use support::scenario::{check_scenario, every_operation_failing_in, every_point_with_every_tear};
use support::store_crash::*;

#[test]
fn every_persistence_point_of_store_workloads_with_every_tear() {
    let mut scenarios = 0;
    for (w, ops) in small_store_workloads().iter().enumerate() {
        scenarios += every_point_with_every_tear::<Stores>(ops, w as u64)
            .unwrap_or_else(|e| panic!("store workload {w}: {e}"));
    }
    println!("stores exhaustive: {scenarios} crash scenarios");
}

const CI_SEEDS: u64 = 300;

#[test]
fn seeded_random_store_workloads_crash_anywhere() {
    for seed in 0..CI_SEEDS {
        let (ops, s) = random_store_scenario(seed);
        if let Err(e) = check_scenario::<Stores>(&ops, s) {
            panic!("store seed {seed}: {e}\n  workload: {ops:?}");
        }
    }
}

#[test]
fn io_errors_at_every_store_operation_once_and_forever() {
    let ops = small_store_workloads().concat();
    let mut cases = 0;
    for kind in [FaultKind::Eio, FaultKind::ShortWrite, FaultKind::SyncLost] {
        let (c, _) =
            every_operation_failing_in::<Stores>(&ops, kind).unwrap_or_else(|e| panic!("{e}"));
        cases += c;
    }
    assert!(cases > 100, "{cases} fault cases");
    println!("store io errors: {cases} fault cases");
}

/// The crash §5 names: the spawn claim durable, the child's header not. The exhaustive test
/// passes through it; this shows it does, and that opening the stores completes the child.
#[test]
fn a_crash_between_a_spawn_claim_and_its_header_is_completed_at_open() {
    use makalog::storage::{SimRng, SimStorage, Storage, Tear};
    use makalog::store::ReadOnlySessions;
    use std::sync::Arc;
    let ops = [
        StoreOp::Create(0),
        StoreOp::Spawn {
            parent: 0,
            key: 0,
            child: 1,
        },
    ];
    let points = support::scenario::count_points::<Stores>(&ops);
    let mut between = 0;
    for point in 1..=points {
        let storage = Arc::new(SimStorage::new());
        storage.crash_before_point(point);
        run(&storage, &ops);
        storage.crash(Tear::None, &mut SimRng::new(point));
        let claims = storage
            .read_file(std::path::Path::new(makalog::claims::CLAIMS_FILE))
            .unwrap_or_default();
        let Ok(id) = makalog::root::read_marker(&*storage).and_then(|m| m.root_id_bytes()) else {
            continue; // the crash came before the root's marker
        };
        let replay = makalog::claims::replay_claims(&claims, &id);
        let claimed = replay.tables.spawn_of_child("c1").is_some();
        let header = ReadOnlySessions::new(&*storage)
            .read_session("c1")
            .expect("read-only");
        if claimed && header.is_none() {
            between += 1;
            let view = recover(&storage).unwrap_or_else(|e| panic!("point {point}: {e}"));
            assert!(
                view.sessions
                    .iter()
                    .any(|(id, h)| id == "c1" && h.contains("subagentSpawn")),
                "point {point}: the child is completed from its claim"
            );
        }
    }
    assert!(
        between > 0,
        "no crash point between the claim and the header"
    );
    println!("{between} crash points between a spawn claim and its child's header");
}
