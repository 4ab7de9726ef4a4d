//! What a recovered root holds, as the runtime's checks read it: every run of every session
//! with its status, terminal facts and its turn's last state, the runs left unfinished, each
//! session's status, and each claimed intent's admission status.

use super::composition;
use makalog::claims::AdmissionStatus;
use makalog::root::{create_or_open_root, Owner};
use makalog::storage::SimStorage;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One run after recovery.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    pub status: String,
    pub failure_class: Option<String>,
    pub turn_id: String,
    /// run_completed / run_failed / run_cancelled events.
    pub terminal_run_events: usize,
    /// Non-partial terminal RuntimeEvents.
    pub terminal_events: usize,
    /// The status of its turn's latest `turn_state` message, if any.
    pub turn_state: Option<String>,
}

/// A recovered root: runs by (session, run), and how many the recovery left unfinished.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuntimeView {
    pub runs: BTreeMap<(String, String), RunView>,
    pub unfinished: usize,
    /// Each session's header status.
    pub session_status: BTreeMap<String, String>,
    /// Each graph intent claim's admission status, by its target session.
    pub claim_status: BTreeMap<String, AdmissionStatus>,
}

fn err(what: &str) -> impl Fn(makalog::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Opens the root (recovering its logs), runs recovery at start, and reads every run back.
pub fn recover(storage: &Arc<SimStorage>) -> Result<RuntimeView, String> {
    create_or_open_root(&**storage).map_err(err("root"))?;
    let owner = Owner::try_acquire(storage.clone())
        .map_err(err("lease"))?
        .ok_or("lease busy")?;
    // A life of its own: named by what the root holds, so a recovery after a crashed one
    // never reuses its ids, and a replay names it the same.
    let held: usize = storage.live_files().values().map(Vec::len).sum();
    let c = composition(&owner, &format!("recovery{held}")).map_err(err("open"))?;
    let report = c.recover().map_err(err("recover"))?;
    if !report.skipped.is_empty() {
        return Err(format!("recovery skipped {:?}", report.skipped));
    }
    let stores = c.stores();
    let mut view = RuntimeView::default();
    for header in stores.sessions.list_sessions().map_err(err("list"))? {
        let s = header.id();
        let status = header.value()["status"].as_str().unwrap_or_default();
        view.session_status.insert(s.to_owned(), status.to_owned());
        view.unfinished += stores
            .runs
            .list_unfinished_runs(s)
            .map_err(err("unfinished"))?
            .len();
        for run in stores.runs.list_session_runs(s).map_err(err("runs"))? {
            let id = run.run_id();
            let events = stores.runs.read_events(s, id).map_err(err("run events"))?;
            let turn_id = run.value()["turnId"].as_str().unwrap_or_default();
            let turn_state = stores
                .sessions
                .read_messages(s, Some(turn_id))
                .map_err(err("messages"))?
                .iter()
                .rev()
                .find(|m| m.message_type() == "turn_state")
                .map(|m| m.value()["status"].as_str().unwrap_or_default().to_owned());
            let runtime = stores
                .runtime_events
                .read_immutable_runtime_events(s, id)
                .map_err(err("runtime events"))?;
            view.runs.insert(
                (s.to_owned(), id.to_owned()),
                RunView {
                    status: run.status().to_owned(),
                    failure_class: run.value()["failureClass"].as_str().map(str::to_owned),
                    turn_id: turn_id.to_owned(),
                    terminal_run_events: events.iter().filter(|(_, e)| e.is_terminal()).count(),
                    terminal_events: runtime
                        .iter()
                        .filter(|e| !e.partial() && e.is_terminal())
                        .count(),
                    turn_state,
                },
            );
        }
    }
    for stored in stores
        .claims
        .list_agent_graph_intent_claims(None)
        .map_err(err("claims"))?
    {
        view.claim_status
            .insert(stored.claim.target_session_id.clone(), stored.status);
    }
    c.close().map_err(err("close"))?;
    Ok(view)
}
