//! Root-turn admissions through the store (MAKA-MODEL §8): admitted once, a repeat answered
//! from the stored record as existing or conflict with nothing written, a new legacy
//! automation refused, and the same answers after reopening and from the segments alone.

mod support;

use makalog::index::rebuild;
use makalog::storage::Storage;
use makalog::store::Admission;
use makalog::Error;
use serde_json::{json, Value};
use support::stores::{self, session_header};
use support::temp_root;

fn admission(turn: &str, text: &str, at: u64) -> Value {
    json!({
        "schemaVersion": 1, "sessionId": "s", "turnId": turn, "runId": format!("run-{turn}"),
        "userMessageId": format!("msg-{turn}"), "execution": {"kind": "external_message"},
        "previousRootTurnId": null, "normalizedInput": {"text": text}, "sourceMessages": [],
        "admittedAt": at
    })
}

#[test]
fn a_turn_is_admitted_once_and_a_repeat_is_answered_from_the_stored_record() {
    let (_t, storage) = temp_root();
    let (owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let first = match s
        .runs
        .admit_root_turn(admission("t1", "go", 10))
        .expect("admit")
    {
        Admission::Admitted(a) => a,
        other => panic!("expected admitted, got {other:?}"),
    };
    let root = storage.describe_root();
    let size = || stores::session_files(&root, "s");
    let before = size();
    match s
        .runs
        .admit_root_turn(admission("t1", "go", 99))
        .expect("repeat")
    {
        Admission::Existing(stored) => {
            assert_eq!(stored, first, "the stored record wins");
            assert_eq!(stored.value()["admittedAt"], json!(10));
        }
        other => panic!("expected existing, got {other:?}"),
    }
    match s
        .runs
        .admit_root_turn(admission("t1", "something else", 11))
        .expect("differs")
    {
        Admission::Conflict(stored) => assert_eq!(stored, first),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(size(), before, "repeats write nothing");
    let mut legacy = admission("t2", "go", 12);
    legacy["execution"] = json!({"kind": "legacy_automation", "automationId": "auto-1"});
    match s.runs.admit_root_turn(legacy) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "execution.kind"),
        other => panic!("a new legacy automation: {other:?}"),
    }
    let mut elsewhere = admission("t3", "go", 13);
    elsewhere["sessionId"] = json!("nobody");
    assert!(matches!(
        s.runs.admit_root_turn(elsewhere),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(size(), before, "refusals write nothing");
    assert!(s
        .runs
        .read_root_turn_admission("s", "t9")
        .expect("read")
        .is_none());
    s.close().expect("close");
    drop(owner);
    let (_owner, s) = stores::open(&storage);
    assert_eq!(
        s.runs.read_root_turn_admission("s", "t1").expect("read"),
        Some(first.clone()),
        "after reopening"
    );
    let rebuilt = rebuild(&*storage, "s").expect("rebuild");
    assert_eq!(rebuilt.session.admissions.len(), 1);
    assert_eq!(rebuilt.session.admissions["t1"], first.canonical_json());
}

/// An admission or start rejection naming another session is refused before it is queued
/// (the session's view would refuse it: written, it would poison the session), as a batch or
/// an append writes it.
#[test]
fn a_turn_record_of_another_session_is_refused_with_nothing_written() {
    use makalog::format::RecordKind;
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.sessions
        .create(session_header("other", 1))
        .expect("session");
    let root = storage.describe_root();
    let before = stores::session_files(&root, "other");
    let admission = makalog::model::RootTurnAdmission::from_value(admission("t1", "go", 10))
        .expect("an admission of s");
    let err = s
        .runtime_events
        .append_record(
            "other",
            RecordKind::Admission,
            admission.canonical_json().as_bytes(),
        )
        .expect_err("another session's");
    assert!(err.to_string().contains("another session"), "{err}");
    let mut batch = makalog::store::SessionBatch::new(&s.runtime_events, "other");
    let err = batch
        .record(RecordKind::Admission, admission.canonical_json().as_bytes())
        .expect_err("another session's");
    assert!(err.to_string().contains("another session"), "{err}");
    assert_eq!(batch.queued(), 0);
    batch.commit().expect("nothing to commit");
    assert_eq!(
        stores::session_files(&root, "other"),
        before,
        "nothing written"
    );
    s.close().expect("close");
}
