//! `makalog timeline ROOT --session ID [--json]`: a session's turns in order, each with its
//! runs (status, failure class, start and duration), its invocations (opened, how they ended)
//! and the turn's last state; read from the root's files, nothing written.

use crate::sessions::session_root;
use crate::time::iso8601;
use makalog::store::{ReadOnlySessions, Sidecars};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, session: &str, as_json: bool, sidecars: Sidecars) -> ExitCode {
    let storage = match session_root(root, session, sidecars) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match timeline(&storage, session, sidecars) {
        Ok(turns) => {
            print(&turns, as_json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            tell!("makalog: {e}");
            ExitCode::from(1)
        }
    }
}

/// The session's turns in the order they started (their first record's time), as JSON.
fn timeline(
    storage: &makalog::storage::RealStorage,
    session: &str,
    sidecars: Sidecars,
) -> makalog::Result<Vec<Value>> {
    let sessions = ReadOnlySessions::with(storage, sidecars);
    let mut turns = Turns::default();
    for m in sessions.read_messages(session, None)? {
        let (Some(id), at) = (m.turn_id(), m.value()["ts"].as_f64().unwrap_or(0.0)) else {
            continue;
        };
        let t = turns.get(id, at);
        if m.message_type() == "turn_state" {
            t["state"] = m.value().clone();
        }
    }
    for run in sessions.list_session_runs(session)? {
        let v = run.value();
        let at = v["createdAt"].as_f64().unwrap_or(0.0);
        let t = turns.get(v["turnId"].as_str().unwrap_or_default(), at);
        let mut r =
            json!({"runId": run.run_id(), "status": run.status(), "createdAt": v["createdAt"]});
        for key in ["completedAt", "failureClass", "abortSource", "agentName"] {
            if let Some(x) = v.get(key) {
                r[key] = x.clone();
            }
        }
        push(t, "runs", r);
    }
    let view = crate::invocations::view_of(storage, session, sidecars)?;
    for inv in makalog::index::invocations_from_log(storage, &view)? {
        let t = turns.get(&inv.turn_id, inv.opened_at);
        let mut i = json!({"invocationId": inv.invocation_id, "openedAt": inv.opened_at,
                           "outcome": inv.outcome()});
        if let Some(end) = &inv.terminal_event {
            i["endedAt"] = end["ts"].clone();
            i["stopReason"] = end["actions"]["stateDelta"]["stopReason"].clone();
        }
        push(t, "invocations", i);
    }
    Ok(turns.in_order())
}

/// The turns met so far, each started at its earliest record.
#[derive(Default)]
struct Turns {
    by_id: BTreeMap<String, Value>,
}

impl Turns {
    /// Turn `id`, which has a record at `at`.
    fn get(&mut self, id: &str, at: f64) -> &mut Value {
        let t = self.by_id.entry(id.to_owned()).or_insert_with(
            || json!({"turnId": id, "startedAt": at, "runs": [], "invocations": [], "state": null}),
        );
        if t["startedAt"].as_f64().is_some_and(|s| at < s) {
            t["startedAt"] = json!(at);
        }
        t
    }

    /// Every turn, by when it started, then id.
    fn in_order(self) -> Vec<Value> {
        let mut turns: Vec<Value> = self.by_id.into_values().collect();
        let key = |t: &Value| t["startedAt"].as_f64().unwrap_or(0.0);
        turns.sort_by(|a, b| {
            key(a)
                .total_cmp(&key(b))
                .then_with(|| a["turnId"].as_str().cmp(&b["turnId"].as_str()))
        });
        turns
    }
}

fn push(turn: &mut Value, key: &str, item: Value) {
    if let Some(list) = turn[key].as_array_mut() {
        list.push(item);
    }
}

fn duration(from: &Value, to: &Value) -> String {
    match (from.as_f64(), to.as_f64()) {
        (Some(a), Some(b)) if b >= a => crate::time::duration(b - a),
        _ => "-".to_owned(),
    }
}

fn print(turns: &[Value], as_json: bool) {
    for t in turns {
        if as_json {
            say!("{}", makalog::event::canonical_string(t));
            continue;
        }
        let state = t["state"]["status"].as_str().unwrap_or("no turn state");
        let at = t["startedAt"].as_f64().map(iso8601).unwrap_or_default();
        say!(
            "turn {} {at} {state}",
            t["turnId"].as_str().unwrap_or_default()
        );
        for r in t["runs"].as_array().into_iter().flatten() {
            let class = r["failureClass"]
                .as_str()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            say!(
                "  run {} {}{class}, started {}, took {}",
                r["runId"].as_str().unwrap_or_default(),
                r["status"].as_str().unwrap_or_default(),
                r["createdAt"].as_f64().map(iso8601).unwrap_or_default(),
                duration(&r["createdAt"], &r["completedAt"])
            );
        }
        for i in t["invocations"].as_array().into_iter().flatten() {
            say!(
                "  invocation {} opened {}, {} after {}",
                i["invocationId"].as_str().unwrap_or_default(),
                i["openedAt"].as_f64().map(iso8601).unwrap_or_default(),
                i["outcome"].as_str().unwrap_or("still open"),
                duration(&i["openedAt"], &i["endedAt"])
            );
        }
    }
    if !as_json {
        say!("{} turns", turns.len());
    }
}
