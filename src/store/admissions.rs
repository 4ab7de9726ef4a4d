//! Root-turn admissions (MAKA-MODEL §8): the record that admits a root turn before its run,
//! written to the session's ledger; a repeat is answered from the stored record.

use super::runs::AgentRunStore;
use crate::error::{Error, Result};
use crate::format::RecordKind;
use crate::model::RootTurnAdmission;
use serde_json::Value;

/// What [`AgentRunStore::admit_root_turn`] came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// The turn had no admission: this one is stored.
    Admitted(RootTurnAdmission),
    /// The turn had the same admission (same previous root turn, equal payload): the stored
    /// record, which wins (its admission time and user message id stay).
    Existing(RootTurnAdmission),
    /// The turn had a different admission: the stored record; nothing was written.
    Conflict(RootTurnAdmission),
}

impl AgentRunStore {
    /// Admits a root turn (§8) into an existing session. A new `legacy_automation` admission is
    /// refused; a repeat for an admitted turn is `Existing` or `Conflict` by the same-admission
    /// rule, and writes nothing.
    pub fn admit_root_turn(&self, admission: Value) -> Result<Admission> {
        let admission = RootTurnAdmission::from_value(admission)?;
        if admission.execution_kind() == "legacy_automation" {
            return Err(Error::InvalidRecord {
                record: "root-turn admission",
                field: "execution.kind".into(),
                why: "a new legacy_automation admission is refused".into(),
            });
        }
        let session_id = admission.value()["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let events = self.events();
        if !events.with_session_state(&session_id, |s| s.header.is_some())? {
            return Err(Error::NotFound {
                what: format!("session {session_id} to admit a turn into"),
            });
        }
        let turn = admission.turn_id().to_owned();
        // The stored record, if the turn was admitted (read under the session's lock, so two
        // admissions of one turn never both write).
        let stored = std::cell::RefCell::new(None);
        events
            .append_record_if(
                &session_id,
                RecordKind::Admission,
                admission.canonical_json().as_bytes(),
                &|state| match state.admissions.get(&turn) {
                    Some(json) => {
                        *stored.borrow_mut() = Some(json.clone());
                        Err(Error::InvalidInput(format!(
                            "turn {turn} is already admitted"
                        )))
                    }
                    None => Ok(()),
                },
            )
            .or_else(|e| match stored.borrow().is_some() {
                true => Ok(0),
                false => Err(e),
            })?;
        let Some(json) = stored.into_inner() else {
            return Ok(Admission::Admitted(admission));
        };
        let stored = RootTurnAdmission::decode(&json)?;
        Ok(if stored.same_admission(&admission) {
            Admission::Existing(stored)
        } else {
            Admission::Conflict(stored)
        })
    }

    /// The admission of a session's turn, if it was admitted.
    pub fn read_root_turn_admission(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<Option<RootTurnAdmission>> {
        self.events()
            .with_session_state(session_id, |s| s.admissions.get(turn_id).cloned())?
            .map(|json| RootTurnAdmission::decode(&json))
            .transpose()
    }
}
