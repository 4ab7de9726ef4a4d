//! The part of a session's view that its session records make (MAKA-MODEL §5, §6): the latest
//! session header, kept whole so a listing reads no segment, and where every stored message
//! lies, with its id and turn. A pure function of the records, as the rest of the view is.

use super::run_state::{apply_run, apply_run_event, check_run, check_run_event, Runs};
use super::view::StoredAt;
use crate::model::{SessionHeader, StoredMessage};
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
    /// Applies a session header record of session `session_id`.
    pub fn apply_header(&mut self, payload: &[u8], session_id: &str) -> Result<(), String> {
        let json = std::str::from_utf8(payload).map_err(|_| "session header is not UTF-8")?;
        let header = SessionHeader::decode(json).map_err(|e| e.to_string())?;
        if header.id() != session_id {
            return Err(format!(
                "the session header is session {:?}'s, in session {session_id:?}",
                header.id()
            ));
        }
        self.header = Some(header.canonical_json().to_owned());
        Ok(())
    }

    /// Applies a stored message record stored `at`.
    pub fn apply_message(&mut self, payload: &[u8], at: StoredAt) -> Result<(), String> {
        let json = std::str::from_utf8(payload).map_err(|_| "stored message is not UTF-8")?;
        let message = StoredMessage::decode(json).map_err(|e| e.to_string())?;
        self.messages.push(MessageEntry {
            id: message.id().to_owned(),
            turn_id: message.turn_id().map(str::to_owned),
            at,
        });
        Ok(())
    }

    /// Checks a run or run event record as [`SessionState::apply_run_record`] would apply it,
    /// changing nothing: what a store checks before it writes one.
    pub fn check_run_record(
        &self,
        kind: crate::format::RecordKind,
        payload: &[u8],
        session_id: &str,
    ) -> Result<(), String> {
        match kind {
            crate::format::RecordKind::Run => check_run(payload, session_id).map(|_| ()),
            crate::format::RecordKind::RunEvent => {
                check_run_event(payload, session_id, &self.runs).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Applies a run header or run event record stored `at`.
    pub fn apply_run_record(
        &mut self,
        kind: crate::format::RecordKind,
        payload: &[u8],
        session_id: &str,
        at: StoredAt,
    ) -> Result<(), String> {
        match kind {
            crate::format::RecordKind::Run => {
                apply_run(&mut self.runs, &check_run(payload, session_id)?);
            }
            crate::format::RecordKind::RunEvent => {
                let event = check_run_event(payload, session_id, &self.runs)?;
                apply_run_event(&mut self.runs, &event, at);
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks a root-turn admission record of session `session_id` (§8).
    pub fn check_admission(
        payload: &[u8],
        session_id: &str,
    ) -> Result<crate::model::RootTurnAdmission, String> {
        let json = std::str::from_utf8(payload).map_err(|_| "admission is not UTF-8")?;
        let admission = crate::model::RootTurnAdmission::decode(json).map_err(|e| e.to_string())?;
        if admission.value()["sessionId"].as_str() != Some(session_id) {
            return Err(format!(
                "the admission of turn {} belongs to another session than {session_id:?}",
                admission.turn_id()
            ));
        }
        Ok(admission)
    }

    /// Applies an admission record: the first for its turn is kept, unless it was rejected.
    pub fn apply_admission(&mut self, payload: &[u8], session_id: &str) -> Result<(), String> {
        let admission = SessionState::check_admission(payload, session_id)?;
        if !self.rejections.contains_key(admission.turn_id()) {
            self.admissions
                .entry(admission.turn_id().to_owned())
                .or_insert_with(|| admission.canonical_json().to_owned());
        }
        Ok(())
    }

    /// Checks a root-turn start rejection record of session `session_id` (§8).
    pub fn check_rejection(
        payload: &[u8],
        session_id: &str,
    ) -> Result<crate::model::RootTurnRejection, String> {
        let json = std::str::from_utf8(payload).map_err(|_| "rejection is not UTF-8")?;
        let rejection = crate::model::RootTurnRejection::decode(json).map_err(|e| e.to_string())?;
        if rejection.session_id() != session_id {
            return Err(format!(
                "the rejection of turn {} belongs to another session than {session_id:?}",
                rejection.turn_id()
            ));
        }
        Ok(rejection)
    }

    /// Applies a start rejection record: the first for its turn is kept, unless it was
    /// admitted.
    pub fn apply_rejection(&mut self, payload: &[u8], session_id: &str) -> Result<(), String> {
        let rejection = SessionState::check_rejection(payload, session_id)?;
        if !self.admissions.contains_key(rejection.turn_id()) {
            self.rejections
                .entry(rejection.turn_id().to_owned())
                .or_insert_with(|| rejection.canonical_json().to_owned());
        }
        Ok(())
    }
}
