//! Offline verification of a whole root: read-only, takes no lock, writes nothing.

mod payloads;
mod session;

pub use payloads::{payload_problems, PayloadProblem};

use crate::claims::{replay_claims, CLAIMS_FILE};
use crate::error::{Error, Result};
use crate::format::ChainValue;
use crate::recovery::Problem;
use crate::root::{read_marker, RootMarker};
use crate::segment::layout::list_sessions;
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
    /// False when the session's files could not be scanned (a finding says why): then it has
    /// no head, and the fields above are a log's start.
    pub scanned: bool,
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
    /// seen in a last segment or the claims log (a write in flight), or a last segment whose
    /// header is not yet whole (a create in flight).
    pub notes: Vec<String>,
    pub sessions: Vec<SessionSummary>,
    /// The claims log, when the root has one.
    pub claims: Option<ClaimsSummary>,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// A problem found: a finding, or a note for one that is no damage ([`Problem::is_harmless`]):
/// a torn tail or torn create where a live owner may be writing, a session's only segment
/// created and never written.
fn record(
    p: &Problem,
    (live, only_segment): (bool, bool),
    findings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    if !p.is_harmless(live, only_segment) {
        findings.push(p.describe());
        return;
    }
    notes.push(match p {
        Problem::TornTail { file, offset, .. } => format!(
            "{} at byte {offset}: the end of the data seen, a write in flight (the root is owned by a live process)",
            file.display()
        ),
        Problem::TornCreate { file, .. } if only_segment => format!(
            "{} at byte 0: a session created and never written (its creation was interrupted); it holds no record",
            file.display()
        ),
        Problem::TornCreate { file, .. } => format!(
            "{} at byte 0: a header not yet whole, a create in flight (the root is owned by a live process)",
            file.display()
        ),
        other => other.describe(),
    });
}

/// Verifies every session of the root `storage` is rooted at. Fails only when the path is not
/// a root or cannot be listed; everything found inside is a finding.
pub fn verify_root(storage: &dyn Storage) -> Result<VerifyReport> {
    verify_root_observed(storage, &|_, _| {})
}

/// [`verify_root`], calling `progress(done, total)` after each session (for a progress bar).
pub fn verify_root_observed(
    storage: &dyn Storage,
    progress: &(dyn Fn(usize, usize) + Sync),
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
    // A live owner may be writing: a torn tail or torn create at the end of a log is then a
    // write in flight.
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
    let checked = session::verify_sessions(storage, &ids, live, progress);
    for (checked, id) in checked.into_iter().zip(&ids) {
        debug_assert_eq!(
            &checked.summary.session_id, id,
            "results come back in order"
        );
        report.findings.extend(checked.findings);
        report.quarantined.extend(checked.quarantined);
        report.notes.extend(checked.notes);
        report.sessions.push(checked.summary);
    }
    Ok(report)
}

/// Replays the claims log read-only and lists quarantined tails cut from it.
fn verify_claims(storage: &dyn Storage, report: &mut VerifyReport, live: bool) -> Result<()> {
    let path = Path::new(CLAIMS_FILE);
    let bytes = match crate::storage::data_end::read_data(storage, path) {
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
        record(p, (live, false), &mut report.findings, &mut report.notes);
    }
    report.claims = Some(ClaimsSummary {
        record_count: replay.record_count,
        head_seq: replay.head.0,
        head_chain: replay.head.1,
    });
    let entries = storage
        .list_dir(Path::new(""))
        .map_err(|e| Error::io("", "list directory", e))?;
    report.quarantined.extend(
        entries
            .into_iter()
            .filter(|e| crate::segment::layout::torn_of(&e.name) == Some(CLAIMS_FILE))
            .map(|e| e.name),
    );
    Ok(())
}
