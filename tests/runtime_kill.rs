//! A real child process streaming turns in four sessions through the runtime, killed with
//! SIGKILL: reopened, recovery ends every interrupted run as failed/app_restarted (or, one
//! killed inside its terminal commit, as its stored terminal event says); every turn the child
//! saw finish is still completed; every run the child saw start is there; no run is left
//! without its terminal commit; a second recovery writes nothing; and the root verifies clean.

mod support;

use makalog::root::try_acquire_owner;
use makalog::runtime::{BackendRegistry, ExecutionComposition, Sources, TurnInput, APP_RESTARTED};
use serde_json::json;
use std::io::Write;
use std::path::Path;

const CHILD_ENV: &str = "MAKALOG_RUNTIME_KILL_ROOT";
const SESSIONS: usize = 4;

#[derive(Debug, Clone, PartialEq)]
enum Ack {
    Started(String, String),
    Completed(String, String),
}

#[test]
fn turns_interrupted_by_sigkill_are_recovered_and_every_acknowledged_fact_survives() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let acks = support::child::acks_until_killed(
        "streaming_child_process",
        CHILD_ENV,
        &root,
        40,
        |line| {
            let mut words = line.split(' ');
            let (kind, session, run) = (words.next()?, words.next()?, words.next()?);
            match kind {
                "started" => Some(Ack::Started(session.into(), run.into())),
                "completed" => Some(Ack::Completed(session.into(), run.into())),
                _ => None,
            }
        },
    );
    let owner = try_acquire_owner(&root)
        .expect("reopen")
        .expect("the dead child's lock is gone");
    let c = ExecutionComposition::open(
        &owner,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("composition");
    let report = c.recover().expect("recover");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(
        !report.scanned_all,
        "the open-runs file named the sessions to visit"
    );
    assert!(
        report.recovered.len() <= SESSIONS,
        "at most one turn in flight a session: {report:?}"
    );
    let stores = c.stores();
    for r in &report.recovered {
        let run = stores.runs.read_run(&r.session_id, &r.run_id).expect("run");
        if r.recovery_reason == "runtime_event_terminal_fact" {
            // Killed inside its terminal commit, after the terminal event was written (a read
            // of the session may lead a sync between two of the commit's records): the commit
            // is finished as that event says (§12).
            let events = stores
                .runtime_events
                .read_immutable_runtime_events(&r.session_id, &r.run_id)
                .expect("events");
            let terminal = events.iter().find(|e| e.is_terminal()).expect("terminal");
            let status = match terminal.status() {
                Some("aborted" | "cancelled") => "cancelled",
                other => other.expect("a terminal status"),
            };
            assert_eq!(run.status(), status, "{r:?}");
        } else {
            assert_eq!(
                (run.status(), run.value()["failureClass"].clone()),
                ("failed", json!(APP_RESTARTED)),
                "{r:?}"
            );
        }
    }
    for ack in &acks {
        match ack {
            Ack::Started(s, run) => {
                stores
                    .runs
                    .read_run(s, run)
                    .expect("a run the child saw start is there");
            }
            Ack::Completed(s, run) => {
                assert_eq!(
                    stores.runs.read_run(s, run).expect("run").status(),
                    "completed",
                    "{s}/{run}"
                );
            }
        }
    }
    for n in 0..SESSIONS {
        let s = format!("streaming-{n}");
        assert!(
            stores
                .runs
                .list_unfinished_runs(&s)
                .expect("runs")
                .is_empty(),
            "{s}"
        );
        for run in stores.runs.list_session_runs(&s).expect("runs") {
            let ended = stores.runs.read_events(&s, run.run_id()).expect("events");
            assert_eq!(
                ended.iter().filter(|(_, e)| e.is_terminal()).count(),
                1,
                "{s}/{}",
                run.run_id()
            );
        }
    }
    let files = || support::snapshot(&root.join("sessions"));
    let before = files();
    let again = c.recover().expect("recover again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
    assert_eq!(files(), before, "the second recovery wrote nothing");
    c.close().expect("close");
    drop(owner);
    support::child::assert_verifies_clean(&root);
}

/// Run by the test above in a child process: streams turns in four sessions until killed,
/// printing each run once it has started (its opening writes durable) and once it completed.
#[test]
#[ignore = "the child half of a two-process test; its parent runs it"]
fn streaming_child_process() {
    let root = std::env::var_os(CHILD_ENV).expect("run by its parent test with the root set");
    let owner = try_acquire_owner(Path::new(&root))
        .expect("acquire")
        .expect("free");
    let c = ExecutionComposition::open(
        &owner,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("composition");
    // As a host starts: recovery first, which creates the open-runs file turns are tracked in.
    c.recover().expect("recover at start");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let manager = c.manager().clone();
        let mut tasks = Vec::new();
        for n in 0..SESSIONS {
            let manager = manager.clone();
            let s = format!("streaming-{n}");
            manager
                .create_session(
                    json!({"id": s, "backend": "fake", "cwd": "/work", "model": "fake-model"}),
                )
                .expect("session");
            tasks.push(tokio::spawn(async move {
                for i in 0u64.. {
                    // The turn's own run id: runs begun in one ms list in either order.
                    let run_id = format!("{s}-run-{i}");
                    let input = TurnInput {
                        text: format!("turn {i} of {s}"),
                        run_id: Some(run_id.clone()),
                        ..TurnInput::default()
                    };
                    let turn = manager.send_message(&s, input).await.expect("send");
                    say(&format!("started {s} {run_id}"));
                    let outcome = turn.finish().await.expect("turn");
                    say(&format!("completed {s} {}", outcome.run_id));
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
    });
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("print");
    out.flush().expect("flush");
}
