//! Seed 000 (execution-composition.test.ts): the execution composition owns a claimed graph
//! activation, its retry and an exact abort. A claimed intent runs once (completed); its
//! admission carries the claimed descriptor and the prompt; a retry returns the same result and
//! writes no second run, user message, run_started, terminal run event or terminal runtime
//! event; an aborted claimed run ends cancelled with exactly one run_started, one
//! run_cancelled and one runtime event with status aborted; the completed run stays completed;
//! and the composition's close reports a journey error and its own together.

mod support;

use makalog::claims::AgentGraphIntentClaim;
use makalog::root::Owner;
use makalog::runtime::{
    AbortController, AgentGraphRunnableIntent, BackendRegistry, ExecutionComposition, Sources,
    FAKE_ASK_USER_QUESTION_PROMPT, LOCAL_READ_AGENT_DEFINITION,
};
use makalog::storage::Storage;
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::{json, Value};
use support::graph::{claimed_graph_child, claimed_run, parent_header};

fn graph_execution_descriptor(claim: &AgentGraphIntentClaim) -> Value {
    json!({
        "kind": "claimed_agent_graph_intent",
        "claim": serde_json::to_value(claim).expect("claim"),
        "agentId": LOCAL_READ_AGENT_DEFINITION.id,
        "agentName": LOCAL_READ_AGENT_DEFINITION.name,
    })
}

/// One run for the claimed turn, one user message (the admitted one), one run_started, one
/// terminal run event of the expected kind, one terminal runtime event of the matching status.
fn assert_unique_graph_execution_facts(
    stores: &ExecutionStores,
    claim: &AgentGraphIntentClaim,
    user_message_id: &str,
    expected_terminal: &str,
) {
    let (session, run) = (&claim.target_session_id, &claim.target_run_id);
    let runs: Vec<String> = stores
        .runs
        .list_session_runs(session)
        .expect("runs")
        .iter()
        .filter(|r| r.value()["turnId"] == json!(claim.target_turn_id))
        .map(|r| r.run_id().to_owned())
        .collect();
    assert_eq!(runs, std::slice::from_ref(run));
    let users: Vec<String> = stores
        .sessions
        .read_messages(session, None)
        .expect("messages")
        .iter()
        .filter(|m| m.message_type() == "user" && m.turn_id() == Some(&claim.target_turn_id))
        .map(|m| m.id().to_owned())
        .collect();
    assert_eq!(users, [user_message_id.to_owned()]);
    let events = stores.runs.read_events(session, run).expect("run events");
    let count = |t: &str| events.iter().filter(|(_, e)| e.event_type() == t).count();
    assert_eq!(count("run_started"), 1);
    assert_eq!(count(expected_terminal), 1);
    let status = if expected_terminal == "run_cancelled" {
        "aborted"
    } else {
        "completed"
    };
    let runtime = stores
        .runtime_events
        .read_immutable_runtime_events(session, run)
        .expect("runtime events");
    assert_eq!(
        runtime
            .iter()
            .filter(|e| e.status() == Some(status))
            .count(),
        1
    );
}

fn admission_of(stores: &ExecutionStores, claim: &AgentGraphIntentClaim) -> Value {
    stores
        .runs
        .read_root_turn_admission(&claim.target_session_id, &claim.target_turn_id)
        .expect("read admission")
        .expect("an admission")
        .value()
        .clone()
}

/// The fixtures, written through the stores and closed before the composition opens.
fn fixtures(
    owner: &Owner,
    root: &str,
    completed_prompt: &str,
) -> [(AgentGraphIntentClaim, AgentGraphRunnableIntent); 2] {
    let stores = open_execution_stores_for_write(owner).expect("stores");
    stores.sessions.create(parent_header(root)).expect("parent");
    let claim = |suffix: &str, prompt: &str| {
        let (request, intent) = claimed_graph_child(&stores, root, suffix, prompt);
        let claim = stores
            .claims
            .claim_agent_graph_intent(request)
            .expect("claim")
            .claim;
        (claim, intent)
    };
    let completed = claim("a", completed_prompt);
    let aborted = claim("e", FAKE_ASK_USER_QUESTION_PROMPT);
    stores.close().expect("close");
    [completed, aborted]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_execution_composition_owns_claimed_graph_activation_retry_and_exact_abort() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let root = storage.describe_root().display().to_string();
    let completed_prompt = "execute the canonical claimed graph activation";
    let [(completed_claim, completed_intent), (aborted_claim, aborted_intent)] =
        fixtures(&owner, &root, completed_prompt);
    let composition =
        ExecutionComposition::open(&owner, BackendRegistry::with_fake(), Sources::system())
            .expect("composition");
    composition.recover().expect("recover");
    let journey = journey(
        &composition,
        (&completed_claim, &completed_intent, completed_prompt),
        (&aborted_claim, &aborted_intent),
    )
    .await;
    composition.close_after(journey).expect("journey and close");
}

async fn journey(
    composition: &ExecutionComposition,
    (completed_claim, completed_intent, completed_prompt): (
        &AgentGraphIntentClaim,
        &AgentGraphRunnableIntent,
        &str,
    ),
    (aborted_claim, aborted_intent): (&AgentGraphIntentClaim, &AgentGraphRunnableIntent),
) -> makalog::Result<()> {
    let (manager, stores) = (composition.manager(), composition.stores());
    let run = claimed_run;
    let first = manager
        .run_claimed_agent_graph_intent(run(completed_claim, completed_intent, completed_prompt))
        .await?;
    assert_eq!(first.status, "completed");

    let admission = admission_of(stores, completed_claim);
    let user_message_id = admission["userMessageId"]
        .as_str()
        .expect("a user message id")
        .to_owned();
    assert_eq!(
        admission["execution"],
        graph_execution_descriptor(completed_claim)
    );
    assert_eq!(
        admission["normalizedInput"],
        json!({"text": completed_prompt})
    );

    let retry = manager
        .run_claimed_agent_graph_intent(run(completed_claim, completed_intent, completed_prompt))
        .await?;
    let key = |r: &makalog::runtime::ClaimedRunResult| {
        (
            r.claim_id.clone(),
            r.child_session_id.clone(),
            r.turn_id.clone(),
            r.run_id.clone(),
            r.status.clone(),
            r.summary.clone(),
        )
    };
    assert_eq!(key(&retry), key(&first));
    assert_eq!(
        admission_of(stores, completed_claim)["userMessageId"],
        json!(user_message_id)
    );
    assert_unique_graph_execution_facts(stores, completed_claim, &user_message_id, "run_completed");

    let abort = AbortController::new();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut aborting = run(aborted_claim, aborted_intent, FAKE_ASK_USER_QUESTION_PROMPT);
    aborting.abort = Some(abort.signal());
    aborting.on_ready = Some(Box::new(move || {
        let _ = ready_tx.send(());
    }));
    let manager2 = manager.clone();
    let aborting =
        tokio::spawn(async move { manager2.run_claimed_agent_graph_intent(aborting).await });
    ready_rx.await.expect("the run started");
    abort.abort();
    let aborted = aborting.await.expect("task")?;
    assert_eq!(aborted.status, "cancelled");

    let aborted_admission = admission_of(stores, aborted_claim);
    let aborted_user = aborted_admission["userMessageId"]
        .as_str()
        .expect("a user message id")
        .to_owned();
    assert_eq!(
        aborted_admission["execution"],
        graph_execution_descriptor(aborted_claim)
    );
    let aborted_run = stores.runs.read_run(
        &aborted_claim.target_session_id,
        &aborted_claim.target_run_id,
    )?;
    assert_eq!(aborted_run.status(), "cancelled");
    assert_unique_graph_execution_facts(stores, aborted_claim, &aborted_user, "run_cancelled");
    let completed_run = stores.runs.read_run(
        &completed_claim.target_session_id,
        &completed_claim.target_run_id,
    )?;
    assert_eq!(completed_run.status(), "completed");
    Ok(())
}

#[test]
fn a_journey_error_and_a_close_error_are_both_reported() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let composition =
        ExecutionComposition::open(&owner, BackendRegistry::with_fake(), Sources::system())
            .expect("composition");
    let journey: makalog::Result<()> =
        Err(makalog::Error::InvalidInput("the journey failed".into()));
    // A runtime handle still held keeps the stores in use, so the close fails.
    let held = composition.manager().clone();
    match composition.close_after(journey) {
        Err(makalog::Error::Several { errors, .. }) => {
            assert_eq!(errors.len(), 2);
            assert!(errors[0].to_string().contains("the journey failed"));
            assert!(
                errors[1].to_string().contains("still in use"),
                "{}",
                errors[1]
            );
        }
        other => panic!("expected both errors, got {other:?}"),
    }
    drop(held);
}
