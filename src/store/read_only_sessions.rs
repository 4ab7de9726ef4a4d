//! Sessions read from a root's files (MAKA-MODEL §5–§7): the questions the session store
//! answers, asked of a root the caller may not own.

use super::messages::messages_of;
use super::read_view::{read_only_state, Sidecars};
use super::sessions::{header_of, session_entries};
use crate::error::{Error, Result};
use crate::index::SessionState;
use crate::model::{SessionHeader, StoredMessage};
use crate::segment::layout::SESSIONS_DIR;
use crate::storage::Storage;
use std::path::Path;

/// The sessions of a root that can be read (their headers, by `createdAt`, then id) and those
/// that cannot (by id, with why).
pub type ReadableSessions = (Vec<SessionHeader>, Vec<(String, Error)>);

/// Sessions read from a root's files: no lease taken, nothing written. What the CLI uses on a
/// root it may not own.
pub struct ReadOnlySessions<'s> {
    pub(super) storage: &'s dyn Storage,
    pub(super) sidecars: Sidecars,
}

impl<'s> ReadOnlySessions<'s> {
    /// Sessions of the root `storage` is rooted at, read the short way where a sidecar holds.
    pub fn new(storage: &'s dyn Storage) -> Self {
        ReadOnlySessions::with(storage, Sidecars::Trusted)
    }

    /// Sessions of the root `storage` is rooted at, each read as `sidecars` says
    /// ([`Sidecars::Ignored`]: from its segments alone).
    pub fn with(storage: &'s dyn Storage, sidecars: Sidecars) -> Self {
        ReadOnlySessions { storage, sidecars }
    }

    /// The session's latest header, or `None` if it has none.
    pub fn read_session(&self, session_id: &str) -> Result<Option<SessionHeader>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        header_of(&read_only_state(self.storage, session_id, self.sidecars)?)
    }

    /// Every session's latest header, by `createdAt`, then id; the first session that cannot
    /// be read fails the whole answer.
    pub fn list_sessions(&self) -> Result<Vec<SessionHeader>> {
        // Entries that are no session directory are left out, as they always were here.
        let (headers, mut unreadable) = self.list_entries(false)?;
        match unreadable.is_empty() {
            true => Ok(headers),
            false => Err(unreadable.swap_remove(0).1),
        }
    }

    /// Every session's latest header that can be read, by `createdAt`, then id, and each
    /// session that cannot be, by id, with why, as each entry of `sessions/` that is no session
    /// directory (by name; never followed): a forensic listing shows what it can and names the
    /// rest. Only a root whose sessions cannot be listed at all is an error.
    pub fn list_readable_sessions(&self) -> Result<ReadableSessions> {
        self.list_entries(true)
    }

    /// The sessions read and those that cannot be; with `strays`, the entries that are no
    /// session directory among the latter.
    fn list_entries(&self, strays: bool) -> Result<ReadableSessions> {
        let mut headers = Vec::new();
        let mut unreadable = Vec::new();
        for entry in session_entries(self.storage)? {
            let id = match entry {
                Ok(id) => id,
                Err(_) if !strays => continue,
                Err(name) => {
                    let path = Path::new(SESSIONS_DIR).join(&name);
                    let why = "not a session directory (a symlink, a file or a name no session \
                               has): left out, not followed";
                    unreadable.push((name, Error::corrupt(path, 0, why)));
                    continue;
                }
            };
            match read_only_state(self.storage, &id, self.sidecars)
                .and_then(|state| header_of(&state))
            {
                Ok(header) => headers.extend(header),
                Err(e) => unreadable.push((id, e)),
            }
        }
        super::catalog::sort_headers(&mut headers);
        Ok((headers, unreadable))
    }

    /// The session's runs, by `createdAt`, then run id.
    pub fn list_session_runs(&self, session_id: &str) -> Result<Vec<crate::model::RunHeader>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        super::runs::runs_of(&read_only_state(self.storage, session_id, self.sidecars)?)
    }

    /// A run's events in sequence order, each with its sequence number.
    pub fn read_run_events(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Vec<(u64, crate::model::RunEvent)>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let state = read_only_state(self.storage, session_id, self.sidecars)?;
        let run = state.runs.get(run_id).ok_or_else(|| Error::NotFound {
            what: format!("run {run_id} of session {session_id}"),
        })?;
        super::runs::run_events_of(self.storage, session_id, &run.events)
    }

    /// The session's messages in append order, or only those of `turn_id`.
    pub fn read_messages(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
    ) -> Result<Vec<StoredMessage>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let state = read_only_state(self.storage, session_id, self.sidecars)?;
        messages_of(self.storage, session_id, &state, turn_id)
    }

    /// [`Self::list_session_runs`], each run with what [`Self::read_run_events`] answers for
    /// it, from one read of the session (what listing every run's events costs once, not once
    /// a run).
    pub fn list_session_runs_with_events(
        &self,
        session_id: &str,
    ) -> Result<Vec<super::runs::RunWithEvents>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let state = read_only_state(self.storage, session_id, self.sidecars)?;
        super::runs::runs_with_events_of(self.storage, session_id, &state)
    }
}

/// A session's header, its runs with their events, and its messages, each read on its own: one
/// that cannot be read (a damaged record) leaves the others readable.
#[derive(Debug)]
pub struct SessionContents {
    pub header: Result<Option<SessionHeader>>,
    pub runs: Result<Vec<super::runs::RunWithEvents>>,
    pub messages: Result<Vec<StoredMessage>>,
}

impl ReadOnlySessions<'_> {
    /// What [`Self::read_session`], [`Self::list_session_runs_with_events`] and
    /// [`Self::read_messages`] answer, read from `state`: the session's state as a view of it
    /// holds it ([`crate::index::SessionIndex::session`]). A reader that already holds the
    /// view (the report) reads the session's sidecar once, not once a question.
    pub fn contents(&self, session_id: &str, state: &SessionState) -> Result<SessionContents> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        Ok(SessionContents {
            header: header_of(state),
            runs: super::runs::runs_with_events_of(self.storage, session_id, state),
            messages: messages_of(self.storage, session_id, state, None),
        })
    }
}
