//! A turn whose input makes one of its opening's records too big for the session's log (a
//! text, an attachment's name, an agent's name, a lineage id, each past the 4 MiB bound) is
//! refused before anything is written: no admission, no run, no half-opened turn for a restart
//! to end, and the session takes its next turn.

mod support;

use makalog::runtime::{AttachmentKind, AttachmentRef, StorageRef, TurnInput, TurnLineage};
use serde_json::json;
use support::claims::root_path;
use support::stores::session_files;
use support::turns::{fixture, open_runs, session};

/// Past the default bound of a record's payload (4 MiB).
fn huge() -> String {
    "x".repeat(5 << 20)
}

/// An attachment whose name alone is past the bound.
fn big_attachment() -> Vec<AttachmentRef> {
    vec![AttachmentRef {
        kind: AttachmentKind::Other,
        name: huge(),
        mime_type: "text/plain".into(),
        bytes: 1,
        storage: StorageRef::WorkspaceFile {
            relative_path: "notes.txt".into(),
        },
    }]
}

fn oversized_inputs() -> Vec<(&'static str, TurnInput)> {
    let base = || TurnInput {
        text: "look at this".into(),
        ..TurnInput::default()
    };
    vec![
        (
            "text",
            TurnInput {
                text: huge(),
                ..base()
            },
        ),
        (
            "attachment name",
            TurnInput {
                attachments: big_attachment(),
                ..base()
            },
        ),
        (
            "agent name",
            TurnInput {
                agent_id: Some("agent".into()),
                agent_name: Some(huge()),
                ..base()
            },
        ),
        (
            "lineage id",
            TurnInput {
                lineage: TurnLineage {
                    parent_turn_id: Some(huge()),
                    ..TurnLineage::default()
                },
                ..base()
            },
        ),
        (
            "hosted attachment name",
            TurnInput {
                execution: Some(json!({"kind": "external_message"})),
                attachments: big_attachment(),
                ..base()
            },
        ),
        (
            "hosted input digest",
            TurnInput {
                execution: Some(json!({"kind": "external_message", "inputDigest": huge()})),
                ..base()
            },
        ),
        (
            "hosted text",
            TurnInput {
                text: huge(),
                execution: Some(json!({"kind": "external_message"})),
                ..base()
            },
        ),
    ]
}

#[tokio::test(start_paused = true)]
async fn an_input_past_the_record_bound_is_refused_with_nothing_written() {
    let f = fixture();
    let s = session(&f);
    let root = root_path(&f.storage);
    let (before, marked) = (session_files(&root, &s), open_runs(&root));
    for (what, input) in oversized_inputs() {
        match f.manager.send_message(&s, input).await {
            Err(makalog::Error::InvalidInput(why)) => {
                assert!(why.contains("exceeds the bound"), "{what}: {why}")
            }
            Err(e) => panic!("{what}: another error: {e}"),
            Ok(_) => panic!("{what}: accepted"),
        }
        assert_eq!(session_files(&root, &s), before, "{what}: nothing written");
        assert_eq!(open_runs(&root), marked, "{what}: nothing marked");
        let stores = f.manager.stores();
        assert!(
            stores.runs.list_session_runs(&s).expect("runs").is_empty(),
            "{what}: no run"
        );
    }
    let next = f
        .manager
        .send_message(
            &s,
            TurnInput {
                text: "a turn that fits".into(),
                ..TurnInput::default()
            },
        )
        .await
        .expect("the session takes its next turn");
    assert_eq!(next.finish().await.expect("ends").status, "completed");
}
