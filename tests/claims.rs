//! The claims log's rules of MAKA-MODEL §5 and §9, one by one: graph-intent claims and their
//! retries and conflicts, the id rules, admission status, spawn keys and session ids. The log
//! itself (replay, duplicates, tears, concurrency, bounds): `claims_log.rs`.

mod support;

use makalog::claims::{AdmissionStatus, AgentGraphIntentClaimRequest};
use makalog::Error;
use support::claims::*;
use support::*;

/// A named change to a request.
type Change = Box<dyn Fn(&mut AgentGraphIntentClaimRequest)>;

#[test]
fn a_new_claim_is_created_and_the_same_request_returns_the_stored_claim() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    let first = log
        .claim_agent_graph_intent_at(request(1), 1000)
        .expect("claim");
    assert!(first.created);
    assert_eq!(first.claim.claimed_at, 1000);
    let before = claims_bytes(&storage);
    let again = log
        .claim_agent_graph_intent_at(request(1), 2000)
        .expect("claim again");
    assert!(!again.created);
    assert_eq!(
        again.claim, first.claim,
        "the stored claim wins, claimedAt included"
    );
    assert_eq!(before, claims_bytes(&storage), "a repeat writes nothing");
}

#[test]
fn a_retry_with_new_turn_and_run_ids_gets_the_stored_claim_back() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    let first = log
        .claim_agent_graph_intent_at(request(1), 1)
        .expect("claim")
        .claim;
    let mut retry = request(1);
    retry.target_turn_id = "turn-other".into();
    retry.target_run_id = "run-other".into();
    let out = log.claim_agent_graph_intent_at(retry, 2).expect("retry");
    assert!(!out.created);
    assert_eq!(out.claim.target_turn_id, "turn-1");
    assert_eq!(out.claim, first);
}

#[test]
fn the_same_intent_for_different_work_is_a_conflict_and_writes_nothing() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    log.claim_agent_graph_intent_at(request(1), 1)
        .expect("claim");
    let before = claims_bytes(&storage);
    let variants: Vec<(&str, Change)> = vec![
        (
            "claimId",
            Box::new(|r| r.claim_id = format!("graph_claim_{}", hex32('9'))),
        ),
        (
            "intentFingerprint",
            Box::new(|r| r.intent_fingerprint = format!("sha256:{}", "9".repeat(64))),
        ),
        (
            "readinessContextFingerprint",
            Box::new(|r| r.readiness_context_fingerprint = format!("sha256:{}", "9".repeat(64))),
        ),
        (
            "targetOperatorId",
            Box::new(|r| r.target_operator_id = "other-operator".into()),
        ),
        (
            "targetSessionId",
            Box::new(|r| r.target_session_id = "other-session".into()),
        ),
    ];
    for (field, change) in variants {
        let mut r = request(1);
        change(&mut r);
        match log.claim_agent_graph_intent_at(r, 5) {
            Err(Error::ClaimConflict { what }) => assert!(
                what.contains("reused for different work"),
                "{field}: {what}"
            ),
            other => panic!("{field}: expected a conflict, got {other:?}"),
        }
    }
    assert_eq!(before, claims_bytes(&storage));
}

#[test]
fn another_intent_may_not_take_a_claimed_turn_run_or_claim_id() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    log.claim_agent_graph_intent_at(request(1), 1)
        .expect("claim");
    let before = claims_bytes(&storage);
    let mut same_turn = request(2);
    same_turn.target_turn_id = "turn-1".into();
    let mut same_run = request(3);
    same_run.target_run_id = "run-1".into();
    let mut same_claim_id = request(4);
    same_claim_id.claim_id = request(1).claim_id;
    for (what, r) in [
        ("turn", same_turn),
        ("run", same_run),
        ("claim id", same_claim_id),
    ] {
        assert!(
            matches!(
                log.claim_agent_graph_intent_at(r, 2),
                Err(Error::ClaimConflict { .. })
            ),
            "{what}"
        );
    }
    assert_eq!(before, claims_bytes(&storage));
    let mut other_session = request(5);
    other_session.target_session_id = "another-child".into();
    other_session.target_turn_id = "turn-1".into();
    other_session.target_run_id = "run-1".into();
    assert!(
        log.claim_agent_graph_intent_at(other_session, 3)
            .expect("other session")
            .created
    );
}

#[test]
fn requests_that_break_the_id_rules_are_refused_naming_the_field() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    let before = claims_bytes(&storage);
    let cases: Vec<(&str, Change)> = vec![
        ("schemaVersion", Box::new(|r| r.schema_version = 2)),
        (
            "claimId",
            Box::new(|r| r.claim_id = "graph_claim_ABC".into()),
        ),
        (
            "claimId",
            Box::new(|r| r.claim_id = format!("graph_claim_{}", "A".repeat(32))),
        ),
        (
            "intentId",
            Box::new(|r| r.intent_id = format!("graph_intent_{}", "a".repeat(31))),
        ),
        (
            "intentFingerprint",
            Box::new(|r| r.intent_fingerprint = "a".repeat(64)),
        ),
        (
            "readinessContextFingerprint",
            Box::new(|r| r.readiness_context_fingerprint = format!("sha256:{}", "g".repeat(64))),
        ),
        ("graphId", Box::new(|r| r.graph_id = String::new())),
        ("graphId", Box::new(|r| r.graph_id = "x".repeat(257))),
        (
            "targetOperatorId",
            Box::new(|r| r.target_operator_id = " padded".into()),
        ),
        (
            "targetSessionId",
            Box::new(|r| r.target_session_id = "tab\there".into()),
        ),
        (
            "targetTurnId",
            Box::new(|r| r.target_turn_id = "nul\u{0}".into()),
        ),
        (
            "targetRunId",
            Box::new(|r| r.target_run_id = "trailing ".into()),
        ),
    ];
    for (field, change) in cases {
        let mut r = request(1);
        change(&mut r);
        match log.claim_agent_graph_intent_at(r, 1) {
            Err(Error::InvalidInput(why)) => assert!(why.starts_with(field), "{field}: {why}"),
            other => panic!("{field}: expected InvalidInput, got {other:?}"),
        }
    }
    // 256 UTF-16 units is the limit, counted as the original counts them.
    let mut r = request(2);
    r.graph_id = "😀".repeat(129);
    assert!(matches!(
        log.claim_agent_graph_intent_at(r, 1),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(
        before,
        claims_bytes(&storage),
        "nothing refused was written"
    );
    let mut r = request(1);
    r.graph_id = "é".repeat(256);
    assert!(
        log.claim_agent_graph_intent_at(r, 1)
            .expect("at the limit")
            .created
    );
    assert_ne!(before, claims_bytes(&storage));
    // Unknown keys are refused when a request is decoded.
    let json = r#"{"schemaVersion":1,"claimId":"x","graphId":"g","intentId":"i","intentFingerprint":"f","readinessContextFingerprint":"r","targetOperatorId":"o","targetSessionId":"s","targetTurnId":"t","targetRunId":"u","extra":1}"#;
    assert!(serde_json::from_str::<AgentGraphIntentClaimRequest>(json).is_err());
}

#[test]
fn admission_status_moves_forward_only_and_a_repeat_writes_nothing() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    log.claim_agent_graph_intent_at(request(1), 1)
        .expect("claim");
    let (g, i) = ("graph-1".to_string(), request(1).intent_id);
    let status = |s| log.set_agent_graph_intent_status(&g, &i, s, None);
    assert_eq!(
        log.read_agent_graph_intent_claim(&g, &i)
            .expect("read")
            .expect("some")
            .status,
        AdmissionStatus::Claimed
    );
    assert_eq!(
        status(AdmissionStatus::Executing)
            .expect("executing")
            .status,
        AdmissionStatus::Executing
    );
    let before = claims_bytes(&storage);
    status(AdmissionStatus::Executing).expect("repeat");
    assert_eq!(before, claims_bytes(&storage));
    assert!(matches!(
        status(AdmissionStatus::Claimed),
        Err(Error::InvalidInput(_))
    ));
    assert!(
        matches!(
            status(AdmissionStatus::Cancelled),
            Err(Error::InvalidInput(_))
        ),
        "a cancellation needs a reason"
    );
    let cancelled = log
        .set_agent_graph_intent_status(&g, &i, AdmissionStatus::Cancelled, Some("stop button"))
        .expect("cancel");
    assert_eq!(cancelled.status, AdmissionStatus::Cancelled);
    assert_eq!(cancelled.cancel_reason.as_deref(), Some("stop button"));
    assert!(matches!(
        status(AdmissionStatus::Executing),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        log.set_agent_graph_intent_status(
            &g,
            &request(2).intent_id,
            AdmissionStatus::Executing,
            None
        ),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_spawn_key_gets_one_child_and_a_different_fingerprint_conflicts() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    let first = log
        .claim_subagent_spawn(spawn("tool-1", 'a', "child-1"))
        .expect("spawn");
    assert!(first.created);
    let retry = log
        .claim_subagent_spawn(spawn("tool-1", 'a', "child-fresh"))
        .expect("retry");
    assert!(!retry.created);
    assert_eq!(
        retry.claim.child_session_id, "child-1",
        "the stored child wins"
    );
    assert!(matches!(
        log.claim_subagent_spawn(spawn("tool-1", 'b', "child-2")),
        Err(Error::ClaimConflict { .. })
    ));
    assert!(matches!(
        log.claim_subagent_spawn(spawn("tool-2", 'a', "child-1")),
        Err(Error::ClaimConflict { .. })
    ));
    let mut swarm = spawn("tool-1", 'a', "child-3");
    swarm.swarm_id = "swarm-1".into();
    swarm.item_id = "item-1".into();
    assert!(
        log.claim_subagent_spawn(swarm).expect("swarm item").created,
        "the swarm item is another key"
    );
    assert!(matches!(
        log.claim_subagent_spawn(spawn("tool-3", 'A', "child-4")),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        log.claim_subagent_spawn(spawn("tool-3", 'a', "../x")),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_session_id_is_taken_once() {
    let (_t, storage) = temp_root();
    let log = open(&storage);
    log.claim_session_create_at("session-1", 5).expect("create");
    assert!(matches!(
        log.claim_session_create_at("session-1", 6),
        Err(Error::ClaimConflict { .. })
    ));
    assert!(matches!(
        log.claim_session_create_at("bad/id", 6),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(
        log.read_session_claim("session-1")
            .expect("read")
            .map(|c| c.created_at),
        Some(5)
    );
}
