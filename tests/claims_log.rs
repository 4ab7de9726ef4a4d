//! The claims log as a log: idempotent replay of every table, duplicate records, torn tails and
//! damage, another root's log, concurrent claims sharing syncs, every truncation, the payload
//! bound, and conflicts answered only from durable claims.

mod support;

use makalog::claims::{replay_claims, AdmissionStatus, ClaimsLog, CLAIMS_FILE};
use makalog::format::{encode_frame, next_chain, ClaimKind, FrameKind, FrameLayout};
use makalog::recovery::Repair;
use makalog::storage::RealStorage;
use makalog::Error;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use support::claims::*;
use support::counting::counting;
use support::*;

fn fill(log: &ClaimsLog) {
    for n in 1..=5 {
        log.claim_agent_graph_intent_at(request(n), 100 + n as u64)
            .expect("claim");
    }
    log.set_agent_graph_intent_status(
        "graph-1",
        &request(2).intent_id,
        AdmissionStatus::Executing,
        None,
    )
    .expect("status");
    log.claim_subagent_spawn(spawn("tool-1", 'a', "child-1"))
        .expect("spawn");
    log.claim_session_create_at("session-1", 7)
        .expect("session");
}

#[test]
fn reopening_replays_every_table() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    fill(&log);
    let claims = log.list_agent_graph_intent_claims(None).expect("list");
    drop(log);
    let log = open(&storage);
    assert_eq!(
        log.list_agent_graph_intent_claims(None).expect("list"),
        claims
    );
    assert_eq!(claims.len(), 5);
    assert_eq!(claims[1].status, AdmissionStatus::Executing);
    assert_eq!(
        log.list_agent_graph_intent_claims(Some("graph-2"))
            .expect("list")
            .len(),
        0
    );
    assert!(
        !log.claim_subagent_spawn(spawn("tool-1", 'a', "x"))
            .expect("spawn")
            .created
    );
    assert!(matches!(
        log.claim_session_create_at("session-1", 1),
        Err(Error::ClaimConflict { .. })
    ));
}

/// Appends a raw frame to the claims log, as an older or buggy writer could have left it.
fn append_raw(storage: &Arc<RealStorage>, kind: ClaimKind, payload: &[u8]) {
    let bytes = claims_bytes(storage);
    let id = makalog::root::read_marker(&**storage)
        .expect("marker")
        .root_id_bytes()
        .expect("id");
    let replay = replay_claims(&bytes, &id);
    let seq = replay.head.0 + 1;
    let chain = next_chain(&replay.head.1, seq, kind.code(), payload);
    let layout = FrameLayout::for_version(replay.version).expect("a version this build reads");
    let mut frame = Vec::new();
    encode_frame(&mut frame, layout, seq, kind, payload, &chain, seq - 1);
    let mut out = bytes[..replay.data_end as usize].to_vec();
    out.extend_from_slice(&frame);
    std::fs::write(root_path(storage).join(CLAIMS_FILE), out).expect("write");
}

#[test]
fn an_identical_duplicate_record_changes_nothing_on_replay() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    fill(&log);
    let claims = log.list_agent_graph_intent_claims(None).expect("list");
    drop(log);
    let stored = claims[0].claim.clone();
    append_raw(
        &storage,
        ClaimKind::GraphIntentClaim,
        serde_json::to_value(&stored)
            .expect("json")
            .to_string()
            .as_bytes(),
    );
    let log = open(&storage);
    assert_eq!(
        log.list_agent_graph_intent_claims(None).expect("list"),
        claims
    );
    log.claim_agent_graph_intent_at(request(9), 1)
        .expect("the log goes on after the duplicate");
}

#[test]
fn a_conflicting_duplicate_record_is_corruption_at_its_offset() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    fill(&log);
    drop(log);
    let data_end = {
        let id = makalog::root::read_marker(&*storage)
            .expect("m")
            .root_id_bytes()
            .expect("id");
        replay_claims(&claims_bytes(&storage), &id).data_end
    };
    let mut other =
        serde_json::to_value(makalog::claims::AgentGraphIntentClaim::new(request(1), 1))
            .expect("json");
    other["targetOperatorId"] = "someone-else".into();
    append_raw(
        &storage,
        ClaimKind::GraphIntentClaim,
        other.to_string().as_bytes(),
    );
    let before = snapshot(&root_path(&storage));
    match ClaimsLog::open(&owner(&storage)) {
        Err(Error::Corrupt { file, offset, what }) => {
            assert_eq!(file, PathBuf::from(CLAIMS_FILE));
            assert_eq!(offset, data_end);
            assert!(what.contains("contradicts"), "{what}");
        }
        Ok(_) => panic!("a conflicting duplicate must refuse"),
        Err(e) => panic!("expected Corrupt, got {e}"),
    }
    assert_eq!(before, snapshot(&root_path(&storage)));
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.starts_with(&format!("claims.log at byte {data_end}"))),
        "{:?}",
        report.findings
    );
}

#[test]
fn a_torn_tail_is_cut_and_damage_before_the_tail_refuses() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    fill(&log);
    drop(log);
    let mut bytes = claims_bytes(&storage);
    // A clean close cuts the zeros after the data; a crash may leave them.
    bytes.resize(bytes.len() + 64, 0);
    let id = makalog::root::read_marker(&*storage)
        .expect("m")
        .root_id_bytes()
        .expect("id");
    let full = replay_claims(&bytes, &id);
    let path = root_path(&storage).join(CLAIMS_FILE);
    std::fs::write(&path, &bytes[..full.data_end as usize - 10]).expect("tear");
    let (log, report) = ClaimsLog::open(&owner(&storage)).expect("open");
    assert!(matches!(
        report.repairs.as_slice(),
        [Repair::TruncateTornTail { .. }]
    ));
    assert_eq!(
        log.list_agent_graph_intent_claims(None)
            .expect("list")
            .len(),
        5
    );
    assert!(
        log.read_session_claim("session-1").expect("read").is_none(),
        "the torn last claim is gone"
    );
    drop(log);
    let mut damaged = claims_bytes(&storage);
    damaged[200] ^= 0x40;
    std::fs::write(&path, &damaged).expect("damage");
    let before = snapshot(&root_path(&storage));
    assert!(matches!(
        ClaimsLog::open(&owner(&storage)),
        Err(Error::Corrupt { .. })
    ));
    assert_eq!(before, snapshot(&root_path(&storage)));
}

#[test]
fn a_claims_log_of_another_root_is_refused() {
    let (_t, a) = temp_root();
    let (_u, b) = temp_root();
    fill(&open(&a));
    open(&b);
    std::fs::copy(
        root_path(&a).join(CLAIMS_FILE),
        root_path(&b).join(CLAIMS_FILE),
    )
    .expect("copy");
    match ClaimsLog::open(&owner(&b)) {
        Err(Error::Corrupt { what, .. }) => assert!(what.contains("another root")),
        other => panic!("expected Corrupt, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn concurrent_claims_share_syncs_and_all_survive_reopening() {
    let (t, _) = temp_root();
    let (storage, syncs) = counting(t.path().join("root"), u64::MAX);
    let log = Arc::new(ClaimsLog::open(&owner(&storage)).expect("open").0);
    // Each sync takes a while, so the other claimers queue behind it and share the next.
    *storage.meter.slow_sync.lock().expect("meter") = Some(std::time::Duration::from_millis(2));
    let base = syncs.load(Ordering::SeqCst);
    let handles: Vec<_> = (0..16u32)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..40u32 {
                    let mut r = request(1);
                    let n = t * 1000 + i;
                    r.claim_id = format!("graph_claim_{n:032x}");
                    r.intent_id = format!("graph_intent_{n:032x}");
                    r.target_turn_id = format!("turn-{n}");
                    r.target_run_id = format!("run-{n}");
                    assert!(
                        log.claim_agent_graph_intent_at(r, n as u64)
                            .expect("claim")
                            .created
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("join");
    }
    let used = syncs.load(Ordering::SeqCst) - base;
    // Without group commit every claim syncs; with it about eight share a sync, and the bound
    // leaves a wide margin for a loaded machine's scheduling.
    assert!(
        used * 2 <= 640,
        "group commit: {used} syncs for 640 claims from 16 threads"
    );
    drop(log);
    let log = ClaimsLog::open(&owner(&storage)).expect("reopen").0;
    assert_eq!(
        log.list_agent_graph_intent_claims(None)
            .expect("list")
            .len(),
        640
    );
}

#[test]
fn every_truncation_of_a_claims_log_replays_to_a_valid_prefix() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    fill(&log);
    drop(log);
    let mut bytes = claims_bytes(&storage);
    // A clean close cuts the zeros after the data; a crash may leave them.
    bytes.resize(bytes.len() + 64, 0);
    let id = makalog::root::read_marker(&*storage)
        .expect("m")
        .root_id_bytes()
        .expect("id");
    let full = replay_claims(&bytes, &id);
    let full_claims: Vec<serde_json::Value> = full
        .tables
        .to_json_lines(None)
        .into_iter()
        .map(|l| l["claim"].clone())
        .collect();
    let end = full.data_end as usize;
    let mut counts = Vec::new();
    for len in 0..=end + 64 {
        let r = replay_claims(&bytes[..len], &id);
        assert!(
            r.problems.iter().all(|p| matches!(
                p,
                makalog::recovery::Problem::TornTail { .. }
                    | makalog::recovery::Problem::TornCreate { .. }
            )),
            "cut at {len}: {:?}",
            r.problems
        );
        let lines = r.tables.to_json_lines(None);
        assert!(
            lines.iter().all(|l| full_claims.contains(&l["claim"])),
            "cut at {len}: a claim the full log lacks"
        );
        counts.push(r.record_count);
    }
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "longer prefixes never replay fewer records"
    );
    assert_eq!(counts[end], full.record_count);
    assert_eq!(counts[end - 1], full.record_count - 1);
    // And recovery on real files, at every frame boundary and inside every frame's CRC.
    let dir = root_path(&storage);
    for len in (0..=end).step_by(7) {
        std::fs::write(dir.join(CLAIMS_FILE), &bytes[..len]).expect("cut");
        let (log, _) =
            ClaimsLog::open(&owner(&storage)).unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        let n = log
            .list_agent_graph_intent_claims(None)
            .expect("list")
            .len();
        assert!(n <= 5, "cut at {len}");
        drop(log);
        for q in std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("e").path())
        {
            if q.to_string_lossy().contains(".torn-") {
                std::fs::remove_file(q).expect("rm quarantine");
            }
        }
    }
}

#[test]
fn new_claims_obey_the_payload_bound_the_log_declares() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    log.claim_agent_graph_intent_at(request(1), 1)
        .expect("claim");
    drop(log);
    let path = root_path(&storage).join(CLAIMS_FILE);
    let mut bytes = std::fs::read(&path).expect("read");
    let (mut header, _) = makalog::format::ClaimsHeader::decode(&bytes).expect("header");
    header.max_payload = 700;
    bytes[..128].copy_from_slice(&header.encode());
    std::fs::write(&path, &bytes).expect("write");
    let log = open(&storage);
    let mut big = request(2);
    big.graph_id = "g".repeat(256);
    big.target_operator_id = "o".repeat(256);
    let before = claims_bytes(&storage);
    assert!(matches!(
        log.claim_agent_graph_intent_at(big, 2),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(before, claims_bytes(&storage));
    drop(log);
    assert_eq!(
        open(&storage)
            .list_agent_graph_intent_claims(None)
            .expect("list")
            .len(),
        1
    );
}

#[test]
fn a_conflict_is_answered_only_from_a_durable_claim_never_from_one_whose_sync_may_fail() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (t, _) = temp_root();
    let (storage, _) = counting(t.path().join("root"), u64::MAX);
    let log = Arc::new(ClaimsLog::open(&owner(&storage)).expect("open").0);
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *storage.meter.gate.lock().expect("meter") = Some(support::counting::SyncGate {
        entered: entered_tx,
        release: release_rx,
    });
    let first = {
        let log = log.clone();
        std::thread::spawn(move || log.claim_agent_graph_intent_at(request(1), 1))
    };
    entered.recv().expect("the first claim's sync started");
    // Other work for the same intent, while the first claim is not durable.
    let (answer_tx, answer) = mpsc::channel();
    {
        let log = log.clone();
        std::thread::spawn(move || {
            let mut other = request(1);
            other.target_operator_id = "another-operator".into();
            let _ = answer_tx.send(log.claim_agent_graph_intent_at(other, 2));
        });
    }
    // A generous pause, not a measurement: long enough for a wrong answer to arrive.
    if let Ok(r) = answer.recv_timeout(Duration::from_millis(500)) {
        panic!("answered before the first claim was durable: {r:?}");
    }
    release.send(false).expect("fail the first claim's sync");
    assert!(
        first.join().expect("join").is_err(),
        "the first claim was not acknowledged"
    );
    match answer
        .recv_timeout(Duration::from_secs(60))
        .expect("an answer")
    {
        Err(Error::ClaimConflict { .. }) => panic!("a conflict with a claim that failed"),
        Err(_) => {}
        Ok(c) => panic!("acknowledged on a failed log: {c:?}"),
    }
}

/// The replay's proven end: past the record its last frame's durable sequence number names
/// (each claim here is its own write and sync, so the last frame names the one before it).
#[test]
fn the_replay_proves_synced_what_the_last_frames_durable_number_names() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    for n in 0..3 {
        log.claim_session_create_at(&format!("proven-{n}"), n)
            .expect("claim");
    }
    drop(log);
    let bytes = claims_bytes(&storage);
    let id = makalog::root::read_marker(&*storage)
        .expect("marker")
        .root_id_bytes()
        .expect("id");
    let mut ends = Vec::new();
    let replay =
        makalog::claims::replay_claims_visiting(&bytes, &id, &mut |link, _| ends.push(link.end));
    assert_eq!(ends.len(), 3);
    assert_eq!(
        replay.proven_end, ends[1],
        "record 3 was written once 2 was durable"
    );
    assert_eq!(replay.data_end, ends[2]);
}
