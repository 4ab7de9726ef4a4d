//! A session's own records (header, message, run, run event, admission, start rejection),
//! decoded: what the session records' state applies. A store that built one hands it over as
//! it is, so a record is decoded once on its way in, not again from the text it is written as;
//! a record read back from a segment is decoded from its stored text first.

use crate::error::{Error, Result};
use crate::format::RecordKind;
use crate::model::{
    RootTurnAdmission, RootTurnRejection, RunEvent, RunHeader, SessionHeader, StoredMessage,
};

/// One decoded session record. Each variant's value holds its canonical JSON, which is what
/// is written: decoding that text gives the same record.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionRecord {
    Header(SessionHeader),
    Message(StoredMessage),
    Run(RunHeader),
    RunEvent(RunEvent),
    Admission(RootTurnAdmission),
    Rejection(RootTurnRejection),
}

impl SessionRecord {
    /// Strictly decodes a stored record of `kind`; `None` for a kind that is not a session
    /// record (a runtime event, a seal).
    pub fn decode(kind: RecordKind, payload: &[u8]) -> Result<Option<SessionRecord>> {
        let decode: fn(&str) -> Result<SessionRecord> = match kind {
            RecordKind::SessionHeader => |t| SessionHeader::decode(t).map(SessionRecord::Header),
            RecordKind::Message => |t| StoredMessage::decode(t).map(SessionRecord::Message),
            RecordKind::Run => |t| RunHeader::decode(t).map(SessionRecord::Run),
            RecordKind::RunEvent => |t| RunEvent::decode(t).map(SessionRecord::RunEvent),
            RecordKind::Admission => |t| RootTurnAdmission::decode(t).map(SessionRecord::Admission),
            RecordKind::TurnRejection => {
                |t| RootTurnRejection::decode(t).map(SessionRecord::Rejection)
            }
            _ => return Ok(None),
        };
        let text = std::str::from_utf8(payload).map_err(|_| Error::InvalidRecord {
            record: kind.name(),
            field: "<record>".into(),
            why: "is not UTF-8".into(),
        })?;
        decode(text).map(Some)
    }

    /// The kind of record it is written as.
    pub fn kind(&self) -> RecordKind {
        match self {
            SessionRecord::Header(_) => RecordKind::SessionHeader,
            SessionRecord::Message(_) => RecordKind::Message,
            SessionRecord::Run(_) => RecordKind::Run,
            SessionRecord::RunEvent(_) => RecordKind::RunEvent,
            SessionRecord::Admission(_) => RecordKind::Admission,
            SessionRecord::Rejection(_) => RecordKind::TurnRejection,
        }
    }

    /// The canonical JSON it is written as.
    pub fn canonical_json(&self) -> &str {
        match self {
            SessionRecord::Header(r) => r.canonical_json(),
            SessionRecord::Message(r) => r.canonical_json(),
            SessionRecord::Run(r) => r.canonical_json(),
            SessionRecord::RunEvent(r) => r.canonical_json(),
            SessionRecord::Admission(r) => r.canonical_json(),
            SessionRecord::Rejection(r) => r.canonical_json(),
        }
    }
}
