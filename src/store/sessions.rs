//! The session store (MAKA-MODEL §5, §6): session headers and stored messages, written to each
//! session's own ledger through the runtime-event store's open sessions (one writer per
//! session), and answered from the session's view: its sidecar, caught up, or its live view.
//!
//! Subagents are created in `subagents.rs`; the same questions asked of a root read-only, in
//! `read_only_sessions.rs`; messages read back, in `messages.rs`.

use super::messages::{in_turn, messages_of};
use super::runtime_events::{RuntimeEventStore, Seen};
use super::HeaderPatch;
use crate::claims::ClaimsLog;
use crate::error::{Error, Result};
use crate::index::{SessionRecord, SessionState};
use crate::model::{RunHeader, SessionHeader, StoredMessage, RUNTIME_FIELDS_ROOM};
use crate::segment::layout::SESSIONS_DIR;
use crate::storage::{EntryKind, Storage};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Sessions and their messages over one root, sharing the runtime-event store's sessions.
pub struct SessionStore {
    events: Arc<RuntimeEventStore>,
    claims: Arc<ClaimsLog>,
}

/// What §5 makes immutable once a session exists: its subagent objects.
const IMMUTABLE: [&str; 3] = ["subagentParent", "subagentRuntime", "subagentSpawn"];

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
        // A header no segment can hold is refused before its id is taken.
        self.check_fits(&header)?;
        if self.read_session(header.id())?.is_some() {
            return Err(Error::ClaimConflict {
                what: format!("session {} already exists", header.id()),
            });
        }
        self.claims.claim_session_create(header.id())?;
        if !self.write_first_header(&header)? {
            return Err(Error::ClaimConflict {
                what: format!("session {} already exists", header.id()),
            });
        }
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
        for key in IMMUTABLE {
            if stored.value().get(key) != header.value().get(key) {
                return Err(Error::InvalidRecord {
                    record: "session header",
                    field: key.into(),
                    why: "is immutable once the session exists".into(),
                });
            }
        }
        self.check_fits(&header)?;
        self.write_header(&header)?;
        Ok(header)
    }

    /// Sets the members of `fields` (a JSON object) on session `session_id`'s header as it is
    /// when written, under the session's lock, and writes it durably: what the runtime changes
    /// of a header (a status), which never undoes an update made since the caller read it.
    /// Checked as [`SessionStore::update_session`] checks a header, nothing written for one
    /// refused; a field §5 makes immutable is refused.
    pub(crate) fn set_fields(&self, session_id: &str, fields: Value) -> Result<SessionHeader> {
        for key in IMMUTABLE {
            if fields.get(key).is_some() {
                return Err(Error::InvalidRecord {
                    record: "session header",
                    field: key.into(),
                    why: "is immutable once the session exists".into(),
                });
            }
        }
        let Some(stored) = self.read_session(session_id)? else {
            return Err(Error::InvalidInput(format!(
                "no session {session_id} to update"
            )));
        };
        let patch = HeaderPatch::new(&stored, fields)?;
        let (queued, header) = self.events.queue_header_patch(session_id, &patch)?;
        queued.wait_durable()?;
        Ok(header)
    }

    /// The runtime's `fields` set on `header` as a patch that fits the record bound. A header
    /// written through the raw layer (an older root, an import, a spawn claimed through the
    /// claims log) may not leave the room a host's does ([`RUNTIME_FIELDS_ROOM`]); the end of
    /// a turn or of a run then sets only the members that grow no header, whatever it holds
    /// when queued (the session `active`, the shortest status there is; `hasUnread: true`;
    /// [`crate::model::never_grows`]), or none, and is written whole, not refused after its
    /// first records. (Left `running`, a session would be taken by every later recovery for
    /// one whose run it must end.)
    pub(crate) fn patch_that_fits(
        &self,
        header: &SessionHeader,
        fields: Value,
    ) -> Result<Option<HeaderPatch>> {
        let fits =
            |patch: &HeaderPatch| patch.made().canonical_json().len() <= self.events.max_payload();
        let patch = HeaderPatch::new(header, fields.clone())?;
        if fits(&patch) {
            return Ok(Some(patch));
        }
        // An object: `HeaderPatch::new` took it.
        let Value::Object(fields) = fields else {
            return Ok(None);
        };
        // Members that grow no header, whatever it holds when the patch is queued.
        let never_grows: serde_json::Map<String, Value> = fields
            .into_iter()
            .filter(|(k, v)| crate::model::never_grows(k, v))
            .collect();
        if never_grows.is_empty() {
            return Ok(None);
        }
        let patch = HeaderPatch::new(header, Value::Object(never_grows))?;
        Ok(fits(&patch).then_some(patch))
    }

    /// The claims log sessions and spawns are claimed in.
    pub(super) fn claims(&self) -> &ClaimsLog {
        &self.claims
    }

    /// Refuses a host's header whose canonical JSON does not leave [`RUNTIME_FIELDS_ROOM`]
    /// bytes under the bound of a segment's record, naming its size: the runtime's own fields,
    /// set on it later, must fit. What a creation checks before it claims anything.
    pub(super) fn check_fits(&self, header: &SessionHeader) -> Result<()> {
        let (len, bound) = (header.canonical_json().len(), self.events.max_payload());
        let most = bound.saturating_sub(RUNTIME_FIELDS_ROOM);
        if len > most {
            return Err(Error::InvalidRecord {
                record: "session header",
                field: "<record>".into(),
                why: format!(
                    "its canonical JSON is {len} bytes, over the {most} bytes a host's header \
                     may hold: {RUNTIME_FIELDS_ROOM} bytes of the {bound}-byte bound a record \
                     may hold are left for the fields the runtime sets"
                ),
            });
        }
        Ok(())
    }

    /// Writes a new session's first header, unless it has one: true when this call wrote it.
    /// A spawn is completed by whichever comes first, its creating call or a retry that found
    /// its claim without a header; checked under the session's lock, the other writes nothing,
    /// so no second creation header undoes an update made in between.
    pub(super) fn write_first_header(&self, header: &SessionHeader) -> Result<bool> {
        let had = std::cell::Cell::new(false);
        let first = |state: &SessionState| match state.header {
            Some(_) => {
                had.set(true);
                Err(Error::InvalidInput("the session has its header".into()))
            }
            None => Ok(()),
        };
        let record = SessionRecord::Header(header.clone());
        match self
            .events
            .append_session_record(header.id(), &record, &first)
        {
            Ok(_) => Ok(true),
            Err(_) if had.get() => Ok(false),
            Err(e) => Err(e),
        }
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
                messages: s.messages.iter().filter(|m| in_turn(m, turn_id)).collect(),
                ..SessionState::default()
            })?;
        messages_of(self.events.storage(), session_id, &placed, None)
    }

    /// The session's turn before `turn_id`: what a root turn's admission names as its previous
    /// one. It is the turn of the latest run to start (its `run_created` or `run_started` the
    /// latest in the log) of another turn; in a session with no such run, the turn of the last
    /// message of another turn. Not simply the last message's, nor the last run event's: a late
    /// recovery writes an older turn's `turn_state` and `run_failed` after newer turns ran.
    pub fn turn_before(&self, session_id: &str, turn_id: &str) -> Result<Option<String>> {
        self.events.with_session_state(session_id, |s| {
            let runs: Vec<&crate::index::RunState> = s.runs.values().collect();
            // The latest first, taken one at a time from a heap (made in time linear in the
            // runs): most often the first is another turn's, and a session whose latest runs
            // are all this turn's costs a logarithm a run, not a walk of them all.
            let mut started: std::collections::BinaryHeap<(u64, usize)> = runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((start_seq(r)?, i)))
                .collect();
            let turn = |h: &RunHeader| h.value()["turnId"].as_str().map(str::to_owned);
            while let Some((_, i)) = started.pop() {
                let run = runs[i];
                let of_run = match run.open_header() {
                    Some(open) => turn(open),
                    None => turn(&RunHeader::decode(&run.header)?),
                };
                if let Some(other) = of_run.filter(|t| t != turn_id) {
                    return Ok(Some(other));
                }
            }
            Ok(s.messages.last_turn_other_than(turn_id).map(str::to_owned))
        })?
    }

    /// Every session's latest header, ordered by `createdAt` then id; each from its view, whose
    /// session state holds the header whole.
    pub fn list_sessions(&self) -> Result<Vec<SessionHeader>> {
        self.events.catalog.list(
            || session_ids(self.events.storage()),
            |id| self.events.with_session_state(id, header_of)?,
        )
    }

    /// The ids of every session directory of the root, none of them read: what a caller that
    /// must go on past a session it cannot read visits one by one.
    pub(crate) fn session_ids(&self) -> Result<Vec<String>> {
        session_ids(self.events.storage())
    }
}

/// Where a run started in its session's log: its `run_created` or `run_started`, whichever
/// came first.
fn start_seq(run: &crate::index::RunState) -> Option<u64> {
    run.events
        .iter()
        .find(|e| matches!(e.event_type.as_str(), "run_created" | "run_started"))
        .map(|e| e.at.record_seq)
}

pub(super) fn header_of(state: &SessionState) -> Result<Option<SessionHeader>> {
    if let Some(header) = state.cached_header() {
        return Ok(Some(header.clone()));
    }
    let Some(text) = state.header.as_deref() else {
        return Ok(None);
    };
    let header = SessionHeader::decode(text)?;
    state.keep_decoded_header(&header);
    Ok(Some(header))
}

/// The ids of every session directory of the root.
pub(super) fn session_ids(storage: &dyn Storage) -> Result<Vec<String>> {
    Ok(session_entries(storage)?.into_iter().flatten().collect())
}

/// Every entry of the root's `sessions/`: a session directory's id, or the name of an entry
/// that is none (a symlink, a file, a name no session has), never followed.
pub(super) fn session_entries(
    storage: &dyn Storage,
) -> Result<Vec<std::result::Result<String, String>>> {
    let root = Path::new(SESSIONS_DIR);
    let entries = match storage.list_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(root, "list", e)),
    };
    Ok(entries
        .into_iter()
        .map(|e| {
            let session =
                e.kind == EntryKind::Dir && crate::format::validate_session_id(&e.name).is_ok();
            if session {
                Ok(e.name)
            } else {
                Err(e.name)
            }
        })
        .collect())
}
