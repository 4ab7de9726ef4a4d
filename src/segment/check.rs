//! Checking one session's segments against each other: ordinals, sequence numbers and the
//! chain must run on without gaps from genesis to the last frame.

use super::layout::SegmentFile;
use super::scan::{Resume, ScanResult, SegmentScan};
use crate::format::Tail;
use crate::format::{genesis_chain, ChainValue, SegmentHeader};
use crate::recovery::Problem;
use std::path::Path;

/// A segment file and what scanning it found.
#[derive(Debug, Clone)]
pub struct ScannedSegment {
    pub file: SegmentFile,
    pub result: ScanResult,
}

/// What checking a session found.
#[derive(Debug, Clone, Default)]
pub struct SessionCheck {
    /// Everything wrong, in file order.
    pub problems: Vec<Problem>,
    /// Valid records in the segments checked (all frames of a resumed segment included).
    pub record_count: u64,
    /// Sequence number and chain value after the last valid record of the valid prefix.
    pub head: (u64, ChainValue),
}

/// Checks a session's scanned segments, given in name order. With `resume`, the first of them
/// was scanned from that trusted point (see [`scan_segment_tail`](super::scan::scan_segment_tail))
/// and the segments before it are not given.
pub fn check_session(
    session_id: &str,
    segments: &[ScannedSegment],
    resume: Option<&Resume>,
) -> SessionCheck {
    let mut out = SessionCheck {
        head: resume.map_or((0, genesis_chain(session_id)), |r| (r.last_seq, r.chain)),
        ..SessionCheck::default()
    };
    let mut prev: Option<(&SegmentFile, &SegmentScan)> = None;
    let mut prefix_intact = true;
    for (i, seg) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        let file = &seg.file;
        let scan = match &seg.result {
            ScanResult::BadHeader { error, body_empty } => {
                if is_last && *body_empty {
                    out.problems.push(Problem::TornCreate {
                        file: file.path.clone(),
                        what: error.what.clone(),
                    });
                } else {
                    out.problems.push(Problem::Damage {
                        file: file.path.clone(),
                        offset: error.offset as u64,
                        what: format!("segment header does not decode: {}", error.what),
                    });
                    prefix_intact = false;
                }
                prev = None;
                continue;
            }
            ScanResult::Scanned(scan) => scan,
        };
        let before = out.problems.len();
        check_own_header(
            session_id,
            file,
            scan,
            i == 0 && resume.is_none(),
            &mut out.problems,
        );
        if let Some(r) = resume.filter(|_| i == 0) {
            if scan.header.ordinal != r.ordinal {
                out.problems.push(Problem::Damage {
                    file: file.path.clone(),
                    offset: 16,
                    what: format!(
                        "the index covers segment {} but this file is segment {}",
                        r.ordinal, scan.header.ordinal
                    ),
                });
            }
        }
        if let Some((pf, ps)) = prev {
            check_continuity(pf, ps, file, scan, &mut out.problems);
        }
        if out.problems.len() > before {
            prefix_intact = false;
        }
        if prefix_intact {
            out.record_count += scan.frame_count;
            out.head = (scan.last_seq, scan.chain);
        }
        let before_end = out.problems.len();
        check_end(file, scan, is_last, &mut out.problems);
        if out.problems[before_end..]
            .iter()
            .any(|p| !matches!(p, Problem::TornTail { .. }))
        {
            prefix_intact = false;
        }
        prev = Some((file, scan));
    }
    out
}

fn check_own_header(
    session_id: &str,
    file: &SegmentFile,
    scan: &SegmentScan,
    is_first: bool,
    problems: &mut Vec<Problem>,
) {
    problems.extend(header_problems(session_id, file, &scan.header, is_first));
}

/// What is wrong with where a segment's header places it, in the order FORMAT.md checks it:
/// another session's (byte 66), another file name's first sequence number (24), and for the
/// first segment, not ordinal 0 from sequence number 1 (16) or not from the session's genesis
/// chain value (32). Shared by the scan's check and the record reader, so both name the same
/// first problem.
pub(super) fn header_problems(
    session_id: &str,
    file: &SegmentFile,
    h: &SegmentHeader,
    is_first: bool,
) -> Vec<Problem> {
    let damage = |offset: u64, what: String| Problem::Damage {
        file: file.path.clone(),
        offset,
        what,
    };
    let mut problems = Vec::new();
    if h.session_id != session_id {
        problems.push(damage(
            66,
            format!(
                "header names session {:?}, directory is {session_id:?}",
                h.session_id
            ),
        ));
    }
    if h.first_seq != file.first_seq {
        problems.push(damage(
            24,
            format!(
                "header says first sequence {}, file name says {}",
                h.first_seq, file.first_seq
            ),
        ));
    }
    if is_first {
        if h.ordinal != 0 || h.first_seq != 1 {
            problems.push(damage(
                16,
                format!(
                    "first segment has ordinal {} and first sequence {}, expected 0 and 1",
                    h.ordinal, h.first_seq
                ),
            ));
        }
        if h.prev_chain != genesis_chain(session_id) {
            problems.push(damage(
                32,
                "first segment does not start from the session's genesis chain value".into(),
            ));
        }
    }
    problems
}

fn check_continuity(
    pf: &SegmentFile,
    ps: &SegmentScan,
    file: &SegmentFile,
    scan: &SegmentScan,
    problems: &mut Vec<Problem>,
) {
    problems.extend(continuity_problems(
        &pf.path,
        (ps.header.ordinal, ps.last_seq, &ps.chain),
        &file.path,
        &scan.header,
    ));
}

/// What is wrong with a segment as the one after `prev` (its ordinal, last sequence number and
/// final chain value): a gap or repeat in ordinals or sequence numbers, or a broken chain, each
/// a mismatch naming both files.
pub(super) fn continuity_problems(
    prev_path: &Path,
    (prev_ordinal, prev_last_seq, prev_chain): (u64, u64, &ChainValue),
    path: &Path,
    h: &SegmentHeader,
) -> Vec<Problem> {
    let mismatch = |what: String| Problem::Mismatch {
        first: prev_path.to_path_buf(),
        second: path.to_path_buf(),
        what,
    };
    let mut problems = Vec::new();
    if prev_ordinal.checked_add(1) != Some(h.ordinal) {
        problems.push(mismatch(format!(
            "segment ordinals {prev_ordinal} then {}: a gap or repeat",
            h.ordinal
        )));
    }
    if prev_last_seq.checked_add(1) != Some(h.first_seq) {
        problems.push(mismatch(format!(
            "sequence numbers end at {prev_last_seq} then start at {}: a gap or repeat",
            h.first_seq
        )));
    }
    if h.prev_chain != *prev_chain {
        problems.push(mismatch(
            "the chain is broken: the second header does not continue the first's final chain value".into(),
        ));
    }
    problems
}

fn check_end(file: &SegmentFile, scan: &SegmentScan, is_last: bool, problems: &mut Vec<Problem>) {
    let damage = |offset: u64, what: String| Problem::Damage {
        file: file.path.clone(),
        offset,
        what,
    };
    match &scan.end {
        Tail::Sealed { .. } => {}
        Tail::Eof | Tail::Zeros { .. } if is_last => {}
        Tail::Eof | Tail::Zeros { .. } => problems.push(damage(
            scan.data_end,
            "segment is followed by another but has no seal footer".into(),
        )),
        Tail::Torn { len, what } if is_last => problems.push(Problem::TornTail {
            file: file.path.clone(),
            offset: scan.data_end,
            len: *len,
            what: what.clone(),
        }),
        Tail::Torn { what, .. } => problems.push(damage(
            scan.data_end,
            format!("{what} in a segment that is followed by another"),
        )),
        Tail::Damaged { offset, what } => problems.push(damage(*offset, what.clone())),
    }
}
