//! Verifying sessions: each on its own (its frames, chain and seals, then every payload as the
//! stores read it), on every core, the results handed back in the order of the sessions given.

use super::{payload_problems, record, PayloadProblem, SessionSummary};
use crate::recovery::Problem;
use crate::segment::check::check_session;
use crate::segment::load::scan_session_files;
use crate::storage::Storage;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What verifying one session found.
pub(super) struct SessionChecked {
    pub findings: Vec<String>,
    pub quarantined: Vec<String>,
    pub notes: Vec<String>,
    pub summary: SessionSummary,
}

/// Each of `ids` verified, in that order; `progress(done, total)` is called as each ends.
pub(super) fn verify_sessions(
    storage: &dyn Storage,
    ids: &[String],
    live: bool,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<SessionChecked> {
    let done = AtomicUsize::new(0);
    crate::parallel::map(ids, |id| {
        let checked = verify_session(storage, id, live);
        progress(done.fetch_add(1, Ordering::Relaxed) + 1, ids.len());
        checked
    })
}

/// One session verified.
fn verify_session(storage: &dyn Storage, id: &str, live: bool) -> SessionChecked {
    let mut out = SessionChecked {
        findings: Vec::new(),
        quarantined: Vec::new(),
        notes: Vec::new(),
        summary: SessionSummary {
            session_id: id.to_owned(),
            record_count: 0,
            head_seq: 0,
            head_chain: crate::format::genesis_chain(id),
            scanned: false,
        },
    };
    let (listing, scanned) = match scan_session_files(storage, id, None) {
        Ok(x) => x,
        Err(e) => {
            out.findings.push(e.to_string());
            return out;
        }
    };
    for stray in &listing.strays {
        out.findings.push(format!(
            "{}: unexpected entry in a session directory",
            stray.display()
        ));
    }
    out.quarantined
        .extend(listing.torn.iter().map(|p| p.display().to_string()));
    let check = check_session(id, &scanned, None);
    // The session's only file, created and never written: a creation a crash cut short
    // before its first record. It holds nothing to lose or recover, so it is no damage.
    let never_written =
        scanned.len() == 1 && matches!(check.problems.as_slice(), [Problem::TornCreate { .. }]);
    for p in &check.problems {
        record(p, (live, never_written), &mut out.findings, &mut out.notes);
    }
    out.findings.extend(
        payload_problems(storage, id)
            .iter()
            .map(PayloadProblem::describe),
    );
    out.summary.scanned = true;
    out.summary.record_count = check.record_count;
    out.summary.head_seq = check.head.0;
    out.summary.head_chain = check.head.1;
    out
}
