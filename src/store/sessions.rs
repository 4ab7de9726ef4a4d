//! The session store (MAKA-MODEL §5, §6): session headers and stored messages, written to each
//! session's own ledger through the runtime-event store's open sessions (one writer per
//! session), and answered from the session's view: its sidecar, caught up, or its live view.
//!
//! Subagents are created in `subagents.rs`. Not yet here (issue 10): the run and admission
//! stores.

use super::read_view::read_only_state;
use super::runtime_events::{RuntimeEventStore, Seen};
use crate::claims::ClaimsLog;
use crate::error::{Error, Result};
use crate::index::{MessageEntry, SessionRecord, SessionState, StoredAt};
use crate::model::{SessionHeader, StoredMessage};
use crate::segment::layout::SESSIONS_DIR;
use crate::segment::FramesAt;
use crate::storage::{EntryKind, Storage};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Sessions and their messages over one root, sharing the runtime-event store's sessions.
pub struct SessionStore {
    events: Arc<RuntimeEventStore>,
    claims: Arc<ClaimsLog>,
}

impl SessionStore {
    /// A session store writing through `events` and taking session ids in `claims`.
    pub fn new(events: Arc<RuntimeEventStore>, claims: Arc<ClaimsLog>) -> SessionStore {
        SessionStore { events, claims }
    }

    /// Creates a session from its header (§5): the header is checked field by field, may not
    /// carry a subagent spawn (subagents are created with their spawn claim), and its id is
    /// taken for good in the claims log first, so an id is never used twice, not even after a
    /// crash between the claim and the header (a retry uses a fresh id).
    pub fn create(&self, header: Value) -> Result<SessionHeader> {
        let header = SessionHeader::from_value(header)?;
        if header.has_subagent_spawn() {
            return Err(Error::InvalidRecord {
                record: "session header",
                field: "subagentSpawn".into(),
                why: "a subagent is created with create_subagent, under its spawn claim".into(),
            });
        }
        if self.read_session(header.id())?.is_some() {
            return Err(Error::ClaimConflict {
                what: format!("session {} already exists", header.id()),
            });
        }
        self.claims.claim_session_create(header.id())?;
        self.write_header(&header)?;
        Ok(header)
    }

    /// Writes a new version of an existing session's header (a status change, a rename, a new
    /// `lastUsedAt`): checked as at creation, for the same session, keeping what §5 makes
    /// immutable (the subagent objects).
    pub fn update_session(&self, header: Value) -> Result<SessionHeader> {
        let header = SessionHeader::from_value(header)?;
        let Some(stored) = self.read_session(header.id())? else {
            return Err(Error::InvalidInput(format!(
                "no session {} to update",
                header.id()
            )));
        };
        for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
            if stored.value().get(key) != header.value().get(key) {
                return Err(Error::InvalidRecord {
                    record: "session header",
                    field: key.into(),
                    why: "is immutable once the session exists".into(),
                });
            }
        }
        self.write_header(&header)?;
        Ok(header)
    }

    /// The claims log sessions and spawns are claimed in.
    pub(super) fn claims(&self) -> &ClaimsLog {
        &self.claims
    }

    pub(super) fn write_header(&self, header: &SessionHeader) -> Result<()> {
        self.events
            .append_session_record(header.id(), &SessionRecord::Header(header.clone()), &|_| {
                Ok(())
            })
            .map(|_| ())
    }

    /// The session's latest header, or `None` if it has none.
    pub fn read_session(&self, session_id: &str) -> Result<Option<SessionHeader>> {
        self.events.with_session_state(session_id, header_of)?
    }

    /// The session's latest header as queued, not waiting for it to be durable: for a writer
    /// whose next version of it follows in the same log
    /// ([`Seen::Queued`]).
    pub(crate) fn read_session_queued(&self, session_id: &str) -> Result<Option<SessionHeader>> {
        self.events
            .session_state(session_id, Seen::Queued, header_of)?
    }

    /// Appends a stored message (§6) to an existing session, durably. The message is checked
    /// field by field first; nothing is written for one that is refused.
    pub fn append_message(&self, session_id: &str, message: Value) -> Result<StoredMessage> {
        let message = StoredMessage::from_value(message)?;
        if self.read_session(session_id)?.is_none() {
            return Err(Error::InvalidInput(format!(
                "no session {session_id} to append a message to"
            )));
        }
        self.events.append_session_record(
            session_id,
            &SessionRecord::Message(message.clone()),
            &|_| Ok(()),
        )?;
        Ok(message)
    }

    /// The session's messages in append order, or only those of `turn_id`.
    pub fn read_messages(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
    ) -> Result<Vec<StoredMessage>> {
        // Only the wanted entries are copied out of the view: a turn's messages of a long
        // session cost what they hold (`placed` holds no other turn's).
        let placed = self
            .events
            .with_session_state(session_id, |s| SessionState {
                messages: s
                    .messages
                    .iter()
                    .filter(|m| in_turn(m, turn_id))
                    .cloned()
                    .collect(),
                ..SessionState::default()
            })?;
        messages_of(self.events.storage(), session_id, &placed, None)
    }

    /// Every session's latest header, ordered by `createdAt` then id; each from its view, whose
    /// session state holds the header whole.
    pub fn list_sessions(&self) -> Result<Vec<SessionHeader>> {
        self.events.catalog.list(
            || session_ids(self.events.storage()),
            |id| self.events.with_session_state(id, header_of)?,
        )
    }
}

/// Sessions read from a root's files: no lease taken, nothing written. What the CLI uses on a
/// root it may not own.
pub struct ReadOnlySessions<'s> {
    pub(super) storage: &'s dyn Storage,
}

impl<'s> ReadOnlySessions<'s> {
    /// Sessions of the root `storage` is rooted at.
    pub fn new(storage: &'s dyn Storage) -> Self {
        ReadOnlySessions { storage }
    }

    /// The session's latest header, or `None` if it has none.
    pub fn read_session(&self, session_id: &str) -> Result<Option<SessionHeader>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        header_of(&read_only_state(self.storage, session_id)?)
    }

    /// Every session's latest header, by `createdAt`, then id.
    pub fn list_sessions(&self) -> Result<Vec<SessionHeader>> {
        list_with(self.storage, &|id| read_only_state(self.storage, id))
    }

    /// The session's runs, by `createdAt`, then run id.
    pub fn list_session_runs(&self, session_id: &str) -> Result<Vec<crate::model::RunHeader>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        super::runs::runs_of(&read_only_state(self.storage, session_id)?)
    }

    /// A run's events in sequence order, each with its sequence number.
    pub fn read_run_events(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Vec<(u64, crate::model::RunEvent)>> {
        crate::format::validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let state = read_only_state(self.storage, session_id)?;
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
        let state = read_only_state(self.storage, session_id)?;
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
        let state = read_only_state(self.storage, session_id)?;
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

fn header_of(state: &SessionState) -> Result<Option<SessionHeader>> {
    state
        .header
        .as_deref()
        .map(SessionHeader::decode)
        .transpose()
}

/// The ids of every session directory of the root.
fn session_ids(storage: &dyn Storage) -> Result<Vec<String>> {
    let root = Path::new(SESSIONS_DIR);
    let entries = match storage.list_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(root, "list", e)),
    };
    Ok(entries
        .into_iter()
        .filter(|e| e.kind == EntryKind::Dir && crate::format::validate_session_id(&e.name).is_ok())
        .map(|e| e.name)
        .collect())
}

/// The headers of every session directory of the root, by `createdAt` then id, each session's
/// state read with `state_of`.
fn list_with(
    storage: &dyn Storage,
    state_of: &dyn Fn(&str) -> Result<SessionState>,
) -> Result<Vec<SessionHeader>> {
    let mut headers = Vec::new();
    for id in session_ids(storage)? {
        if let Some(header) = header_of(&state_of(&id)?)? {
            headers.push(header);
        }
    }
    super::catalog::sort_headers(&mut headers);
    Ok(headers)
}

/// Whether message `m` is one of turn `turn_id`'s, or any when no turn is asked for.
fn in_turn(m: &MessageEntry, turn_id: Option<&str>) -> bool {
    turn_id.is_none_or(|t| m.turn_id.as_deref() == Some(t))
}

/// Fewer messages than this a core are read on one thread: below it, starting threads costs
/// more than decoding shares.
const MESSAGES_A_THREAD: usize = 2_048;

/// The messages `state` places, read back from the session's segments. A long read is shared
/// by the cores, a consecutive part each; the answer, and the first damaged or refused message
/// in append order if any, are what one thread reading them all would give (a failed read of
/// the file itself is reported by the part that met it, in the parts' order).
fn messages_of(
    storage: &dyn Storage,
    session_id: &str,
    state: &SessionState,
    turn_id: Option<&str>,
) -> Result<Vec<StoredMessage>> {
    let at: Vec<&MessageEntry> = state
        .messages
        .iter()
        .filter(|m| in_turn(m, turn_id))
        .collect();
    let threads = crate::parallel::threads_for(storage, crate::parallel::cores());
    let parts = crate::parallel::map_ranges(threads, at.len(), MESSAGES_A_THREAD, |range| {
        decode_messages(storage, session_id, &at[range])
    });
    let mut out = Vec::with_capacity(at.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// The messages at `at`, read and decoded in order.
fn decode_messages(
    storage: &dyn Storage,
    session_id: &str,
    at: &[&MessageEntry],
) -> Result<Vec<StoredMessage>> {
    let at: Vec<StoredAt> = at.iter().map(|m| m.at).collect();
    let mut frames = FramesAt::new(storage, session_id);
    super::stored::decoded_at(
        &mut frames,
        session_id,
        &at,
        "message",
        StoredMessage::decode,
    )
}
