//! Offline verification of a whole root: read-only, takes no lock, writes nothing.

use crate::claims::{replay_claims, CLAIMS_FILE};
use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::ChainValue;
use crate::format::RecordKind;
use crate::recovery::{Problem, TORN_INFIX};
use crate::root::{read_marker, RootMarker};
use crate::segment::check::check_session;
use crate::segment::layout::list_sessions;
use crate::segment::load::scan_session_files;
use crate::segment::SessionReader;
use crate::storage::Storage;
use std::path::Path;

/// What verification found for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub session_id: String,
    /// Records in the valid prefix.
    pub record_count: u64,
    /// Sequence number of the last record of the valid prefix (0 when none).
    pub head_seq: u64,
    /// The chain value after it: record it elsewhere to detect a rewritten history later.
    pub head_chain: ChainValue,
}

/// What verification found in the claims log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsSummary {
    /// Records in the valid prefix.
    pub record_count: u64,
    /// Sequence number of the last record of the valid prefix.
    pub head_seq: u64,
    /// The chain value after it.
    pub head_chain: ChainValue,
}

/// The result of verifying a root.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    pub marker: RootMarker,
    /// One line per finding: file relative to the root, byte offset, what is wrong.
    pub findings: Vec<String>,
    /// Torn tails recovery cut and kept aside (`<segment>.torn-<offset>`): not damage, history.
    pub quarantined: Vec<String>,
    /// What is not damage but worth a line: on a root a live process owns, the end of the data
    /// seen in a last segment or the claims log (a write in flight).
    pub notes: Vec<String>,
    pub sessions: Vec<SessionSummary>,
    /// The claims log, when the root has one.
    pub claims: Option<ClaimsSummary>,
}

impl VerifyReport {
    /// A problem found: a finding, but a torn tail (only ever at the end of a log) is a note
    /// when a live owner may be writing there.
    fn record(&mut self, p: &Problem, live: bool) {
        match p {
            Problem::TornTail { file, offset, .. } if live => {
                self.notes.push(format!(
                    "{} at byte {offset}: the end of the data seen, a write in flight (the root is owned by a live process)",
                    file.display()
                ))
            }
            _ => self.findings.push(p.describe()),
        }
    }

    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Verifies every session of the root `storage` is rooted at. Fails only when the path is not
/// a root or cannot be listed; everything found inside is a finding.
pub fn verify_root(storage: &dyn Storage) -> Result<VerifyReport> {
    verify_root_observed(storage, &mut |_, _| {})
}

/// [`verify_root`], calling `progress(done, total)` after each session (for a progress bar).
pub fn verify_root_observed(
    storage: &dyn Storage,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<VerifyReport> {
    let marker = read_marker(storage)?;
    let mut report = VerifyReport {
        marker,
        findings: Vec::new(),
        quarantined: Vec::new(),
        notes: Vec::new(),
        sessions: Vec::new(),
        claims: None,
    };
    // A live owner may be writing: a torn tail at the end of a log is then a write in flight.
    let live = storage
        .is_locked(Path::new(crate::root::LOCK_FILE))
        .unwrap_or(false);
    verify_claims(storage, &mut report, live)?;
    let (ids, strays) = list_sessions(storage)?;
    for stray in strays {
        report
            .findings
            .push(format!("{}: not a session directory", stray.display()));
    }
    let total = ids.len();
    for (done, id) in ids.into_iter().enumerate() {
        progress(done, total);
        let (listing, scanned) = match scan_session_files(storage, &id, None) {
            Ok(x) => x,
            Err(e) => {
                report.findings.push(e.to_string());
                continue;
            }
        };
        for stray in &listing.strays {
            report.findings.push(format!(
                "{}: unexpected entry in a session directory",
                stray.display()
            ));
        }
        report
            .quarantined
            .extend(listing.torn.iter().map(|p| p.display().to_string()));
        let check = check_session(&id, &scanned, None);
        // The session's only file, created and never written: a creation a crash cut short
        // before its first record. It holds nothing to lose or recover, so it is no damage.
        let never_written =
            scanned.len() == 1 && matches!(check.problems.as_slice(), [Problem::TornCreate { .. }]);
        for p in &check.problems {
            match p {
                Problem::TornCreate { file, .. } if never_written => report.notes.push(format!(
                    "{} at byte 0: a session created and never written (its creation was interrupted); it holds no record",
                    file.display()
                )),
                _ => report.record(p, live),
            }
        }
        report.findings.extend(
            payload_problems(storage, &id)
                .iter()
                .map(PayloadProblem::describe),
        );
        report.sessions.push(SessionSummary {
            session_id: id,
            record_count: check.record_count,
            head_seq: check.head.0,
            head_chain: check.head.1,
        });
    }
    Ok(report)
}

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
/// and decode as a canonical RuntimeEvent, a session header or message as MAKA-MODEL §5 and §6
/// say, or the session could not be read by the store though its frames are sound. One problem
/// per record that does not, in sequence order.
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
            RecordKind::SessionHeader => scratch.apply_header(&r.payload, session_id),
            RecordKind::Message => scratch.apply_message(&r.payload, at),
            RecordKind::Run | RecordKind::RunEvent => {
                state.apply_run_record(r.kind, &r.payload, session_id, at)
            }
            RecordKind::Admission => scratch.apply_admission(&r.payload, session_id),
            RecordKind::TurnRejection => scratch.apply_rejection(&r.payload, session_id),
            _ => continue,
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

/// Replays the claims log read-only and lists quarantined tails cut from it.
fn verify_claims(storage: &dyn Storage, report: &mut VerifyReport, live: bool) -> Result<()> {
    let path = Path::new(CLAIMS_FILE);
    let bytes = match storage.read_file(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        // Something at its name that cannot be read as a claims log (a FIFO, a symlink) is a
        // finding; the sessions are still verified.
        Err(e) => {
            report
                .findings
                .push(format!("{CLAIMS_FILE} at byte 0: {e}"));
            return Ok(());
        }
    };
    let replay = replay_claims(&bytes, &report.marker.root_id_bytes()?);
    for p in &replay.problems {
        report.record(p, live);
    }
    report.claims = Some(ClaimsSummary {
        record_count: replay.record_count,
        head_seq: replay.head.0,
        head_chain: replay.head.1,
    });
    let prefix = format!("{CLAIMS_FILE}{TORN_INFIX}");
    let entries = storage
        .list_dir(Path::new(""))
        .map_err(|e| Error::io("", "list directory", e))?;
    report.quarantined.extend(
        entries
            .into_iter()
            .filter(|e| e.name.starts_with(&prefix))
            .map(|e| e.name),
    );
    Ok(())
}
