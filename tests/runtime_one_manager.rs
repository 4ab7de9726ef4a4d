//! One runtime over a store at a time: a `SessionManager`'s live turns, claimed calls and
//! open-runs slots are its own, so a second manager over the same stores would take the
//! first one's live turn for an interrupted one and end it. The second is refused
//! (`AlreadyOpen`), nothing written, until the first, its clones and its turns are gone.

mod support;

use makalog::runtime::{
    BackendRegistry, SessionManager, Sources, TurnInput, FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::storage::Storage;
use makalog::store::open_execution_stores_for_write;
use makalog::Error;
use serde_json::json;
use std::sync::Arc;
use support::stores::session_files;

fn manager(stores: &Arc<makalog::store::ExecutionStores>) -> makalog::Result<SessionManager> {
    SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_manager_over_one_store_is_refused_while_the_first_lives() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let first = manager(&stores).expect("the first manager");
    first
        .create_session(json!({"id": "s", "backend": "fake", "model": "m"}))
        .expect("session");
    let input = TurnInput {
        text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
        ..TurnInput::default()
    };
    let mut turn = first.send_message("s", input).await.expect("send");
    while let Some(e) = turn.events.recv().await {
        if e.type_name() == "user_question_request" {
            break;
        }
    }
    let root = storage.describe_root();
    let before = session_files(&root, "s");

    let second = manager(&stores);
    assert!(
        matches!(second, Err(Error::AlreadyOpen { .. })),
        "{:?}",
        second.err()
    );
    // A clone of the first is the same runtime: its recovery leaves the live turn alone.
    let report = first
        .clone()
        .recover_interrupted_sessions()
        .expect("recover");
    assert!(report.recovered.is_empty(), "{report:?}");
    assert_eq!(session_files(&root, "s"), before, "nothing written");

    // The live turn ends as it would have; once the first runtime is gone a next one may run.
    assert!(first.stop("s", "stop_button").expect("stop"));
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "cancelled");
    drop(first);
    let next = manager(&stores).expect("a manager once the first is gone");
    let report = next.recover_interrupted_sessions().expect("recover");
    assert!(report.recovered.is_empty(), "{report:?}");
}

/// The composition's runtime holds its stores: no manager of its own can be made over them.
#[test]
fn a_composition_runtime_is_the_one_over_its_stores() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let c = makalog::runtime::ExecutionComposition::open(
        &owner,
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("composition");
    let stores = c.manager().stores().clone();
    assert!(matches!(manager(&stores), Err(Error::AlreadyOpen { .. })));
    drop(stores);
    c.close().expect("close");
}
