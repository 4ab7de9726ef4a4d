//! The host's hooks of a claimed run (MAKA-MODEL §12 runClaimedAgentGraphIntent's
//! `admitExecution` and `onEvent`): admission is asked, with the claim, only when the call
//! would start the run, and a refusal writes nothing and leaves the claim for a later call;
//! each event of the run the call starts reaches `onEvent`, in order; a retry answered from the
//! ledger asks and streams nothing.

mod support;

use makalog::claims::{AdmissionStatus, AgentGraphIntentClaim};
use makalog::runtime::{
    AbortController, BackendRegistry, ClaimedIntentRun, SessionEvent, SessionManager, Sources,
    FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::storage::Storage;
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use std::sync::{Arc, Mutex};
use support::graph::{claimed_child_of_new_parent, claimed_run};
use support::stores::session_files;

const PROMPT: &str = "name the files that hold the group commit";

struct Fixture {
    _t: tempfile::TempDir,
    _owner: makalog::root::Owner,
    root: std::path::PathBuf,
    stores: Arc<ExecutionStores>,
    manager: SessionManager,
    claim: AgentGraphIntentClaim,
    intent: makalog::runtime::AgentGraphRunnableIntent,
}

fn fixture() -> Fixture {
    fixture_with(PROMPT)
}

/// A fixture whose claim's turn has `prompt`.
fn fixture_with(prompt: &str) -> Fixture {
    let (t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let root = storage.describe_root();
    let (claim, intent) = claimed_child_of_new_parent(&stores, &root.display().to_string(), prompt);
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    Fixture {
        _t: t,
        _owner: owner,
        root,
        stores,
        manager,
        claim,
        intent,
    }
}

/// Every call made through `calls`: the claims its admission was asked with and the events it
/// watched.
#[derive(Default, Clone)]
struct Seen {
    admitted: Arc<Mutex<Vec<String>>>,
    events: Arc<Mutex<Vec<SessionEvent>>>,
}

impl Seen {
    /// A call of the fixture's claim whose hooks record here; `refuse` makes admission fail.
    fn call(&self, f: &Fixture, refuse: bool) -> ClaimedIntentRun {
        self.call_with(f, refuse, PROMPT)
    }

    fn call_with(&self, f: &Fixture, refuse: bool, prompt: &str) -> ClaimedIntentRun {
        let (admitted, events) = (self.admitted.clone(), self.events.clone());
        ClaimedIntentRun {
            admit_execution: Some(Box::new(move |claim| {
                Box::pin(async move {
                    // The host's gate may wait before it answers.
                    tokio::task::yield_now().await;
                    admitted.lock().expect("admitted").push(claim.claim_id);
                    match refuse {
                        true => Err(makalog::Error::InvalidInput(
                            "over the graph's budget".into(),
                        )),
                        false => Ok(()),
                    }
                })
            })),
            on_event: Some(Box::new(move |event| {
                events.lock().expect("events").push(event.clone());
            })),
            ..claimed_run(&f.claim, &f.intent, prompt)
        }
    }

    fn admitted(&self) -> Vec<String> {
        self.admitted.lock().expect("admitted").clone()
    }

    fn events(&self) -> Vec<SessionEvent> {
        self.events.lock().expect("events").clone()
    }
}

fn claim_status(f: &Fixture) -> AdmissionStatus {
    f.stores
        .claims
        .read_agent_graph_intent_claim(&f.claim.graph_id, &f.claim.intent_id)
        .expect("read")
        .expect("the claim")
        .status
}

#[tokio::test]
async fn the_host_admits_the_run_and_watches_each_of_its_events_in_order() {
    let f = fixture();
    let seen = Seen::default();
    let result = f
        .manager
        .run_claimed_agent_graph_intent(seen.call(&f, false))
        .await
        .expect("run");
    assert_eq!(result.status, "completed");
    assert_eq!(
        seen.admitted(),
        vec![f.claim.claim_id.clone()],
        "asked once"
    );
    let events = seen.events();
    // The fake's echo, streamed in deltas, then its message, text and end.
    let echoed: String = events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(echoed, result.summary, "every delta, in order");
    let ended = |e: &SessionEvent| matches!(e, SessionEvent::Complete { stop_reason, .. } if stop_reason == "end_turn");
    assert!(events.last().is_some_and(ended), "the end last: {events:?}");
    assert!(events.iter().all(|e| {
        serde_json::to_value(e).expect("json")["turnId"] == f.claim.target_turn_id.as_str()
    }));
}

#[tokio::test]
async fn a_retry_answered_from_the_ledger_neither_asks_nor_streams() {
    let f = fixture();
    let first = Seen::default();
    let ran = f
        .manager
        .run_claimed_agent_graph_intent(first.call(&f, false))
        .await
        .expect("run");
    let retry = Seen::default();
    let again = f
        .manager
        .run_claimed_agent_graph_intent(retry.call(&f, false))
        .await
        .expect("retry");
    assert_eq!(again, ran, "the same answer");
    assert!(retry.admitted().is_empty(), "no execution to admit");
    assert!(retry.events().is_empty(), "nothing streamed");
}

#[tokio::test]
async fn a_refused_admission_writes_nothing_and_a_later_call_runs_the_claim() {
    let f = fixture();
    let child = f.claim.target_session_id.clone();
    let before = (session_files(&f.root, &child), claim_status(&f));
    let refused = Seen::default();
    match f
        .manager
        .run_claimed_agent_graph_intent(refused.call(&f, true))
        .await
    {
        Err(makalog::Error::InvalidInput(why)) => assert_eq!(why, "over the graph's budget"),
        other => panic!("not the host's refusal: {other:?}"),
    }
    assert_eq!(refused.admitted().len(), 1);
    assert_eq!(
        (session_files(&f.root, &child), claim_status(&f)),
        before,
        "the child's files and the claim's status as they were"
    );
    assert_eq!(before.1, AdmissionStatus::Claimed);
    assert!(f
        .stores
        .runs
        .list_session_runs(&child)
        .expect("runs")
        .is_empty());
    let admitted = Seen::default();
    let ran = f
        .manager
        .run_claimed_agent_graph_intent(admitted.call(&f, false))
        .await
        .expect("run");
    assert_eq!(ran.status, "completed");
    assert_eq!(admitted.admitted().len(), 1);
    assert!(!admitted.events().is_empty());
}

/// An abort once the run started (the fake's question waits until answered or stopped) ends
/// the run cancelled while the host watches: its events reach `on_event` to the stop's end.
#[tokio::test]
async fn an_aborted_run_ends_while_its_events_are_watched() {
    let f = fixture_with(FAKE_ASK_USER_QUESTION_PROMPT);
    let seen = Seen::default();
    let controller = AbortController::new();
    let signal = controller.signal();
    let call = ClaimedIntentRun {
        abort: Some(signal),
        on_ready: Some(Box::new(move || controller.abort())),
        ..seen.call_with(&f, false, FAKE_ASK_USER_QUESTION_PROMPT)
    };
    let result = f
        .manager
        .run_claimed_agent_graph_intent(call)
        .await
        .expect("run");
    assert_eq!(result.status, "cancelled");
    let events = seen.events();
    let stopped = |e: &SessionEvent| matches!(e, SessionEvent::Complete { stop_reason, .. } if stop_reason == "user_stop");
    assert!(events.last().is_some_and(stopped), "{events:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, SessionEvent::Abort { .. })));
}

/// A call joining one in flight for the same claim and prompt gets that call's outcome (§12
/// step 2: the second call joins the first), here the host's refusal: it waited for the first
/// and then ran the claim itself, so a concurrent call bypassed the host's gate and started the
/// run the first call was refused. Nothing is written; a later call, not joined, runs it.
#[tokio::test]
async fn a_call_joining_a_refused_one_is_refused_with_it_and_starts_nothing() {
    let f = fixture();
    let (release, gate) = tokio::sync::oneshot::channel::<()>();
    let (asked_tx, asked) = tokio::sync::oneshot::channel::<()>();
    let first = ClaimedIntentRun {
        admit_execution: Some(Box::new(move |_| {
            Box::pin(async move {
                let _ = asked_tx.send(());
                let _ = gate.await;
                Err(makalog::Error::InvalidInput(
                    "over the graph's budget".into(),
                ))
            })
        })),
        ..claimed_run(&f.claim, &f.intent, PROMPT)
    };
    let manager = f.manager.clone();
    let first = tokio::spawn(async move { manager.run_claimed_agent_graph_intent(first).await });
    asked.await.expect("the first call is at the host's gate");
    let manager = f.manager.clone();
    let joined = claimed_run(&f.claim, &f.intent, PROMPT);
    let second = tokio::spawn(async move { manager.run_claimed_agent_graph_intent(joined).await });
    // The second call is waiting on the first before the gate answers.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    release.send(()).expect("release the gate");
    let first = first.await.expect("task");
    let second = second.await.expect("task");
    assert!(
        matches!(first, Err(makalog::Error::InvalidInput(_))),
        "{first:?}"
    );
    match second {
        Err(makalog::Error::JoinedCallFailed { claim_id, what }) => {
            assert_eq!(claim_id, f.claim.claim_id);
            assert!(what.contains("over the graph's budget"), "{what}");
        }
        other => panic!("the joined call shares the refusal, got {other:?}"),
    }
    assert!(f
        .stores
        .runs
        .list_session_runs(&f.claim.target_session_id)
        .expect("runs")
        .is_empty());
    assert_eq!(claim_status(&f), AdmissionStatus::Claimed);
    // A call made after them is no join: it runs the claim.
    let later = f
        .manager
        .run_claimed_agent_graph_intent(claimed_run(&f.claim, &f.intent, PROMPT))
        .await
        .expect("a later call");
    assert_eq!(later.status, "completed");
}
