//! Opening a session's writer: recovering what follows a trusted point by the decision table,
//! making what it adopts durable, and opening (or creating) the segment to append to.

use super::{refuse_losing_durable, Head, SegmentSink, SegmentWriter, WriterConfig};
use crate::commit::{AppendFile, GroupCommit};
use crate::error::{Error, Result};
use crate::format::{
    validate_session_id, SegmentHeader, Tail, FOOTER_LEN, HEADER_LEN, MAX_PAYLOAD_LIMIT,
};
use crate::recovery::{apply, plan, RecoveryReport};
use crate::root::{LogHold, Owner, Unsynced};
use crate::segment::check::check_session;
use crate::segment::layout::{segment_file_name, session_dir, SESSIONS_DIR};
use crate::segment::load::scan_session_files;
use crate::segment::scan::{Resume, ScanResult, SegmentScan};
use crate::storage::{EntryKind, OpenMode, Storage};
use std::path::Path;

impl SegmentWriter {
    /// Opens a session for writing under the owner's lease: creates it if absent, otherwise
    /// recovers it by the decision table (cutting a torn tail, removing a torn create, or
    /// refusing with nothing written).
    pub fn open(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        SegmentWriter::open_resumed(owner, session_id, config, None)
    }

    /// [`SegmentWriter::open`], trusting the log up to `resume` (as its index sidecar vouches for
    /// it) and recovering only what follows: the covered bytes are not read again.
    pub fn open_resumed(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
        resume: Option<Resume>,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        SegmentWriter::open_guarded(owner, session_id, config, resume, resume)
    }

    /// [`SegmentWriter::open_resumed`], where `durable` is a point a sidecar recorded as synced
    /// even if it no longer vouches for the log (its covers do not hold): recovery never cuts a
    /// torn tail, nor removes a torn create, before it. Damage there is damage to records that
    /// were acknowledged, and the session is refused, naming the file and offset.
    pub fn open_guarded(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
        resume: Option<Resume>,
        durable: Option<Resume>,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        validate_session_id(session_id).map_err(Error::InvalidInput)?;
        if config.max_payload == 0 || config.max_payload > MAX_PAYLOAD_LIMIT {
            return Err(Error::InvalidInput(format!(
                "max_payload must be 1..={MAX_PAYLOAD_LIMIT}"
            )));
        }
        let hold = owner.hold_log(&crate::segment::layout::session_log_name(session_id))?;
        let dir = session_dir(session_id);
        let failures = hold.failures();
        if let Some(failed) = hold.take_failed() {
            rewrite_failed(&**owner.storage(), session_id, &failed)
                .inspect_err(|_| failures.failed_in(&failed.file, failed.offset))?;
        }
        SegmentWriter::open_held(owner, session_id, config, resume, durable, hold).inspect_err(
            |e| {
                // Whatever the open wrote may sit unsynced: the next open writes it all again.
                if matches!(e, Error::Io { .. } | Error::Poisoned { .. }) {
                    failures.failed_in(&dir, 0);
                }
            },
        )
    }

    fn open_held(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
        resume: Option<Resume>,
        durable: Option<Resume>,
        hold: LogHold,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        let storage = owner.storage().clone();
        let dir = session_dir(session_id);
        owner.ensure_root_dir(Path::new(SESSIONS_DIR))?;
        let created = ensure_session_dir(owner, &dir)?;

        // A directory made just now holds nothing to scan.
        let scanned = if created {
            Vec::new()
        } else {
            scan_session_files(&*storage, session_id, resume.as_ref())?.1
        };
        let check = check_session(session_id, &scanned, resume.as_ref());
        if let Some(d) = durable {
            let first = resume.map_or(0, |r| r.ordinal);
            refuse_losing_durable(session_id, &check, &scanned, first, &d)?;
        }
        let repairs = plan(&check.problems)?;
        let report = apply(&*storage, repairs)?;
        let (head_seq, head_chain) = check.head;
        // A resume point comes from a sidecar, written only once everything it covers was
        // synced (and its directory with it): when nothing follows it (no record, no footer,
        // no newer segment a roll created), there is nothing that could still sit unsynced in
        // the page cache of a process that died. A directory made just now was synced into
        // `sessions/`, and its segment is created by the write protocol below.
        let nothing_after = matches!(scanned.as_slice(), [only] if matches!(
            &only.result,
            ScanResult::Scanned(s) if matches!(s.end, Tail::Eof | Tail::Zeros { .. })
        ));
        let vouched = created
            || (resume.is_some_and(|r| r.last_seq == head_seq)
                && nothing_after
                && report.repairs.is_empty());
        if !vouched {
            write_back_scanned(&*storage, &scanned, resume)?;
        }

        let last = scanned.iter().rev().find_map(|s| match &s.result {
            ScanResult::Scanned(scan) => Some((s.file.path.clone(), scan.clone())),
            ScanResult::BadHeader { .. } => None,
        });
        let (file, head) = match last {
            Some((path, scan)) if !matches!(scan.end, Tail::Sealed { .. }) => {
                let mut file =
                    AppendFile::open(&*storage, &path, scan.data_end, config.prealloc())?;
                // The bytes recovery adopted may still sit in the page cache of a process
                // that died: make them durable before anything builds on them.
                if !vouched {
                    file.sync()?;
                }
                let head = Head {
                    chain: head_chain,
                    ordinal: scan.header.ordinal,
                    frames: scan.frame_count,
                    len: scan.data_end,
                    max_payload: scan.header.max_payload,
                    layout: scan.header.layout(),
                };
                (file, head)
            }
            sealed_or_none => {
                if let Some((path, scan)) = &sealed_or_none {
                    finish_interrupted_seal(&*storage, path, scan)?;
                }
                let ordinal = match (&sealed_or_none, resume) {
                    (Some((_, s)), _) => s.header.ordinal.checked_add(1),
                    (None, Some(r)) => r.ordinal.checked_add(1),
                    (None, None) => Some(0),
                };
                let (Some(ordinal), Some(first_seq)) = (ordinal, head_seq.checked_add(1)) else {
                    return Err(Error::corrupt(
                        &dir,
                        0,
                        "segment ordinals or sequence numbers are exhausted",
                    ));
                };
                let header = SegmentHeader {
                    version: owner.marker().format_version,
                    max_payload: config.max_payload,
                    ordinal,
                    first_seq,
                    prev_chain: head_chain,
                    session_id: session_id.to_owned(),
                };
                let path = dir.join(segment_file_name(header.first_seq));
                let file =
                    AppendFile::create(&*storage, &path, &header.encode(), config.prealloc())?;
                let head = Head {
                    chain: head_chain,
                    ordinal: header.ordinal,
                    frames: 0,
                    len: HEADER_LEN as u64,
                    max_payload: config.max_payload,
                    layout: header.layout(),
                };
                (file, head)
            }
        };
        // Directory entries made by a process that died before syncing them.
        // (The root's entry for `sessions/` was made durable by `ensure_root_dir`.)
        if !vouched {
            storage
                .sync_dir(&dir)
                .map_err(|e| Error::io(&dir, "fsync directory", e))?;
            owner.sync_root_dir_shared(Path::new(SESSIONS_DIR))?;
        }
        let sink = SegmentSink {
            storage,
            file,
            config: config.clone(),
            failures: hold.failures(),
        };
        Ok((
            SegmentWriter {
                commit: GroupCommit::new(head, sink, head_seq),
                config,
                session_id: session_id.to_owned(),
                dir,
                version: owner.marker().format_version,
                _hold: hold,
            },
            report,
        ))
    }
}

/// A process that died after a failed sync may have left bytes only the page cache holds
/// (fsyncgate): each file recovery read is compared with the disk from the point a sidecar
/// vouches for (or its start), and written back from where they differ, before anything is
/// acknowledged on top of it. The last segment is compared up to its end of data (what follows
/// is zeros this writer overwrites), sealed ones to their end.
fn write_back_scanned(
    storage: &dyn Storage,
    scanned: &[crate::segment::check::ScannedSegment],
    resume: Option<Resume>,
) -> Result<()> {
    for s in scanned {
        let (from, to) = match &s.result {
            ScanResult::Scanned(scan) => {
                let from = resume
                    .filter(|r| r.ordinal == scan.header.ordinal)
                    .map_or(0, |r| r.data_end);
                let to = match scan.end {
                    Tail::Sealed { .. } => u64::MAX,
                    _ => scan.data_end,
                };
                (from, to)
            }
            ScanResult::BadHeader { .. } => (0, u64::MAX),
        };
        crate::commit::write_back_unpersisted(storage, &s.file.path, from, to)?;
    }
    Ok(())
}

/// Writes again, and syncs, what a failure in this process left unsynced: `failed.file` from
/// its offset and every later segment, or every segment when the file is the session's
/// directory.
fn rewrite_failed(storage: &dyn Storage, session_id: &str, failed: &Unsynced) -> Result<()> {
    let dir = session_dir(session_id);
    let present = storage
        .entry_kind(&dir)
        .map_err(|e| Error::io(&dir, "stat", e))?;
    if present.is_none() {
        return Ok(());
    }
    let segments = crate::segment::layout::list_session(storage, session_id)?.segments;
    let from_dir = failed.file == session_dir(session_id);
    let files: Vec<_> = segments
        .into_iter()
        .filter_map(|s| match s.path.cmp(&failed.file) {
            _ if from_dir => Some((s.path, 0)),
            std::cmp::Ordering::Less => None,
            std::cmp::Ordering::Equal => Some((s.path, failed.offset)),
            std::cmp::Ordering::Greater => Some((s.path, 0)),
        })
        .collect();
    crate::commit::rewrite_and_sync(storage, &files)
}

/// Completes a seal a crash interrupted: cuts zeros left after the footer and makes the
/// segment durable before the next segment is created after it.
fn finish_interrupted_seal(storage: &dyn Storage, path: &Path, scan: &SegmentScan) -> Result<()> {
    let file = storage
        .open(path, OpenMode::ReadWrite)
        .map_err(|e| Error::io(path, "open", e))?;
    if let Tail::Sealed { trailing_zeros, .. } = scan.end {
        if trailing_zeros > 0 {
            file.set_len(scan.data_end + FOOTER_LEN as u64)
                .map_err(|e| Error::io(path, "truncate", e))?;
        }
    }
    file.sync_data()
        .map_err(|e| Error::io(path, "fdatasync", e))
}

/// Creates a session's directory if absent and makes its entry durable, sharing the sync of
/// `sessions/` with concurrent creators; true when it was created.
fn ensure_session_dir(owner: &Owner, dir: &Path) -> Result<bool> {
    let storage = owner.storage();
    match storage
        .entry_kind(dir)
        .map_err(|e| Error::io(dir, "stat", e))?
    {
        Some(EntryKind::Dir) => Ok(false),
        Some(_) => Err(Error::corrupt(dir, 0, "expected a directory")),
        None => {
            storage
                .create_dir(dir)
                .map_err(|e| Error::io(dir, "create directory", e))?;
            owner.sync_root_dir_shared(Path::new(SESSIONS_DIR))?;
            Ok(true)
        }
    }
}
