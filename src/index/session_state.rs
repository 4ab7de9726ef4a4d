//! The part of a session's view that its session records make (MAKA-MODEL §5–§8): the latest
//! session header, kept whole so a listing reads no segment; where every stored message lies,
//! with its id and turn; the runs and where their events lie; each root turn's admission or
//! start rejection. A pure function of the records, as the rest of the view is.

use super::entries::StoredAt;
use super::messages::Messages;
use super::run_state::{apply_run, apply_run_event, check_run, check_run_event, Runs};
use super::session_record::SessionRecord;
use crate::format::RecordKind;
use crate::model::SessionHeader;
use serde::{Deserialize, Serialize};

/// The session records' state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The canonical JSON of the latest session header record.
    pub header: Option<String>,
    /// That header decoded, a cache (set when it is applied or first read): read by
    /// [`SessionState::cached_header`].
    #[serde(skip)]
    pub decoded_header: DecodedHeader,
    /// Every stored message in append order.
    pub messages: Messages,
    /// The session's runs by id.
    pub runs: Runs,
    /// The canonical JSON of each admitted root turn's admission, by turn id: the first record
    /// of a turn is its admission (a store answers a repeat from it and writes no second).
    pub admissions: std::collections::BTreeMap<String, String>,
    /// The canonical JSON of each rejected root turn's start rejection, by turn id. A turn's
    /// first admission or rejection decides it: a later record of either kind changes nothing.
    pub rejections: std::collections::BTreeMap<String, String>,
}

/// The latest header decoded, kept beside its text so a store's reads (every turn reads its
/// session's header twice) need not decode it again: set when a header is applied, or by the
/// first read of a view loaded from a sidecar. A cache, not state: never written to a sidecar,
/// equal to any other, and answered only while its canonical JSON is still the header's text.
#[derive(Debug, Clone, Default)]
pub struct DecodedHeader(std::sync::OnceLock<SessionHeader>);

impl PartialEq for DecodedHeader {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for DecodedHeader {}

impl SessionState {
    /// The latest header, decoded, if it was applied to this state or kept by
    /// [`SessionState::keep_decoded_header`] and is still the latest; `None` means decode
    /// [`SessionState::header`].
    pub fn cached_header(&self) -> Option<&SessionHeader> {
        let (text, decoded) = (self.header.as_deref()?, self.decoded_header.0.get()?);
        (decoded.canonical_json() == text).then_some(decoded)
    }

    /// Keeps `header`, decoded from [`SessionState::header`] by a read, for the next read; a
    /// state that already holds one keeps its own (and either is answered only while its
    /// canonical JSON is the header's text).
    pub fn keep_decoded_header(&self, header: &SessionHeader) {
        let _ = self.decoded_header.0.set(header.clone());
    }

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
                self.decoded_header = DecodedHeader(header.clone().into());
            }
            SessionRecord::Message(message) => {
                self.messages.push(message.id(), message.turn_id(), at)
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunHeader;
    use serde_json::json;

    fn header(name: &str) -> SessionHeader {
        SessionHeader::from_value(json!({
            "schemaVersion": 1, "id": "s", "workspaceRoot": "/w", "cwd": "/w", "name": name,
            "llmConnectionSlug": "fake", "model": "m", "createdAt": 1, "lastUsedAt": 1,
            "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
            "connectionLocked": false, "labels": [], "status": "active", "backend": "fake",
            "permissionMode": "ask"
        }))
        .expect("header")
    }

    fn run(status: &str) -> RunHeader {
        RunHeader::from_value(json!({
            "runId": "r", "sessionId": "s", "turnId": "t", "llmConnectionSlug": "fake",
            "modelId": "m", "cwd": "/w", "status": status, "backendKind": "fake",
            "permissionMode": "ask", "createdAt": 1, "updatedAt": 1
        }))
        .expect("run")
    }

    fn at(seq: u64) -> StoredAt {
        StoredAt {
            record_seq: seq,
            ordinal: 1,
            offset: 256,
        }
    }

    #[test]
    fn the_applied_header_is_answered_decoded_and_only_while_it_is_the_latest() {
        let mut state = SessionState::default();
        assert!(state.cached_header().is_none(), "no header yet");
        state.apply_checked(&SessionRecord::Header(header("first")), at(1));
        let text = state.header.clone().expect("text");
        let cached = state.cached_header().expect("cached").clone();
        assert_eq!(cached, SessionHeader::decode(&text).expect("decodes"));
        state.apply_checked(&SessionRecord::Header(header("second")), at(2));
        assert_eq!(
            state.cached_header().expect("cached").value()["name"],
            "second"
        );
        // A text set some other way is never answered from a header decoded before it.
        state.header = Some(text);
        assert!(state.cached_header().is_none());
    }

    #[test]
    fn the_cache_is_not_state_a_sidecar_never_holds_it_and_it_compares_equal() {
        let mut with = SessionState::default();
        with.apply_checked(&SessionRecord::Header(header("h")), at(1));
        let mut without = with.clone();
        without.decoded_header = DecodedHeader::default();
        assert!(without.cached_header().is_none());
        assert_eq!(with, without);
        let bytes = bincode::serialize(&with).expect("encodes");
        assert_eq!(bytes, bincode::serialize(&without).expect("encodes"));
        let loaded: SessionState = bincode::deserialize(&bytes).expect("decodes");
        assert_eq!(loaded, with);
        assert!(
            loaded.cached_header().is_none(),
            "a loaded state decodes its header"
        );
        let text = loaded.header.clone().expect("text");
        loaded.keep_decoded_header(&SessionHeader::decode(&text).expect("decodes"));
        assert_eq!(
            loaded.cached_header().map(|h| h.canonical_json()),
            Some(text.as_str())
        );
        // One kept for another text is never answered.
        let other = SessionState {
            header: Some(header("other").canonical_json().to_owned()),
            ..SessionState::default()
        };
        other.keep_decoded_header(&header("h"));
        assert!(other.cached_header().is_none());
    }

    #[test]
    fn an_open_run_is_kept_decoded_until_a_header_ends_it_and_never_written() {
        let mut state = SessionState::default();
        state.apply_checked(&SessionRecord::Header(header("h")), at(1));
        state.apply_checked(&SessionRecord::Run(run("running")), at(2));
        let kept = state.runs["r"].open_header().expect("kept").clone();
        assert_eq!(
            kept,
            RunHeader::decode(&state.runs["r"].header).expect("decodes")
        );
        let bytes = bincode::serialize(&state).expect("encodes");
        let loaded: SessionState = bincode::deserialize(&bytes).expect("decodes");
        assert_eq!(loaded, state);
        assert!(
            loaded.runs["r"].open_header().is_none(),
            "loaded: decoded on read"
        );
        state.apply_checked(&SessionRecord::Run(run("completed")), at(3));
        assert!(
            state.runs["r"].open_header().is_none(),
            "an ended run is not kept"
        );
        assert_eq!(bincode::serialize(&loaded).expect("encodes"), bytes);
    }
}
