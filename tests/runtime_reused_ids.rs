//! A turn given ids the session already holds (a run id of an earlier run, a user message id
//! an earlier event has) is refused before anything is written: no admission of a hosted turn
//! that could then never run (its stored run id would win on every retry), no half-opened
//! run, nothing in the open-runs file.

mod support;

use makalog::runtime::TurnInput;
use serde_json::json;
use support::claims::root_path;
use support::stores::session_files;
use support::turns::{fixture, open_runs, session};

fn hosted(turn: &str, run: &str) -> TurnInput {
    TurnInput {
        turn_id: Some(turn.into()),
        run_id: Some(run.into()),
        text: "look at this".into(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_id_the_session_holds_is_refused_with_no_admission_written() {
    let f = fixture();
    let s = session(&f);
    let first = f
        .manager
        .send_message(&s, hosted("turn-1", "r1"))
        .await
        .expect("send");
    first.finish().await.expect("the first turn");
    let root = root_path(&f.storage);
    let (before, marked) = (session_files(&root, &s), open_runs(&root));
    let again = f.manager.send_message(&s, hosted("turn-2", "r1")).await;
    assert!(
        matches!(&again, Err(makalog::Error::InvalidRecord { field, .. }) if field == "runId"),
        "{:?}",
        again.err()
    );
    let stores = f.manager.stores();
    assert!(
        stores
            .runs
            .read_root_turn_admission(&s, "turn-2")
            .expect("read")
            .is_none(),
        "no admission of a turn that cannot run"
    );
    assert_eq!(session_files(&root, &s), before, "nothing written");
    assert_eq!(open_runs(&root), marked, "nothing marked");
    // With a fresh run id the turn is admitted and runs.
    let fresh = f
        .manager
        .send_message(&s, hosted("turn-2", "r2"))
        .await
        .expect("send");
    assert_eq!(fresh.finish().await.expect("ends").status, "completed");
}

#[tokio::test(start_paused = true)]
async fn a_user_message_id_an_event_holds_is_refused_with_nothing_written() {
    let f = fixture();
    let s = session(&f);
    let first = f
        .manager
        .send_message(
            &s,
            TurnInput {
                text: "first".into(),
                user_message_id: Some("m-1".into()),
                ..TurnInput::default()
            },
        )
        .await
        .expect("send");
    first.finish().await.expect("the first turn");
    let root = root_path(&f.storage);
    let (before, marked) = (session_files(&root, &s), open_runs(&root));
    let runs = f.manager.stores().runs.list_session_runs(&s).expect("runs");
    let again = f
        .manager
        .send_message(
            &s,
            TurnInput {
                text: "second".into(),
                user_message_id: Some("m-1".into()),
                ..TurnInput::default()
            },
        )
        .await;
    assert!(
        matches!(&again, Err(makalog::Error::IdentityConflict { .. })),
        "{:?}",
        again.err()
    );
    assert_eq!(session_files(&root, &s), before, "nothing written");
    assert_eq!(open_runs(&root), marked, "nothing marked");
    let after = f.manager.stores().runs.list_session_runs(&s).expect("runs");
    assert_eq!(after.len(), runs.len(), "no run");
}

/// A run id the session's events already use (a host's runtime event, with no run record
/// behind it) was checked only against run records: the run and its `run_created` were made
/// durable, then the opening's event was refused by the events' identity, leaving a
/// half-opened run. Events of the run, another turn's or its sealing one, now refuse the turn
/// with nothing written.
#[tokio::test(start_paused = true)]
async fn a_run_id_the_sessions_events_use_is_refused_with_nothing_written() {
    for sealed in [false, true] {
        let f = fixture();
        let s = session(&f);
        let stores = f.manager.stores();
        let mut event = support::events::user(&s, "r9", "another-turn", "host-1", 5.0, "hi");
        if sealed {
            let mut value = event.value().clone();
            value["turnId"] = json!("turn-9");
            value["status"] = json!("completed");
            value["actions"] = json!({"endInvocation": true});
            event = makalog::event::RuntimeEvent::from_value(value).expect("a terminal event");
        }
        stores
            .runtime_events
            .append(&event, makalog::segment::Durability::Durable)
            .expect("the host's event");
        let root = root_path(&f.storage);
        let (before, marked) = (session_files(&root, &s), open_runs(&root));
        let again = f.manager.send_message(&s, hosted("turn-9", "r9")).await;
        assert!(
            matches!(
                &again,
                Err(makalog::Error::IdentityConflict { .. } | makalog::Error::RunSealed { .. })
            ),
            "sealed {sealed}: {:?}",
            again.err()
        );
        assert_eq!(
            session_files(&root, &s),
            before,
            "sealed {sealed}: nothing written"
        );
        assert_eq!(open_runs(&root), marked, "sealed {sealed}: nothing marked");
        assert!(stores.runs.list_session_runs(&s).expect("runs").is_empty());
        let fresh = f
            .manager
            .send_message(&s, hosted("turn-9", "r10"))
            .await
            .expect("send");
        assert_eq!(fresh.finish().await.expect("ends").status, "completed");
    }
}

/// The check reads the session's index as an append does: a sidecar whose id table (its CRC
/// intact) names, under the hash of the id asked about, a frame that is not there is damage,
/// the index rebuilt, and the turn runs; not a refusal of every later turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crafted_sidecar_entry_under_the_id_is_damage_and_the_turn_runs() {
    use makalog::index::{
        decode_sidecar_header, decode_sidecar_state, encode_sidecar, id_entries, id_hash, section,
    };
    use makalog::runtime::{BackendRegistry, ExecutionComposition, Sources};
    let (_t, storage) = support::temp_root();
    let root = root_path(&storage);
    let owner = support::owner(&storage);
    let open = || {
        ExecutionComposition::open(
            &owner,
            BackendRegistry::with_instant_fake(),
            Sources::system(),
        )
        .expect("open")
    };
    let c = open();
    let s = c
        .manager()
        .create_session(
            json!({"cwd": "/w", "backend": "fake", "llmConnectionSlug": "fake",
                               "model": "m"}),
        )
        .expect("session")
        .id()
        .to_owned();
    let first = c
        .manager()
        .send_message(&s, TurnInput::default())
        .await
        .expect("send");
    first.finish().await.expect("the first turn");
    c.close().expect("close");
    let path = root.join("sessions").join(&s).join("index");
    let good = std::fs::read(&path).expect("the sidecar");
    let header = decode_sidecar_header(&good).expect("header");
    let view = decode_sidecar_state(&good, &header).expect("state");
    let mut ids = section(&good, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    let mut crafted = ids[0];
    crafted.hash = id_hash("m-new");
    crafted.ordinal = 99;
    ids.push(crafted);
    ids.sort_by_key(|e| e.hash);
    std::fs::write(&path, encode_sidecar(&view, &ids).expect("encode")).expect("craft");
    let c = open();
    let turn = c
        .manager()
        .send_message(
            &s,
            TurnInput {
                user_message_id: Some("m-new".into()),
                ..TurnInput::default()
            },
        )
        .await
        .expect("the index is rebuilt and the turn starts");
    assert_eq!(turn.finish().await.expect("ends").status, "completed");
    c.close().expect("close");
}
