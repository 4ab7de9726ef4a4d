//! Verifying sessions: each on its own (its frames, chain and seals, then every payload as the
//! stores read it), on as many threads as the machine has cores, the results handed back in
//! the order of the sessions given.

use super::{payload_problems, record, PayloadProblem, SessionSummary};
use crate::recovery::Problem;
use crate::segment::check::check_session;
use crate::segment::load::scan_session_files;
use crate::storage::Storage;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// What verifying one session found.
pub(super) struct SessionChecked {
    pub findings: Vec<String>,
    pub quarantined: Vec<String>,
    pub notes: Vec<String>,
    pub summary: SessionSummary,
}

/// Sessions are checked on at most this many threads.
const MAX_THREADS: usize = 8;

/// Each of `ids` verified, by index in `ids`, in that order; `progress(done, total)` is called
/// as results come in.
pub(super) fn verify_sessions(
    storage: &dyn Storage,
    ids: &[String],
    live: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<(usize, SessionChecked)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
        .min(ids.len().max(1));
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut out: Vec<Option<SessionChecked>> = (0..ids.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(id) = ids.get(i) else { break };
                if tx.send((i, verify_session(storage, id, live))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (done, (i, checked)) in rx.iter().enumerate() {
            progress(done + 1, ids.len());
            out[i] = Some(checked);
        }
    });
    out.into_iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (i, c)))
        .collect()
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
        match p {
            Problem::TornCreate { file, .. } if never_written => out.notes.push(format!(
                "{} at byte 0: a session created and never written (its creation was interrupted); it holds no record",
                file.display()
            )),
            _ => record(p, live, &mut out.findings, &mut out.notes),
        }
    }
    out.findings.extend(
        payload_problems(storage, id)
            .iter()
            .map(PayloadProblem::describe),
    );
    out.summary.record_count = check.record_count;
    out.summary.head_seq = check.head.0;
    out.summary.head_chain = check.head.1;
    out
}
