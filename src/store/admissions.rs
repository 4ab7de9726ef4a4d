//! Root-turn admissions and start rejections (MAKA-MODEL §8): the record that admits a root
//! turn before its run, or that refuses it, written to the session's ledger; a repeat is
//! answered from the stored record, and a turn is admitted or rejected, never both.

use super::runs::AgentRunStore;
use crate::error::{Error, Result};
use crate::format::RecordKind;
use crate::index::{SessionRecord, SessionState};
use crate::model::{RootTurnAdmission, RootTurnRejection};
use serde_json::Value;
use std::collections::BTreeMap;

/// One record that decides a root turn: its admission or its start rejection.
struct Decision<'a> {
    session_id: &'a str,
    turn: &'a str,
    record: SessionRecord,
}

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

/// What [`AgentRunStore::commit_root_turn_start_rejection`] came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// The turn had no rejection: this one is stored.
    Committed(RootTurnRejection),
    /// The turn had the same rejection (equal execution and Skill invocation): the stored
    /// record, which wins.
    Existing(RootTurnRejection),
    /// The turn had a different rejection: the stored record; nothing was written.
    Conflict(RootTurnRejection),
}

impl AgentRunStore {
    /// Admits a root turn (§8) into an existing session. A new `legacy_automation` admission is
    /// refused, and so is a turn that was rejected; a repeat for an admitted turn is `Existing`
    /// or `Conflict` by the same-admission rule, and writes nothing.
    pub fn admit_root_turn(&self, admission: Value) -> Result<Admission> {
        let admission = RootTurnAdmission::from_value(admission)?;
        if admission.execution_kind() == "legacy_automation" {
            return Err(Error::InvalidRecord {
                record: "root-turn admission",
                field: "execution.kind".into(),
                why: "a new legacy_automation admission is refused".into(),
            });
        }
        let session_id = admission.value()["sessionId"].as_str().unwrap_or_default();
        let decision = Decision {
            session_id,
            turn: admission.turn_id(),
            record: SessionRecord::Admission(admission.clone()),
        };
        let Some(json) = self.decide_turn(decision, |s| &s.admissions, |s| &s.rejections)? else {
            return Ok(Admission::Admitted(admission));
        };
        let stored = RootTurnAdmission::decode(&json)?;
        Ok(if stored.same_admission(&admission) {
            Admission::Existing(stored)
        } else {
            Admission::Conflict(stored)
        })
    }

    /// Records that a root turn of an existing session was refused before it started (§8): its
    /// external message asked only for Skills, and every one failed. A turn already admitted
    /// is refused (`IdentityConflict`); a repeat for a rejected turn is `Existing` or
    /// `Conflict` and writes nothing. A root of format version 1 or 2 cannot hold one.
    pub fn commit_root_turn_start_rejection(&self, rejection: Value) -> Result<Rejection> {
        let rejection = RootTurnRejection::from_value(rejection)?;
        let decision = Decision {
            session_id: rejection.session_id(),
            turn: rejection.turn_id(),
            record: SessionRecord::Rejection(rejection.clone()),
        };
        let Some(json) = self.decide_turn(decision, |s| &s.rejections, |s| &s.admissions)? else {
            return Ok(Rejection::Committed(rejection));
        };
        let stored = RootTurnRejection::decode(&json)?;
        Ok(if stored.same_rejection(&rejection) {
            Rejection::Existing(stored)
        } else {
            Rejection::Conflict(stored)
        })
    }

    /// Writes `d`'s record unless its turn is already decided: returns the stored record of
    /// the same kind (`same`), or refuses a turn decided the other way (`other`). Both are
    /// read under the session's lock, so two decisions of one turn never both write.
    fn decide_turn(
        &self,
        d: Decision,
        same: fn(&SessionState) -> &BTreeMap<String, String>,
        other: fn(&SessionState) -> &BTreeMap<String, String>,
    ) -> Result<Option<String>> {
        let events = self.events();
        if !events.with_session_state(d.session_id, |s| s.header.is_some())? {
            return Err(Error::NotFound {
                what: format!("session {} to decide turn {} in", d.session_id, d.turn),
            });
        }
        let stored = std::cell::RefCell::new(None);
        let (turn, name) = (d.turn, d.record.kind().name());
        let decided = match d.record.kind() {
            RecordKind::Admission => "rejected",
            _ => "admitted",
        };
        let written = events.append_session_record(d.session_id, &d.record, &|s| {
            if let Some(json) = same(s).get(turn) {
                *stored.borrow_mut() = Some(json.clone());
                return Err(Error::InvalidInput(format!("turn {turn} has its {name}")));
            }
            match other(s).contains_key(turn) {
                true => Err(Error::IdentityConflict {
                    what: format!("root turn {turn} is already {decided}"),
                }),
                false => Ok(()),
            }
        });
        match (written, stored.into_inner()) {
            (_, Some(json)) => Ok(Some(json)),
            (Ok(_), None) => Ok(None),
            (Err(e), None) => Err(e),
        }
    }

    /// The start rejection of a session's turn, if it was rejected.
    pub fn read_root_turn_start_rejection(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<Option<RootTurnRejection>> {
        self.events()
            .with_session_state(session_id, |s| s.rejections.get(turn_id).cloned())?
            .map(|json| RootTurnRejection::decode(&json))
            .transpose()
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
