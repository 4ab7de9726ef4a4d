//! The runs of a session's view (MAKA-MODEL §7): each run's latest header, kept whole, and
//! where each of its lifecycle events lies, in sequence order (a run's events are numbered from
//! 0 by their order in the log). A pure function of the records, as the rest of the view is.

use super::entries::StoredAt;
use crate::model::{RunEvent, RunHeader};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run event: its type and where its frame lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEventEntry {
    pub event_type: String,
    pub at: StoredAt,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunState {
    /// The canonical JSON of the run's latest header record.
    pub header: String,
    /// Its events in sequence order: the event at index `n` has sequence number `n`.
    pub events: Vec<RunEventEntry>,
    /// True once a run_completed, run_failed or run_cancelled event is stored.
    pub terminal: bool,
    /// The latest header decoded, while its status is not terminal.
    #[serde(skip)]
    pub open_header: OpenHeader,
}

/// An open run's latest header decoded, kept beside its text so the run's terminal commit (and
/// every read of it meanwhile) need not decode it again: set when a header is applied, dropped
/// once one ends the run, so a session keeps whole values only for its open runs. A cache, not
/// state: never written to a sidecar, and equal to any other.
#[derive(Debug, Clone, Default)]
pub struct OpenHeader(Option<RunHeader>);

impl PartialEq for OpenHeader {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for OpenHeader {}

impl RunState {
    /// The latest header decoded, if this state applied it and it does not end the run; `None`
    /// means decode [`RunState::header`].
    pub fn open_header(&self) -> Option<&RunHeader> {
        let decoded = self.open_header.0.as_ref()?;
        debug_assert_eq!(
            decoded.canonical_json(),
            self.header,
            "the cache is the header"
        );
        Some(decoded)
    }
}

/// The runs of a session, by run id.
pub type Runs = BTreeMap<String, RunState>;

/// Checks a run header of session `session_id`: it must name the session.
pub fn check_run(run: &RunHeader, session_id: &str) -> Result<(), String> {
    if run.session_id() != session_id {
        return Err(format!(
            "run {} belongs to session {:?}, not {session_id:?}",
            run.run_id(),
            run.session_id()
        ));
    }
    Ok(())
}

/// Checks a run event (of the session `runs` are) against `runs`: it must belong to a run the
/// session has, and not be a second terminal event of its run.
pub fn check_run_event(event: &RunEvent, runs: &Runs) -> Result<(), String> {
    let Some(run) = runs.get(event.run_id()) else {
        return Err(format!("no run {} for the event", event.run_id()));
    };
    if event.is_terminal() && run.terminal {
        return Err(format!(
            "run {} already has its terminal event; a {} would be a second",
            event.run_id(),
            event.event_type()
        ));
    }
    Ok(())
}

/// Applies a checked run header: a new run, or a new version of one.
pub fn apply_run(runs: &mut Runs, run: &RunHeader) {
    let open = OpenHeader((!run.is_terminal()).then(|| run.clone()));
    match runs.get_mut(run.run_id()) {
        Some(state) => {
            state.header = run.canonical_json().to_owned();
            state.open_header = open;
        }
        None => {
            runs.insert(
                run.run_id().to_owned(),
                RunState {
                    header: run.canonical_json().to_owned(),
                    events: Vec::new(),
                    terminal: false,
                    open_header: open,
                },
            );
        }
    }
}

/// Applies a checked run event stored `at`; returns its sequence number.
pub fn apply_run_event(runs: &mut Runs, event: &RunEvent, at: StoredAt) -> Option<u64> {
    let run = runs.get_mut(event.run_id())?;
    run.terminal |= event.is_terminal();
    run.events.push(RunEventEntry {
        event_type: event.event_type().to_owned(),
        at,
    });
    Some(run.events.len() as u64 - 1)
}
