//! The agent-run store (MAKA-MODEL §7): a duplicate run is an error, updates change only what
//! §7 allows, a missing run is NotFound, runs listed by createdAt then id, events numbered from
//! 0 with unknown types readable and one terminal event a run; every answer the same after
//! reopening and as the segments say.

mod support;

use makalog::index::rebuild;
use makalog::storage::Storage;
use makalog::store::ExecutionStores;
use makalog::Error;
use serde_json::{json, Value};
use support::stores::{self, session_header};
use support::temp_root;

fn run(id: &str, created: u64) -> Value {
    json!({
        "runId": id, "sessionId": "s", "turnId": format!("turn-{id}"), "llmConnectionSlug": "fake",
        "modelId": "fake-model", "cwd": "/work", "status": "created", "backendKind": "fake",
        "permissionMode": "ask", "createdAt": created, "updatedAt": created
    })
}

fn event(run: &str, kind: &str, n: u64) -> Value {
    json!({"type": kind, "id": format!("{run}-e{n}"), "runId": run, "sessionId": "s",
           "turnId": format!("turn-{run}"), "ts": n})
}

#[test]
fn runs_and_their_events_read_back_the_same_after_reopening() {
    let (_t, storage) = temp_root();
    let (owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("run-b", 5)).expect("b");
    s.runs.create_run(run("run-a", 5)).expect("a");
    s.runs.create_run(run("run-0", 9)).expect("0");
    let seqs: Vec<u64> = [
        "run_started",
        "tool_started",
        "a_type_from_the_future",
        "run_completed",
    ]
    .iter()
    .enumerate()
    .map(|(n, kind)| {
        s.runs
            .append_event(event("run-a", kind, n as u64))
            .expect(kind)
    })
    .collect();
    assert_eq!(seqs, [0, 1, 2, 3], "numbered from 0");
    let done = s
        .runs
        .update_run("s", "run-a", &json!({"status": "running", "updatedAt": 6}))
        .and_then(|_| {
            s.runs.update_run(
                "s",
                "run-a",
                &json!({"status": "completed", "updatedAt": 7, "completedAt": 7}),
            )
        })
        .expect("created -> running -> completed");
    assert!(done.is_terminal());
    let answers = |s: &ExecutionStores| {
        let listed: Vec<String> = s
            .runs
            .list_session_runs("s")
            .expect("list")
            .iter()
            .map(|r| r.run_id().to_owned())
            .collect();
        let a = s.runs.read_run("s", "run-a").expect("a");
        let events: Vec<(u64, String)> = s
            .runs
            .read_events("s", "run-a")
            .expect("events")
            .into_iter()
            .map(|(n, e)| (n, e.event_type().to_owned()))
            .collect();
        (listed, a, events)
    };
    let live = answers(&s);
    assert_eq!(live.0, ["run-a", "run-b", "run-0"], "createdAt, then runId");
    assert_eq!(live.1.status(), "completed");
    assert_eq!(live.2.len(), 4);
    assert_eq!(
        live.2[2],
        (2, "a_type_from_the_future".to_owned()),
        "unknown types stay readable"
    );
    s.close().expect("close");
    drop(owner);
    // Read-only, every run's events at once answer what one run at a time does.
    let reads = makalog::store::ReadOnlySessions::new(&*storage);
    let all = reads.list_session_runs_with_events("s").expect("all");
    let ids: Vec<&str> = all.iter().map(|(r, _)| r.run_id()).collect();
    assert_eq!(ids, live.0, "the same runs in the same order");
    for (run, events) in &all {
        let one = reads.read_run_events("s", run.run_id()).expect("one");
        assert_eq!(events, &one, "{}", run.run_id());
    }
    assert_eq!(all[0].1.len(), 4, "run-a's events");
    // Everything at once from one view answers what each question answers alone.
    let view = rebuild(&*storage, "s").expect("view");
    let contents = reads.contents("s", &view.session).expect("contents");
    let header = contents.header.expect("header");
    assert_eq!(header, reads.read_session("s").expect("header"));
    assert!(header.is_some());
    assert_eq!(contents.runs.expect("runs"), all);
    assert_eq!(
        contents.messages.expect("messages"),
        reads.read_messages("s", None).expect("messages")
    );
    let (_owner, s) = stores::open(&storage);
    assert_eq!(answers(&s), live, "after reopening");
    let rebuilt = rebuild(&*storage, "s").expect("rebuild");
    assert_eq!(rebuilt.session.runs.len(), 3);
    assert_eq!(
        rebuilt.session.runs["run-a"].header,
        live.1.canonical_json()
    );
    assert!(rebuilt.session.runs["run-a"].terminal);
}

#[test]
fn each_run_rule_refuses_with_nothing_written() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    assert!(
        matches!(s.runs.create_run(run("r", 1)), Err(Error::NotFound { .. })),
        "no session yet"
    );
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("r", 1)).expect("run");
    let root = storage.describe_root();
    let size = || stores::session_files(&root, "s");
    let before = size();
    match s.runs.create_run(run("r", 2)) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "runId"),
        other => panic!("a duplicate run: {other:?}"),
    }
    assert!(matches!(
        s.runs.read_run("s", "nope"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        s.runs.append_event(event("nope", "run_started", 0)),
        Err(Error::NotFound { .. })
    ));
    match s.runs.update_run("s", "r", &json!({"modelId": "other"})) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "modelId"),
        other => panic!("an update of an immutable member: {other:?}"),
    }
    let mut bad = event("r", "run_started", 0);
    bad["ts"] = json!("soon");
    match s.runs.append_event(bad) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "ts"),
        other => panic!("a bad event: {other:?}"),
    }
    assert_eq!(size(), before, "nothing written by a refusal");
    s.runs
        .append_event(event("r", "run_failed", 1))
        .expect("the terminal event");
    let after = size();
    assert!(matches!(
        s.runs.append_event(event("r", "run_cancelled", 2)),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(size(), after, "a second terminal event is refused");
    s.runs
        .update_run(
            "s",
            "r",
            &json!({"status": "failed", "failureClass": "provider_error"}),
        )
        .expect("created -> failed");
    match s.runs.update_run("s", "r", &json!({"status": "running"})) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "status"),
        other => panic!("out of an ended run: {other:?}"),
    }
}

/// A record is written only if its canonical text reads back to it (MAKA-MODEL §2, as for
/// runtime events): free-form data nested deeper than the parser reads, or an integer
/// JavaScript cannot hold, is refused with nothing written, so a rebuild never meets a record
/// it cannot read. Within the bounds it is written and rebuilt the same.
#[test]
fn a_record_whose_text_would_not_read_back_is_refused_with_nothing_written() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("r", 1)).expect("run");
    let root = storage.describe_root();
    let size = || stores::session_files(&root, "s");
    let before = size();
    // The event is level 1 and `data` level 2 of the parser's 256.
    let nested = |arrays: usize| (0..arrays).fold(json!([]), |inner, _| json!([inner]));
    let mut deep = event("r", "tool_started", 1);
    deep["data"] = json!({"x": nested(254)});
    let mut huge = event("r", "tool_started", 2);
    huge["data"] = json!({"n": 9_007_199_254_740_993u64});
    for bad in [deep, huge] {
        match s.runs.append_event(bad) {
            Err(Error::InvalidRecord { field, why, .. }) => {
                assert_eq!(field, "<record>", "{why}")
            }
            other => panic!("a record that would not read back: {other:?}"),
        }
    }
    assert_eq!(size(), before, "nothing written");
    let mut deepest = event("r", "tool_started", 3);
    deepest["data"] = json!({"x": nested(253)});
    deepest["data"]["n"] = json!(9_007_199_254_740_991u64);
    s.runs.append_event(deepest).expect("within the bounds");
    let view = rebuild(&*storage, "s").expect("rebuild");
    assert_eq!(view.session.runs["r"].events.len(), 1);
}
