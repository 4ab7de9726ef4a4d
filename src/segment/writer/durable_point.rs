//! What a sidecar recorded as durable is never lost (FORMAT.md, "What a sidecar recorded as
//! durable is never cut"): the check an open for writing and a read-only view both make of a
//! log against the last cover of the session's sidecar.

use crate::error::{Error, Result};
use crate::recovery::Problem;
use crate::segment::check::{ScannedSegment, SessionCheck};
use crate::segment::layout::session_dir;
use crate::segment::scan::{Resume, ScanResult};

/// Refuses a log that would lose records before `durable`, the point a sidecar recorded as
/// synced: a torn-looking tail or a torn create there is damage to acknowledged records, and so
/// is a log that stops before it with no damage at all (cut at a frame boundary, or its last
/// segments gone). `scanned` starts at segment ordinal `first`. Damage and mismatches are
/// refused as the repair plan refuses them, in its own words.
pub(crate) fn refuse_losing_durable(
    session_id: &str,
    check: &SessionCheck,
    scanned: &[ScannedSegment],
    first: u64,
    durable: &Resume,
) -> Result<()> {
    let mut refused_anyway = false;
    for p in &check.problems {
        let (file, offset) = match p {
            Problem::TornTail { file, offset, .. } => (file, *offset),
            Problem::TornCreate { file, .. } => (file, 0),
            Problem::Damage { .. } | Problem::Mismatch { .. } => {
                refused_anyway = true;
                continue;
            }
        };
        let Some(i) = scanned.iter().position(|s| &s.file.path == file) else {
            continue;
        };
        let ordinal = first.saturating_add(i as u64);
        if ordinal < durable.ordinal || (ordinal == durable.ordinal && offset < durable.data_end) {
            return Err(Error::corrupt(
                file,
                offset,
                format!(
                    "damage to records the index sidecar recorded as durable (through record {}); refusing to cut them as a torn tail",
                    durable.last_seq
                ),
            ));
        }
    }
    if refused_anyway {
        // A read-only view makes no repair plan of its own: the plan's refusal is the answer.
        crate::recovery::plan(&check.problems)?;
    }
    let (head, _) = check.head;
    if head < durable.last_seq {
        // Where the valid records stop: the end of the last segment's records, or the
        // session's directory when no segment is left.
        let (file, offset) = scanned
            .iter()
            .rev()
            .find_map(|s| match &s.result {
                ScanResult::Scanned(scan) => Some((s.file.path.clone(), scan.data_end)),
                ScanResult::BadHeader { .. } => None,
            })
            .unwrap_or_else(|| (session_dir(session_id), 0));
        return Err(Error::corrupt(
            file,
            offset,
            format!(
                "the log ends after record {head}, before record {} the index sidecar recorded as durable (segment ordinal {}, byte {}): acknowledged records are missing",
                durable.last_seq, durable.ordinal, durable.data_end
            ),
        ));
    }
    Ok(())
}
