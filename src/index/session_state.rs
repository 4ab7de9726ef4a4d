//! The part of a session's view that its session records make (MAKA-MODEL §5–§8): the latest
//! session header, kept whole so a listing reads no segment; where every stored message lies,
//! with its id and turn; the runs and where their events lie; each root turn's admission or
//! start rejection. A pure function of the records, as the rest of the view is.

use super::entries::StoredAt;
use super::run_state::{apply_run, apply_run_event, check_run, check_run_event, Runs};
use super::session_record::SessionRecord;
use crate::format::RecordKind;
use serde::{Deserialize, Serialize};

/// One stored message: its id and turn, and where its frame lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageEntry {
    pub id: String,
    pub turn_id: Option<String>,
    pub at: StoredAt,
}

/// The session records' state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The canonical JSON of the latest session header record.
    pub header: Option<String>,
    /// Every stored message in append order.
    pub messages: Vec<MessageEntry>,
    /// The session's runs by id.
    pub runs: Runs,
    /// The canonical JSON of each admitted root turn's admission, by turn id: the first record
    /// of a turn is its admission (a store answers a repeat from it and writes no second).
    pub admissions: std::collections::BTreeMap<String, String>,
    /// The canonical JSON of each rejected root turn's start rejection, by turn id. A turn's
    /// first admission or rejection decides it: a later record of either kind changes nothing.
    pub rejections: std::collections::BTreeMap<String, String>,
}

impl SessionState {
    /// Checks `record` of session `session_id` as [`SessionState::apply`] would apply it,
    /// changing nothing: what a store checks before it writes one. It must
    /// [name the session](Self::check_session); a run event must also belong to a run the
    /// session has and not be a second terminal event of its run.
    pub fn check(&self, record: &SessionRecord, session_id: &str) -> Result<(), String> {
        SessionState::check_session(record, session_id)?;
        match record {
            SessionRecord::RunEvent(event) => check_run_event(event, &self.runs),
            _ => Ok(()),
        }
    }

    /// Checks that `record` names session `session_id` where it names one (a header, run, run
    /// event, admission or rejection): what needs no state, checked before a session is
    /// opened for it.
    pub fn check_session(record: &SessionRecord, session_id: &str) -> Result<(), String> {
        match record {
            SessionRecord::Header(header) if header.id() != session_id => Err(format!(
                "the session header is session {:?}'s, in session {session_id:?}",
                header.id()
            )),
            SessionRecord::Run(run) => check_run(run, session_id),
            SessionRecord::RunEvent(e) if e.value()["sessionId"].as_str() != Some(session_id) => {
                Err(format!(
                    "the run event belongs to another session than {session_id:?}"
                ))
            }
            SessionRecord::Admission(a) if a.value()["sessionId"].as_str() != Some(session_id) => {
                Err(format!(
                    "the admission of turn {} belongs to another session than {session_id:?}",
                    a.turn_id()
                ))
            }
            SessionRecord::Rejection(r) if r.session_id() != session_id => Err(format!(
                "the rejection of turn {} belongs to another session than {session_id:?}",
                r.turn_id()
            )),
            _ => Ok(()),
        }
    }

    /// [Checks](Self::check) `record` of session `session_id` and applies it, stored `at`.
    pub fn apply(
        &mut self,
        record: &SessionRecord,
        session_id: &str,
        at: StoredAt,
    ) -> Result<(), String> {
        self.check(record, session_id)?;
        self.apply_checked(record, at);
        Ok(())
    }

    /// Applies `record`, stored `at`, which [`SessionState::check`] accepted against this
    /// state. A turn's first admission or rejection decides it: a later record of either kind
    /// changes nothing.
    pub fn apply_checked(&mut self, record: &SessionRecord, at: StoredAt) {
        match record {
            SessionRecord::Header(header) => {
                self.header = Some(header.canonical_json().to_owned());
            }
            SessionRecord::Message(message) => self.messages.push(MessageEntry {
                id: message.id().to_owned(),
                turn_id: message.turn_id().map(str::to_owned),
                at,
            }),
            SessionRecord::Run(run) => apply_run(&mut self.runs, run),
            SessionRecord::RunEvent(event) => {
                apply_run_event(&mut self.runs, event, at);
            }
            SessionRecord::Admission(a) => {
                if !self.rejections.contains_key(a.turn_id()) {
                    self.admissions
                        .entry(a.turn_id().to_owned())
                        .or_insert_with(|| a.canonical_json().to_owned());
                }
            }
            SessionRecord::Rejection(r) => {
                if !self.admissions.contains_key(r.turn_id()) {
                    self.rejections
                        .entry(r.turn_id().to_owned())
                        .or_insert_with(|| r.canonical_json().to_owned());
                }
            }
        }
    }

    /// Decodes a stored record of `kind` and [applies](Self::apply) it; a kind that is not a
    /// session record changes nothing.
    pub fn apply_stored(
        &mut self,
        kind: RecordKind,
        payload: &[u8],
        session_id: &str,
        at: StoredAt,
    ) -> Result<(), String> {
        match SessionRecord::decode(kind, payload).map_err(|e| e.to_string())? {
            Some(record) => self.apply(&record, session_id, at),
            None => Ok(()),
        }
    }
}
