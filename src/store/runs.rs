//! The agent-run store (MAKA-MODEL §7): run headers and their lifecycle events, written to the
//! run's session ledger through the runtime-event store's open sessions and answered from the
//! session's view (each run's latest header whole, and where its events lie).
//!
//! The terminal commit of §7 is in `terminal.rs`.

use super::runtime_events::{RuntimeEventStore, Seen};
use crate::error::{Error, Result};
use crate::index::{SessionRecord, SessionState, StoredAt};
use crate::model::{RunEvent, RunHeader};
use crate::segment::FramesAt;
use serde_json::Value;
use std::sync::Arc;

/// Runs and their events over one root.
pub struct AgentRunStore {
    events: Arc<RuntimeEventStore>,
}

fn not_found(session_id: &str, run_id: &str) -> Error {
    Error::NotFound {
        what: format!("run {run_id} of session {session_id}"),
    }
}

impl AgentRunStore {
    /// A run store writing through `events`.
    pub fn new(events: Arc<RuntimeEventStore>) -> AgentRunStore {
        AgentRunStore { events }
    }

    pub(super) fn events(&self) -> &RuntimeEventStore {
        &self.events
    }

    /// Creates a run in an existing session; a second run with the same id is refused.
    pub fn create_run(&self, header: Value) -> Result<RunHeader> {
        let run = RunHeader::from_value(header)?;
        let session_id = run.session_id().to_owned();
        if !self
            .events
            .with_session_state(&session_id, |s| s.header.is_some())?
        {
            return Err(Error::NotFound {
                what: format!("session {session_id} for run {}", run.run_id()),
            });
        }
        let run_id = run.run_id().to_owned();
        self.events.append_session_record(
            &session_id,
            &SessionRecord::Run(run.clone()),
            &run_is_new(&session_id, &run_id),
        )?;
        Ok(run)
    }

    /// Refuses a run id the session already has, as [`AgentRunStore::create_run`] would: for a
    /// caller that must know before it writes what the run would follow.
    pub(crate) fn check_run_is_new(&self, session_id: &str, run_id: &str) -> Result<()> {
        self.events
            .with_session_state(session_id, run_is_new(session_id, run_id))?
    }

    /// Changes a run as `update` says: only the members and status transitions §7 allows (see
    /// [`RunHeader::updated`]). Concurrent updates of one run are serialized: one made from a
    /// header that changed meanwhile is refused, with nothing written.
    pub fn update_run(&self, session_id: &str, run_id: &str, update: &Value) -> Result<RunHeader> {
        let current = self.read_run(session_id, run_id)?;
        let next = current.updated(update)?;
        let base = current.canonical_json().to_owned();
        self.events.append_session_record(
            session_id,
            &SessionRecord::Run(next.clone()),
            &|state| match state.runs.get(run_id) {
                Some(run) if run.header == base => Ok(()),
                _ => Err(Error::InvalidInput(format!(
                    "run {run_id} changed while it was being updated; read it again"
                ))),
            },
        )?;
        Ok(next)
    }

    /// The run's latest header; [`Error::NotFound`] when the session has no such run.
    pub fn read_run(&self, session_id: &str, run_id: &str) -> Result<RunHeader> {
        self.read_run_ended(session_id, run_id, Seen::Durable)
            .map(|(run, _)| run)
    }

    /// The run's header, and whether one of its run events is terminal (run_completed,
    /// run_failed or run_cancelled): both from the session's view, with no event read back,
    /// taken as `seen` says.
    pub(super) fn read_run_ended(
        &self,
        session_id: &str,
        run_id: &str,
        seen: Seen,
    ) -> Result<(RunHeader, bool)> {
        // An open run's header is kept decoded; another is decoded outside the view's lock.
        let (header, ended) = self
            .events
            .session_state(session_id, seen, |s| {
                s.runs.get(run_id).map(|r| {
                    let header = r.open_header().cloned().ok_or_else(|| r.header.clone());
                    (header, r.terminal)
                })
            })?
            .ok_or_else(|| not_found(session_id, run_id))?;
        let header = match header {
            Ok(decoded) => decoded,
            Err(text) => RunHeader::decode(&text)?,
        };
        Ok((header, ended))
    }

    /// The types of a run's events in sequence order, from the session's view, with no event
    /// read back: what recovery's rule table asks of them.
    pub(crate) fn run_event_types(&self, session_id: &str, run_id: &str) -> Result<Vec<String>> {
        self.events
            .with_session_state(session_id, |s| {
                s.runs
                    .get(run_id)
                    .map(|r| r.events.iter().map(|e| e.event_type.clone()).collect())
            })?
            .ok_or_else(|| not_found(session_id, run_id))
    }

    /// The session's runs, by `createdAt`, then run id.
    pub fn list_session_runs(&self, session_id: &str) -> Result<Vec<RunHeader>> {
        self.events.with_session_state(session_id, runs_of)?
    }

    /// The session's runs that have no terminal run event yet (run_completed, run_failed or
    /// run_cancelled): what recovery at start must end. Read from the session's view, like
    /// every answer here; for a session not open, from its files, with nothing written.
    pub fn list_unfinished_runs(&self, session_id: &str) -> Result<Vec<RunHeader>> {
        let headers: Vec<String> = self.events.with_session_state(session_id, |s| {
            s.runs
                .values()
                .filter(|r| !r.terminal)
                .map(|r| r.header.clone())
                .collect()
        })?;
        headers.iter().map(|h| RunHeader::decode(h)).collect()
    }

    /// Appends a lifecycle event to its run (which must exist), durably; returns its sequence
    /// number in the run, from 0. A run gets one terminal event (run_completed, run_failed or
    /// run_cancelled): a second is refused.
    pub fn append_event(&self, event: Value) -> Result<u64> {
        let event = RunEvent::from_value(event)?;
        let session_id = event.value()["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let known = self
            .events
            .with_session_state(&session_id, |s| s.runs.contains_key(event.run_id()))?;
        if !known {
            return Err(not_found(&session_id, event.run_id()));
        }
        // The sequence number is the run's event count, read under the session's lock just
        // before the event is queued behind them.
        let seq = std::cell::Cell::new(0u64);
        self.events.append_session_record(
            &session_id,
            &SessionRecord::RunEvent(event.clone()),
            &|state| {
                let run = state
                    .runs
                    .get(event.run_id())
                    .ok_or_else(|| not_found(&session_id, event.run_id()))?;
                seq.set(run.events.len() as u64);
                Ok(())
            },
        )?;
        Ok(seq.get())
    }

    /// The run's events in sequence order, each with its sequence number.
    pub fn read_events(&self, session_id: &str, run_id: &str) -> Result<Vec<(u64, RunEvent)>> {
        let events = self
            .events
            .with_session_state(session_id, |s| s.runs.get(run_id).map(|r| r.events.clone()))?
            .ok_or_else(|| not_found(session_id, run_id))?;
        run_events_of(self.events.storage(), session_id, &events)
    }
}

/// The runs `state` holds, by `createdAt`, then run id.
pub(super) fn runs_of(state: &SessionState) -> Result<Vec<RunHeader>> {
    let mut runs = state
        .runs
        .values()
        .map(|r| RunHeader::decode(&r.header))
        .collect::<Result<Vec<_>>>()?;
    let created = |r: &RunHeader| r.value()["createdAt"].as_f64().unwrap_or(0.0);
    runs.sort_by(|a, b| {
        created(a)
            .total_cmp(&created(b))
            .then_with(|| a.run_id().cmp(b.run_id()))
    });
    Ok(runs)
}

/// A run's `events`, read back from the session's segments, each with its sequence number.
pub(super) fn run_events_of(
    storage: &dyn crate::storage::Storage,
    session_id: &str,
    events: &[crate::index::RunEventEntry],
) -> Result<Vec<(u64, RunEvent)>> {
    run_events_at(&mut FramesAt::new(storage, session_id), session_id, events)
}

/// A run and its events, each with its sequence number.
pub type RunWithEvents = (RunHeader, Vec<(u64, RunEvent)>);

/// Every run `state` holds, by `createdAt`, then run id, each with its events: one reader of
/// the segments for all of them.
pub(super) fn runs_with_events_of(
    storage: &dyn crate::storage::Storage,
    session_id: &str,
    state: &SessionState,
) -> Result<Vec<RunWithEvents>> {
    let mut frames = FramesAt::new(storage, session_id);
    runs_of(state)?
        .into_iter()
        .map(|run| {
            let events = state.runs.get(run.run_id()).map_or(Ok(Vec::new()), |r| {
                run_events_at(&mut frames, session_id, &r.events)
            })?;
            Ok((run, events))
        })
        .collect()
}

fn run_events_at(
    frames: &mut FramesAt<'_>,
    session_id: &str,
    events: &[crate::index::RunEventEntry],
) -> Result<Vec<(u64, RunEvent)>> {
    let at: Vec<StoredAt> = events.iter().map(|e| e.at).collect();
    let decoded =
        super::stored::decoded_at(frames, session_id, &at, "run event", RunEvent::decode)?;
    Ok((0u64..).zip(decoded).collect())
}

/// The precondition of a new run: the session has no run with its id yet.
pub(crate) fn run_is_new<'a>(
    session_id: &'a str,
    run_id: &'a str,
) -> impl Fn(&crate::index::SessionState) -> Result<()> + 'a {
    move |state| match state.runs.contains_key(run_id) {
        true => Err(Error::InvalidRecord {
            record: "run header",
            field: "runId".into(),
            why: format!("session {session_id} already has run {run_id}"),
        }),
        false => Ok(()),
    }
}
