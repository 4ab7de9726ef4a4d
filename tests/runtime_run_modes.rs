//! A run's modes come from its session (MAKA-MODEL §12 step 1, "config from the session"): the
//! run's header states the same collaboration and orchestration modes, orchestration source
//! and tool mode as its invocation's opening, the session's own or their defaults.

mod support;

use serde_json::{json, Value};
use support::turns::{fixture, text};

const MODES: [&str; 4] = [
    "collaborationMode",
    "orchestrationMode",
    "orchestrationSource",
    "toolMode",
];

#[tokio::test(start_paused = true)]
async fn a_runs_header_states_its_sessions_modes_as_its_opening_does() {
    let f = fixture();
    let cases = [
        (json!({}), ["agent", "default", "session", "direct"]),
        (
            json!({"collaborationMode": "plan", "orchestrationMode": "swarm"}),
            ["plan", "swarm", "session", "direct"],
        ),
    ];
    for (n, (modes, want)) in cases.into_iter().enumerate() {
        let id = format!("s-{n}");
        let mut input = json!({"id": id, "backend": "fake", "model": "m"});
        for (k, v) in modes.as_object().expect("object") {
            input[k] = v.clone();
        }
        f.manager.create_session(input).expect("session");
        let turn = f.manager.send_message(&id, text("hi")).await.expect("send");
        turn.finish().await.expect("the turn");
        let stores = f.manager.stores();
        let run = stores.runs.list_session_runs(&id).expect("runs")[0].clone();
        let opening: Value = stores
            .runtime_events
            .read_immutable_runtime_events(&id, run.run_id())
            .expect("events")
            .into_iter()
            .find(|e| e.value()["content"]["kind"] == json!("invocation_opened"))
            .expect("the opening")
            .value()["content"]["configuration"]
            .clone();
        for (key, want) in MODES.iter().zip(want) {
            assert_eq!(run.value()[*key], json!(want), "{id}: the run's {key}");
            assert_eq!(opening[*key], json!(want), "{id}: the opening's {key}");
        }
    }
}
