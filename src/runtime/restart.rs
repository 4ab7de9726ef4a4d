//! Recovery at start (MAKA-MODEL §12): every run a restart left without its terminal commit,
//! in every idle session that is not archived, is ended as `recover_run` says (a run a
//! continuation owns is left to it), and a turn whose end a crash cut short after its run's
//! terminal event gets the rest of its end. The
//! sessions visited are those the open-runs file names (state that stays as small as the runs
//! in flight), or every session when the file is missing or damaged. Sessions are read
//! through their views (a session not open is read from its files, nothing written); a
//! session that cannot be read is reported and skipped, never guessed at.

use super::manager::lock;
use super::manager::SessionManager;
use super::open_runs::{read_open_runs, Listing};
use super::recover::{recover_run, recoveries_cut_short, RecoveredRun};
use crate::error::Result;
use crate::model::{RunHeader, SessionHeader};
use serde_json::json;
use std::collections::BTreeSet;

/// What recovery at start did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RecoveryReport {
    /// Sessions looked at.
    pub sessions: usize,
    /// True when every session was looked at (the open-runs file was missing or damaged).
    pub scanned_all: bool,
    /// The runs ended, in session order.
    pub recovered: Vec<RecoveredRun>,
    /// Sessions or runs that could not be read or ended, with why (the open-runs file then
    /// keeps naming what it named); also sessions passed because a turn is in flight in them,
    /// the interrupted runs of archived sessions, left as they are until the session is
    /// unarchived, and runs a continuation owns (the file goes on naming both, so a later start
    /// finds them).
    pub skipped: Vec<(String, String)>,
}

/// Why a session with a turn in flight was passed.
const BUSY: &str = "a turn is in flight: its session is left for a later recovery";
/// Why an archived session's interrupted run was left open.
const ARCHIVED: &str = "the session is archived: its interrupted run is left until it is not";
/// Why a run that continues another was left open (§12: continuation-owned runs are skipped).
const CONTINUATION: &str = "a continuation owns the run (its continuationSource): left to it";

/// How many sessions recovery ends at once: each mostly waits for its one sync, and the disk
/// serves concurrent syncs together.
const RECOVERY_WORKERS: usize = 16;

/// What recovery found in one session.
enum Visit {
    /// Nothing to end: absent, idle with no run interrupted, or archived with none.
    Passed,
    /// A turn is in flight in it: left alone.
    Busy(String),
    /// Archived, with these interrupted runs: left as they are, and kept in the file.
    Archived(String, Vec<String>),
    /// Looked at: the runs it ended, those it could not, and those a continuation owns (left
    /// as they are, and kept in the file).
    Looked {
        id: String,
        recovered: Vec<RecoveredRun>,
        skipped: Vec<(String, String)>,
        owned: Vec<String>,
    },
    /// The session could not be read.
    Unreadable(String, String),
}

impl SessionManager {
    /// Ends every interrupted run of the root's idle, non-archived sessions: those the
    /// open-runs file names, or every session when it is missing or damaged. Run again, it
    /// finds nothing more to do.
    pub fn recover_interrupted_sessions(&self) -> Result<RecoveryReport> {
        let stores = self.stores();
        let storage = stores.runtime_events.storage();
        let listing = read_open_runs(storage)?;
        let mut report = RecoveryReport::default();
        // Each session to visit, with its header when the listing already read it.
        let sessions: Vec<(String, Option<SessionHeader>)> = match &listing {
            Listing::Open(runs) => {
                let named: BTreeSet<&String> = runs.iter().map(|(s, _)| s).collect();
                named.into_iter().map(|s| (s.clone(), None)).collect()
            }
            Listing::Missing | Listing::Damaged { .. } => {
                report.scanned_all = true;
                match stores.sessions.list_sessions() {
                    Ok(headers) => headers
                        .into_iter()
                        .map(|h| (h.id().to_owned(), Some(h)))
                        .collect(),
                    // A session that cannot be read fails the listing: each header is then
                    // read on its own, as the listing reads it (nothing opened for writing),
                    // and one that cannot be is visited by its id, so it is reported and
                    // skipped as a named one is.
                    Err(_) => stores
                        .sessions
                        .session_ids()?
                        .into_iter()
                        .filter_map(|id| match stores.sessions.read_session(&id) {
                            Ok(Some(h)) => Some((id, Some(h))),
                            Ok(None) => None,
                            Err(_) => Some((id, None)),
                        })
                        .collect(),
                }
            }
        };
        // Sessions are independent: each is ended on its own, in its own order, and many at
        // once, so their syncs overlap. The report keeps the sessions' order. On a simulated
        // disk one at a time, so a crash scenario's seed replays the same writes and ids.
        let workers = crate::parallel::threads_for(storage, RECOVERY_WORKERS);
        let visits = crate::parallel::map_on(workers, &sessions, |(id, listed)| {
            let visit = self.visit(id, listed.as_ref());
            // A session only looked at keeps no turn lock in memory.
            match self.forget_turn_lock(id) {
                Ok(()) => visit,
                Err(e) => Visit::Unreadable(id.clone(), e.to_string()),
            }
        });
        // `held`: a session the file must go on naming as it does (one that could not be read
        // or ended); `kept`: runs left open on purpose, named again once it is emptied.
        let (mut held, mut kept) = (false, Vec::new());
        for visit in visits {
            match visit {
                Visit::Passed => {}
                Visit::Busy(id) => {
                    report.sessions += 1;
                    // Not looked at: an earlier life's run may be open in it, which only the
                    // file (as it is) names for a later start.
                    held = true;
                    report.skipped.push((id, BUSY.to_owned()));
                }
                Visit::Archived(id, runs) => {
                    report.sessions += 1;
                    for run in runs {
                        report
                            .skipped
                            .push((format!("{id}/{run}"), ARCHIVED.to_owned()));
                        kept.push((id.clone(), run));
                    }
                }
                Visit::Looked {
                    id,
                    recovered,
                    skipped,
                    owned,
                } => {
                    report.sessions += 1;
                    report.recovered.extend(recovered);
                    held |= !skipped.is_empty();
                    report.skipped.extend(skipped);
                    for run in owned {
                        let why = CONTINUATION.to_owned();
                        report.skipped.push((format!("{id}/{run}"), why));
                        kept.push((id.clone(), run));
                    }
                }
                Visit::Unreadable(id, why) => {
                    held = true;
                    report.skipped.push((id, why));
                }
            }
        }
        // What the file named is ended (or reported): only then is it emptied. The runs kept
        // open are named first, so the emptying keeps them and a failure anywhere leaves them
        // named; with no file to name them in, the emptying that creates it names them (and
        // every turn started meanwhile) before the file is durable.
        if !held {
            let mut open_runs = lock(&self.inner.open_runs)?;
            for (session, run) in &kept {
                open_runs.mark(storage, session, run)?;
            }
            open_runs.reset(storage)?;
        }
        Ok(report)
    }

    /// Ends every interrupted run of session `id` (whose header `listed` is, when a listing
    /// already read it).
    fn visit(&self, id: &str, listed: Option<&SessionHeader>) -> Visit {
        // Only idle sessions (§12): a turn in flight here is not interrupted. Its lock is held
        // through the visit, so no turn starts while the session's runs are ended.
        let turn_lock = match self.turn_lock(id) {
            Ok(l) => l,
            Err(e) => return Visit::Unreadable(id.to_owned(), e.to_string()),
        };
        let Ok(_idle) = turn_lock.try_lock_owned() else {
            return Visit::Busy(id.to_owned());
        };
        let header = match listed {
            Some(h) => Some(h.clone()),
            None => match self.open_named(id) {
                Ok(h) => h,
                Err(e) => return Visit::Unreadable(id.to_owned(), e.to_string()),
            },
        };
        // A session the file names that is not there (its creation failed) has nothing to
        // end; an archived one is left as it is, its interrupted runs reported and kept in the
        // file for a start after it is unarchived.
        let Some(header) = header else {
            return Visit::Passed;
        };
        let archived = header.value()["isArchived"] == json!(true);
        let runs = match self.runs_to_end(id, &header) {
            Ok(runs) => runs,
            Err(e) => {
                return Visit::Looked {
                    id: id.to_owned(),
                    recovered: Vec::new(),
                    skipped: vec![(id.to_owned(), e.to_string())],
                    owned: Vec::new(),
                }
            }
        };
        if archived {
            if runs.is_empty() {
                return Visit::Passed;
            }
            let runs = runs.iter().map(|run| run.run_id().to_owned()).collect();
            return Visit::Archived(id.to_owned(), runs);
        }
        let (owned, runs): (Vec<RunHeader>, Vec<RunHeader>) =
            runs.into_iter().partition(continuation_owned);
        let (mut recovered, mut skipped) = (Vec::new(), Vec::new());
        for run in runs {
            match recover_run(&self.inner, &run) {
                Ok(done) => recovered.push(done),
                Err(e) => skipped.push((format!("{id}/{}", run.run_id()), e.to_string())),
            }
        }
        Visit::Looked {
            id: id.to_owned(),
            recovered,
            skipped,
            owned: owned.iter().map(|r| r.run_id().to_owned()).collect(),
        }
    }

    /// The runs of idle session `id` (whose header is `header`) recovery ends: those an
    /// earlier recovery ended but a crash cut short after their `run_failed` (their turn's
    /// state lost), and those without their terminal commit; and, when none is without it but
    /// the header still says a turn runs, the last run if a turn's end a crash cut short left
    /// it: its terminal RuntimeEvent stored (the end's first record) and its `turn_state` or
    /// the session's status, queued behind it, not. `recover_run` keeps the stored terminal
    /// and writes what is missing. A header that says `running` for another reason (a host's,
    /// an import's) over a run ended without a terminal event is left as it is.
    fn runs_to_end(&self, id: &str, header: &SessionHeader) -> Result<Vec<RunHeader>> {
        let stores = self.stores();
        let runs = stores.runs.list_session_runs(id)?;
        // Cut short after their terminal run event: never among the unfinished.
        let cut = recoveries_cut_short(&self.inner, id, &runs);
        let unfinished = stores.runs.list_unfinished_runs(id)?;
        let status = header.value()["status"].as_str();
        let mut ends = Vec::new();
        if unfinished.is_empty() && matches!(status, Some("running" | "waiting_for_user")) {
            if let Some(last) = runs
                .last()
                .filter(|l| cut.iter().all(|r| r.run_id() != l.run_id()))
            {
                let events = stores
                    .runtime_events
                    .read_immutable_runtime_events(id, last.run_id())?;
                // First: only the header says its end was cut short, and any end sets the
                // header `active`; a crash after another's end must not hide it.
                if events.iter().any(|e| !e.partial() && e.is_terminal()) {
                    ends.push(last.clone());
                }
            }
        }
        ends.extend(cut);
        ends.extend(unfinished);
        Ok(ends)
    }

    /// A session visited by its id (the open-runs file names it, or a listing of every session
    /// could not read them all): opened for writing at once when it exists (ending a
    /// run needs it, and its reads then answer from its view in memory, not its files again),
    /// and its header.
    fn open_named(&self, id: &str) -> Result<Option<SessionHeader>> {
        let stores = self.stores();
        let dir = crate::segment::layout::session_dir(id);
        let kind = stores.runtime_events.storage().entry_kind(&dir);
        if kind
            .map_err(|e| crate::error::Error::io(&dir, "stat", e))?
            .is_none()
        {
            return Ok(None);
        }
        stores.runtime_events.open_session_now(id)?;
        stores.sessions.read_session(id)
    }
}

/// A run that continues another (its header names a `continuationSource`): its end belongs to
/// the continuation protocol, which recovery at start leaves it to (§12).
fn continuation_owned(run: &RunHeader) -> bool {
    run.value()
        .get("continuationSource")
        .is_some_and(|source| !source.is_null())
}
