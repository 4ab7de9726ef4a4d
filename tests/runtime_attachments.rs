//! A turn's attachments (MAKA-MODEL §1.2 AttachmentRef, §6 `user.attachments`, §7
//! `run_created.attachmentCount`, §11 the fake's echo): the user message and the user
//! RuntimeEvent state each reference, read back the same by the read-only stores; the backend
//! is handed them; a turn without any states none; a size the ledger cannot state exactly is
//! refused by field with nothing written.

mod support;

use makalog::runtime::{AttachmentKind, AttachmentRef, StorageRef, TurnInput};
use makalog::store::ReadOnlySessions;
use serde_json::{json, Value};
use support::claims::root_path;
use support::stores::session_files;
use support::turns::{fixture, session, Fixture};

fn screenshot() -> AttachmentRef {
    AttachmentRef {
        kind: AttachmentKind::Image,
        name: "screenshot.png".into(),
        mime_type: "image/png".into(),
        bytes: 48_213,
        storage: StorageRef::SessionFile {
            session_id: "s-files".into(),
            relative_path: "attachments/screenshot.png".into(),
        },
    }
}

fn source(bytes: u64) -> AttachmentRef {
    AttachmentRef {
        kind: AttachmentKind::Code,
        name: "main.rs".into(),
        mime_type: "text/x-rust".into(),
        bytes,
        storage: StorageRef::ExternalFile {
            absolute_path: "/src/main.rs".into(),
        },
    }
}

fn with(attachments: Vec<AttachmentRef>) -> TurnInput {
    TurnInput {
        text: "why does this fail?".into(),
        attachments,
        ..TurnInput::default()
    }
}

/// The turn's user message, the user RuntimeEvent and `run_created`'s data, as the read-only
/// stores (the CLI's, reading the segments) find them.
fn written(f: &Fixture, session: &str) -> (Value, Value, Value) {
    let reader = ReadOnlySessions::new(&*f.storage);
    let messages = reader.read_messages(session, None).expect("messages");
    let user = messages
        .iter()
        .map(|m| m.value().clone())
        .find(|m| m["type"] == "user")
        .expect("the user message");
    let stores = f.manager.stores();
    let run = stores.runs.list_session_runs(session).expect("runs")[0].clone();
    let event = stores
        .runtime_events
        .read_immutable_runtime_events(session, run.run_id())
        .expect("events")
        .into_iter()
        .map(|e| e.value().clone())
        .find(|e| e["id"] == user["id"])
        .expect("the user event");
    let created = stores
        .runs
        .read_events(session, run.run_id())
        .expect("run events")
        .into_iter()
        .map(|(_, e)| e.value().clone())
        .find(|e| e["type"] == "run_created")
        .expect("run_created");
    (user, event, created["data"].clone())
}

#[tokio::test(start_paused = true)]
async fn attachments_are_stated_by_the_user_message_and_event_and_handed_to_the_backend() {
    let f = fixture();
    let s = session(&f);
    let attached = vec![screenshot(), source(1_204)];
    let turn = f
        .manager
        .send_message(&s, with(attached.clone()))
        .await
        .expect("send");
    let outcome = turn.finish().await.expect("ends");
    assert_eq!(outcome.status, "completed");
    // The fake backend echoes the names it was handed (§11).
    assert!(
        outcome
            .summary
            .contains("\nAttachments received: screenshot.png, main.rs\n"),
        "{}",
        outcome.summary
    );
    let (user, event, created) = written(&f, &s);
    let want = json!([
        {"kind": "image", "name": "screenshot.png", "mimeType": "image/png", "bytes": 48213,
         "ref": {"kind": "session_file", "sessionId": "s-files",
                 "relativePath": "attachments/screenshot.png"}},
        {"kind": "code", "name": "main.rs", "mimeType": "text/x-rust", "bytes": 1204,
         "ref": {"kind": "external_file", "absolutePath": "/src/main.rs"}}
    ]);
    assert_eq!(user["attachments"], want, "the user message");
    assert_eq!(event["content"]["attachments"], want, "the user event");
    assert_eq!(created["attachmentCount"], json!(2));
    let back: Vec<AttachmentRef> =
        serde_json::from_value(user["attachments"].clone()).expect("AttachmentRefs");
    assert_eq!(back, attached, "read back as they were given");
}

#[tokio::test(start_paused = true)]
async fn a_turn_without_attachments_states_none() {
    let f = fixture();
    let s = session(&f);
    let turn = f
        .manager
        .send_message(&s, with(Vec::new()))
        .await
        .expect("send");
    let outcome = turn.finish().await.expect("ends");
    assert!(!outcome.summary.contains("Attachments received"));
    let (user, event, created) = written(&f, &s);
    assert!(user.get("attachments").is_none(), "{user}");
    assert!(event["content"].get("attachments").is_none(), "{event}");
    assert_eq!(created["attachmentCount"], json!(0));
}

#[tokio::test(start_paused = true)]
async fn a_size_past_two_to_the_53_minus_one_is_refused_by_field_with_nothing_written() {
    let f = fixture();
    let s = session(&f);
    let root = root_path(&f.storage);
    let before = session_files(&root, &s);
    let too_big = 1u64 << 53;
    match f
        .manager
        .send_message(&s, with(vec![screenshot(), source(too_big)]))
        .await
    {
        Err(makalog::Error::InvalidInput(why)) => {
            assert!(why.starts_with("attachments[1].bytes"), "{why}")
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("accepted"),
    }
    assert_eq!(session_files(&root, &s), before, "nothing written");
    let stores = f.manager.stores();
    assert!(stores.runs.list_session_runs(&s).expect("runs").is_empty());
    // The largest size the ledger states exactly is taken.
    let turn = f
        .manager
        .send_message(&s, with(vec![source(too_big - 1)]))
        .await
        .expect("send");
    assert_eq!(turn.finish().await.expect("ends").status, "completed");
    let (user, _, _) = written(&f, &s);
    assert_eq!(user["attachments"][0]["bytes"], json!(too_big - 1));
}
