//! The records of a session's valid prefix read as the stores will read them.

use crate::event::RuntimeEvent;
use crate::format::RecordKind;
use crate::segment::SessionReader;
use crate::storage::Storage;

/// A record whose frame is sound but whose payload the stores could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadProblem {
    /// The segment holding it, relative to the root.
    pub file: std::path::PathBuf,
    pub offset: u64,
    pub seq: u64,
    pub kind: RecordKind,
    pub why: String,
}

impl PayloadProblem {
    /// The finding `verify` prints.
    pub fn describe(&self) -> String {
        format!(
            "{} at byte {}: {} record {} does not decode: {}",
            self.file.display(),
            self.offset,
            self.kind.name(),
            self.seq,
            self.why
        )
    }
}

/// Reads every record of the valid prefix as the stores will: a runtime event must be UTF-8
/// and decode as a canonical RuntimeEvent, and a session record (header, message, run, run
/// event, admission, start rejection) as MAKA-MODEL §5–§8 say and as the view applies it, or
/// the session could not be read by the store though its frames are sound. One problem per
/// record that does not, in sequence order.
pub fn payload_problems(storage: &dyn Storage, session_id: &str) -> Vec<PayloadProblem> {
    let mut problems = Vec::new();
    let Ok(reader) = SessionReader::open(storage, session_id, 1) else {
        return problems;
    };
    // Run events are checked against the runs before them, as the view applies them.
    let mut state = crate::index::SessionState::default();
    for record in reader {
        // Damage to the frames was reported by the scan.
        let Ok(r) = record else {
            break;
        };
        // The same checks the session's view applies when it reads the record.
        let mut scratch = crate::index::SessionState::default();
        let at = crate::index::StoredAt {
            record_seq: r.seq,
            ordinal: r.ordinal,
            offset: r.offset,
        };
        let decoded = match r.kind {
            RecordKind::RuntimeEvent => std::str::from_utf8(&r.payload)
                .map_err(|_| "it is not UTF-8".to_owned())
                .and_then(|text| {
                    RuntimeEvent::decode(text)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
            _ if r.format_version < 2 => continue,
            RecordKind::Run | RecordKind::RunEvent => {
                state.apply_stored(r.kind, &r.payload, session_id, at)
            }
            kind => scratch.apply_stored(kind, &r.payload, session_id, at),
        };
        if let Err(why) = decoded {
            problems.push(PayloadProblem {
                file: r.file,
                offset: r.offset,
                seq: r.seq,
                kind: r.kind,
                why,
            });
        }
    }
    problems
}
