//! Claimed graph intents whose first call did not see the run through (MAKA-MODEL §12,
//! runClaimedAgentGraphIntent step 4): a retry waits while the run is live and answers with
//! what it came to; only a run no turn holds any more is recovered.

mod support;

use makalog::runtime::{BackendRegistry, SessionManager, Sources};
use makalog::storage::Storage;
use makalog::store::open_execution_stores_for_write;
use std::sync::Arc;
use std::time::Duration;
use support::graph::{claimed_child_of_new_parent, claimed_run};

/// A call dropped while its run streams (a caller's timeout) leaves the turn running in its
/// task; a retry of the claim must not take that live run for one a restart interrupted: it
/// waits for it and returns its result, completed, with one run_started and one terminal.
#[tokio::test(start_paused = true)]
async fn a_retry_after_a_dropped_call_waits_for_the_live_run_instead_of_failing_it() {
    let prompt = "stream long enough to outlive the first call's patience";
    // The fake with its delays: 45 ms a chunk of the echo, on tokio's paused clock.
    let f = fixture(prompt, BackendRegistry::with_fake());
    let (stores, manager, claim, intent) = (&f.stores, &f.manager, &f.claim, &f.intent);
    let call = || claimed_run(claim, intent, prompt);
    let first = tokio::time::timeout(
        Duration::from_millis(200),
        manager.run_claimed_agent_graph_intent(call()),
    )
    .await;
    assert!(
        first.is_err(),
        "the first call gave up while the run streamed"
    );
    let run = stores
        .runs
        .read_run(&claim.target_session_id, &claim.target_run_id)
        .expect("the run exists");
    assert_eq!(run.status(), "running", "and the run still streams");
    let retry = manager
        .run_claimed_agent_graph_intent(call())
        .await
        .expect("retry");
    assert_eq!(retry.status, "completed");
    assert_eq!(retry.failure_class, None);
    assert!(retry.summary.contains(prompt), "{}", retry.summary);
    let events = stores
        .runs
        .read_events(&claim.target_session_id, &claim.target_run_id)
        .expect("events");
    let count = |kind: &str| events.iter().filter(|e| e.1.event_type() == kind).count();
    assert_eq!(count("run_started"), 1);
    assert_eq!(count("run_completed"), 1);
    assert_eq!(count("run_failed"), 0);
    // A second retry answers the same from the ledger.
    let again = manager
        .run_claimed_agent_graph_intent(call())
        .await
        .expect("again");
    assert_eq!(again, retry);
}

/// A claimed run given an abort signal that never fires: once the call returns, nothing of the
/// run holds the stores any more, so the composition closes at once (on a runtime of one
/// thread, where no other task ran in between).
#[tokio::test]
async fn a_claimed_run_with_an_unused_abort_signal_leaves_the_composition_free_to_close() {
    use makalog::runtime::{AbortController, ExecutionComposition};
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let c = ExecutionComposition::open(
        &owner,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("composition");
    let root = storage.describe_root().display().to_string();
    let stores = c.stores();
    let prompt = "a short answer";
    let (claim, intent) = claimed_child_of_new_parent(stores, &root, prompt);
    let abort = AbortController::new();
    let mut run = claimed_run(&claim, &intent, prompt);
    run.abort = Some(abort.signal());
    let result = c
        .manager()
        .run_claimed_agent_graph_intent(run)
        .await
        .expect("run");
    assert_eq!(result.status, "completed");
    c.close().expect("nothing holds the stores");
}

/// A disposed runtime starts no claimed run, and marks nothing: the claim stays as it was, for
/// a later process to run (it was marked executing, then refused).
#[tokio::test]
async fn a_disposed_runtime_refuses_a_claimed_run_and_marks_nothing() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let root = storage.describe_root().display().to_string();
    let prompt = "a short answer";
    let (claim, intent) = claimed_child_of_new_parent(&stores, &root, prompt);
    let status = |stores: &makalog::store::ExecutionStores| {
        stores
            .claims
            .read_agent_graph_intent_claim(&claim.graph_id, &claim.intent_id)
            .expect("read")
            .expect("the claim")
            .status
    };
    let before = status(&stores);
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    manager.dispose().expect("dispose");
    let refused = manager
        .run_claimed_agent_graph_intent(claimed_run(&claim, &intent, prompt))
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("disposed")),
        "{refused:?}"
    );
    assert_eq!(status(&stores), before);
    assert!(stores
        .runs
        .list_session_runs(&claim.target_session_id)
        .expect("runs")
        .is_empty());
}

/// An intent not of §9's shape (schemaVersion 1; policyKind `map`, `all_settled` or
/// `supervisor`) is refused by the field it gets wrong, before anything runs or is written.
#[tokio::test(start_paused = true)]
async fn an_intent_of_another_shape_is_refused_by_its_field() {
    let r = support::stores::StoresRoot::new();
    let (stores, storage) = (&r.stores, &r.storage);
    let prompt = "summarize";
    let (claim, intent) = claimed_child_of_new_parent(stores, &r.root(), prompt);
    let manager = r.manager();
    let child = support::stores::session_files(&storage.describe_root(), &claim.target_session_id);
    let mut wrong_version = intent.clone();
    wrong_version.schema_version = 2;
    let mut wrong_kind = intent.clone();
    wrong_kind.policy_kind = "whenever".into();
    for (bad, field) in [(wrong_version, "schemaVersion"), (wrong_kind, "policyKind")] {
        let got = manager
            .run_claimed_agent_graph_intent(claimed_run(&claim, &bad, prompt))
            .await;
        assert!(
            matches!(&got, Err(makalog::Error::InvalidRecord { field: f, .. }) if f == field),
            "{field}: {:?}",
            got.err()
        );
    }
    assert_eq!(
        support::stores::session_files(&storage.describe_root(), &claim.target_session_id),
        child,
        "nothing written"
    );
    let ran = manager
        .run_claimed_agent_graph_intent(claimed_run(&claim, &intent, prompt))
        .await
        .expect("the intent as claimed runs");
    assert_eq!(ran.status, "completed");
}

/// A run that exists under the claim's ids must be the child session's own (MAKA-MODEL §12,
/// runClaimedAgentGraphIntent step 4, "session-inline"): one another run delegated
/// (`parentRunId`) is a conflict, neither answered nor recovered.
#[tokio::test(start_paused = true)]
async fn an_existing_run_another_run_delegated_is_a_conflict() {
    let r = support::stores::StoresRoot::new();
    let stores = &r.stores;
    let prompt = "summarize";
    let (claim, intent) = claimed_child_of_new_parent(stores, &r.root(), prompt);
    let child = &claim.target_session_id;
    let d = makalog::runtime::LOCAL_READ_AGENT_DEFINITION;
    let mut run = support::stores::run_header(child, &claim.target_run_id, "running");
    run["turnId"] = serde_json::json!(claim.target_turn_id);
    run["agentId"] = serde_json::json!(d.id);
    run["agentName"] = serde_json::json!(d.name);
    run["parentRunId"] = serde_json::json!("someone-elses-run");
    stores.runs.create_run(run).expect("a delegated run");
    stores
        .sessions
        .append_message(
            child,
            serde_json::json!({"type": "user", "id": "u", "turnId": claim.target_turn_id,
                               "ts": 1, "text": prompt}),
        )
        .expect("its user message");
    let manager = r.manager();
    let got = manager
        .run_claimed_agent_graph_intent(claimed_run(&claim, &intent, prompt))
        .await;
    assert!(
        matches!(got, Err(makalog::Error::ClaimConflict { .. })),
        "{:?}",
        got.map(|r| r.status)
    );
    let run = stores
        .runs
        .read_run(child, &claim.target_run_id)
        .expect("run");
    assert_eq!(run.status(), "running", "not recovered");
}

/// A call whose abort signal fired before its run started (the original checks it before
/// admission): nothing is asked or written, the claim stays as it was, and the call says so.
#[tokio::test]
async fn a_call_aborted_before_its_run_starts_writes_nothing() {
    use makalog::runtime::{AbortController, ClaimedIntentRun};
    let prompt = "summarize the committed record";
    let f = fixture(prompt, BackendRegistry::with_instant_fake());
    let (stores, manager, claim, intent) = (&f.stores, &f.manager, &f.claim, &f.intent);
    let controller = AbortController::new();
    controller.abort();
    let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = asked.clone();
    let call = ClaimedIntentRun {
        abort: Some(controller.signal()),
        admit_execution: Some(Box::new(move |_| {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        })),
        ..claimed_run(claim, intent, prompt)
    };
    match manager.run_claimed_agent_graph_intent(call).await {
        Err(makalog::Error::Aborted { what }) => assert!(what.contains(&claim.claim_id), "{what}"),
        other => panic!("not refused as aborted: {other:?}"),
    }
    assert!(
        !asked.load(std::sync::atomic::Ordering::SeqCst),
        "admission not asked"
    );
    assert!(stores
        .runs
        .list_session_runs(&claim.target_session_id)
        .expect("runs")
        .is_empty());
    let status = stores
        .claims
        .read_agent_graph_intent_claim(&claim.graph_id, &claim.intent_id)
        .expect("read")
        .expect("claim")
        .status;
    assert_eq!(status, makalog::claims::AdmissionStatus::Claimed);
}

/// A retry waiting for a live run (its first call dropped while the fake's question waits for
/// an answer) stops waiting when its own signal aborts: it ignored the signal, and so waited
/// until someone answered or stopped the session. The run goes on, untouched.
#[tokio::test(start_paused = true)]
async fn a_retry_waiting_for_a_live_run_stops_waiting_when_aborted() {
    use makalog::runtime::{AbortController, ClaimedIntentRun, FAKE_ASK_USER_QUESTION_PROMPT};
    let prompt = FAKE_ASK_USER_QUESTION_PROMPT;
    let f = fixture(prompt, BackendRegistry::with_fake());
    let (stores, manager, claim, intent) = (&f.stores, &f.manager, &f.claim, &f.intent);
    let first = tokio::time::timeout(
        Duration::from_millis(500),
        manager.run_claimed_agent_graph_intent(claimed_run(claim, intent, prompt)),
    )
    .await;
    assert!(
        first.is_err(),
        "the first call gave up while the question waits"
    );
    let controller = AbortController::new();
    let retry = ClaimedIntentRun {
        abort: Some(controller.signal()),
        ..claimed_run(claim, intent, prompt)
    };
    let m = manager.clone();
    let retry = tokio::spawn(async move { m.run_claimed_agent_graph_intent(retry).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    controller.abort();
    ends_aborted(retry, "the retry stopped waiting").await;
    let run = stores
        .runs
        .read_run(&claim.target_session_id, &claim.target_run_id)
        .expect("run");
    assert_eq!(run.status(), "waiting_for_user", "the run goes on");
    manager
        .stop(&claim.target_session_id, "test_done")
        .expect("stop the question");
}

/// Calls for one child session are serialized as whole calls (MAKA-MODEL §12 step 2): a
/// second claim on a child whose first claimed turn is live (the fake's question waiting) was
/// admitted and marked executing at once, then queued at the child's turn, where its abort
/// was not watched. It now waits before anything (its admission not asked), and its abort
/// while it waits ends it with nothing written.
#[tokio::test(start_paused = true)]
async fn a_second_claim_on_a_busy_child_waits_whole_and_its_abort_writes_nothing() {
    use makalog::runtime::{AbortController, ClaimedIntentRun, FAKE_ASK_USER_QUESTION_PROMPT};
    let prompt = FAKE_ASK_USER_QUESTION_PROMPT;
    let f = fixture(prompt, BackendRegistry::with_fake());
    let (stores, manager, claim, intent) = (&f.stores, &f.manager, &f.claim, &f.intent);
    // A second intent of another graph for another turn of the same child.
    let mut second_intent = intent.clone();
    second_intent.graph_id = "graph-b".into();
    second_intent.intent_id = format!("graph_intent_{}", "b".repeat(32));
    let second_prompt = "a second node for the same child";
    let request = makalog::claims::AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{}", "b".repeat(32)),
        graph_id: second_intent.graph_id.clone(),
        intent_id: second_intent.intent_id.clone(),
        intent_fingerprint: second_intent
            .fingerprint(second_prompt)
            .expect("fingerprint"),
        readiness_context_fingerprint: second_intent.readiness_context_fingerprint.clone(),
        target_operator_id: claim.target_operator_id.clone(),
        target_session_id: claim.target_session_id.clone(),
        target_turn_id: "graph-turn-b".into(),
        target_run_id: "graph-run-b".into(),
    };
    let second = stores
        .claims
        .claim_agent_graph_intent(request)
        .expect("second claim")
        .claim;
    let m = manager.clone();
    let first_call = claimed_run(claim, intent, prompt);
    let first = tokio::spawn(async move { m.run_claimed_agent_graph_intent(first_call).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = asked.clone();
    let controller = AbortController::new();
    let second_call = ClaimedIntentRun {
        abort: Some(controller.signal()),
        admit_execution: Some(Box::new(move |_| {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        })),
        ..claimed_run(&second, &second_intent, second_prompt)
    };
    let m = manager.clone();
    let second_task =
        tokio::spawn(async move { m.run_claimed_agent_graph_intent(second_call).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !asked.load(std::sync::atomic::Ordering::SeqCst),
        "not admitted while the child's other call runs"
    );
    controller.abort();
    ends_aborted(second_task, "the second call stopped waiting").await;
    let status = stores
        .claims
        .read_agent_graph_intent_claim(&second.graph_id, &second.intent_id)
        .expect("read")
        .expect("claim")
        .status;
    assert_eq!(status, makalog::claims::AdmissionStatus::Claimed);
    assert!(stores
        .runs
        .read_run(&claim.target_session_id, "graph-run-b")
        .is_err());
    manager
        .stop(&claim.target_session_id, "test_done")
        .expect("stop the question");
    let first = first.await.expect("task").expect("the first call");
    assert_eq!(first.status, "cancelled");
}

/// A fresh root with a linked child and its stored claim for one turn with `prompt`, and a
/// manager over it with `registry`'s backends.
struct Fixture {
    _t: tempfile::TempDir,
    _owner: makalog::root::Owner,
    stores: Arc<makalog::store::ExecutionStores>,
    manager: SessionManager,
    claim: makalog::claims::AgentGraphIntentClaim,
    intent: makalog::runtime::AgentGraphRunnableIntent,
}

/// Waits (a minute at most) for a claimed call's task, which must end `Error::Aborted`.
async fn ends_aborted<T: std::fmt::Debug>(
    task: tokio::task::JoinHandle<makalog::Result<T>>,
    stopped: &str,
) {
    let outcome = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect(stopped)
        .expect("task");
    assert!(
        matches!(outcome, Err(makalog::Error::Aborted { .. })),
        "{outcome:?}"
    );
}

fn fixture(prompt: &str, registry: BackendRegistry) -> Fixture {
    let (t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let root = storage.describe_root().display().to_string();
    let (claim, intent) = claimed_child_of_new_parent(&stores, &root, prompt);
    let manager =
        SessionManager::new(stores.clone(), registry, Sources::system()).expect("manager");
    Fixture {
        _t: t,
        _owner: owner,
        stores,
        manager,
        claim,
        intent,
    }
}

/// Calls joined for one claim, each with its own abort: a retry waiting for a live run that
/// gives up (its abort) leaves the calls joined to it waiting on their own, and one joined
/// whose abort fires stops waiting at once. A caller's abort was the outcome of every call
/// joined to it, and a joined call's abort went unwatched while it waited to join.
#[tokio::test(start_paused = true)]
async fn each_joined_call_has_its_own_abort() {
    use makalog::runtime::{AbortController, ClaimedIntentRun, FAKE_ASK_USER_QUESTION_PROMPT};
    let prompt = FAKE_ASK_USER_QUESTION_PROMPT;
    let f = fixture(prompt, BackendRegistry::with_fake());
    let (stores, manager, claim, intent) = (&f.stores, &f.manager, &f.claim, &f.intent);
    let first = tokio::time::timeout(
        Duration::from_millis(500),
        manager.run_claimed_agent_graph_intent(claimed_run(claim, intent, prompt)),
    )
    .await;
    assert!(first.is_err(), "the first call gave up, its run parked");
    let with_abort = |c: &AbortController| ClaimedIntentRun {
        abort: Some(c.signal()),
        ..claimed_run(claim, intent, prompt)
    };
    let (a_abort, c_abort) = (AbortController::new(), AbortController::new());
    let m = manager.clone();
    let a_call = with_abort(&a_abort);
    let a = tokio::spawn(async move { m.run_claimed_agent_graph_intent(a_call).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let m = manager.clone();
    let b_call = claimed_run(claim, intent, prompt);
    let b = tokio::spawn(async move { m.run_claimed_agent_graph_intent(b_call).await });
    let m = manager.clone();
    let c_call = with_abort(&c_abort);
    let c = tokio::spawn(async move { m.run_claimed_agent_graph_intent(c_call).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    c_abort.abort();
    ends_aborted(c, "the joined call stopped waiting").await;
    a_abort.abort();
    let a = a.await.expect("task");
    assert!(matches!(a, Err(makalog::Error::Aborted { .. })), "{a:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!b.is_finished(), "b waits on, its own call");
    manager
        .stop(&claim.target_session_id, "test_done")
        .expect("stop the question");
    let b = b.await.expect("task").expect("b answers the run's end");
    assert_eq!(b.status, "cancelled");
    let run = stores
        .runs
        .read_run(&claim.target_session_id, &claim.target_run_id)
        .expect("run");
    assert_eq!(run.status(), "cancelled");
}

/// A joined call dropped before it ran (a caller's timeout) left the first call's outcome in
/// the map, so every later call got it: here the host's refusal, shared with calls that joined
/// nothing. The first call clears its outcome away once it is told to those waiting.
#[tokio::test(start_paused = true)]
async fn an_outcome_is_told_to_the_calls_waiting_then_and_to_no_later_one() {
    use makalog::runtime::ClaimedIntentRun;
    let prompt = "summarize the committed record";
    let f = fixture(prompt, BackendRegistry::with_instant_fake());
    let (manager, claim, intent) = (&f.manager, &f.claim, &f.intent);
    let (release, gate) = tokio::sync::oneshot::channel::<()>();
    let a_call = ClaimedIntentRun {
        admit_execution: Some(Box::new(move |_| {
            Box::pin(async move {
                let _ = gate.await;
                Err(makalog::Error::InvalidInput("not now".into()))
            })
        })),
        ..claimed_run(claim, intent, prompt)
    };
    let m = manager.clone();
    let a = tokio::spawn(async move { m.run_claimed_agent_graph_intent(a_call).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    // B joins (polled once: it waits on A), then is dropped without being polled again.
    let b_call = claimed_run(claim, intent, prompt);
    let mut b = Box::pin(manager.run_claimed_agent_graph_intent(b_call));
    tokio::select! {
        biased;
        _ = &mut b => panic!("b waits on a"),
        () = std::future::ready(()) => {}
    }
    release.send(()).expect("release");
    assert!(a.await.expect("task").is_err(), "the host refused");
    drop(b);
    let c = manager
        .run_claimed_agent_graph_intent(claimed_run(claim, intent, prompt))
        .await
        .expect("a later call runs the claim");
    assert_eq!(c.status, "completed");
}
