//! Reading a session's segment files from storage and scanning each one.

use super::check::ScannedSegment;
use super::layout::{list_session, session_dir, SessionListing};
use super::scan::{scan_segment, scan_segment_tail, Resume};
use crate::error::{Error, Result};
use crate::format::HEADER_LEN;
use crate::storage::{data_end, FileBytes, OpenMode, Storage};
use std::path::Path;

/// Reads a segment: mapped when a later segment exists (it is sealed and never changes),
/// read into memory when it is the last (a writer may still be appending to it). Either way
/// up to its last non-zero byte and at most a frame's length of zeros ([`data_end`]): a file
/// can claim any length of zeros for nothing, and they are no data.
pub fn read_segment(storage: &dyn Storage, path: &Path, is_last: bool) -> Result<FileBytes> {
    let file = storage
        .open(path, OpenMode::Read)
        .map_err(|e| Error::io(path, "open", e))?;
    if !is_last {
        // A sealed segment ends in its footer, or (a roll interrupted before the zeros were
        // cut) in zeros: only then is it read instead of mapped.
        // Mapping refuses a file with more holes than a reader holds, as reading does.
        if data_end::needed_whole(&*file).map_err(|e| Error::io(path, "read", e))? {
            return storage
                .map_file(path)
                .map_err(|e| Error::io(path, "map", e));
        }
    }
    data_end::read_needed(&*file, 0)
        .map(FileBytes::Owned)
        .map_err(|e| Error::io(path, "read", e))
}

/// Lists a session directory and scans its segments one at a time: all of them, or with
/// `resume` only the bytes after that trusted point (the segments before it are not read).
pub fn scan_session_files(
    storage: &dyn Storage,
    session_id: &str,
    resume: Option<&Resume>,
) -> Result<(SessionListing, Vec<ScannedSegment>)> {
    let listing = list_session(storage, session_id)?;
    let n = listing.segments.len();
    let start = resume.map_or(0, |r| r.ordinal as usize);
    if resume.is_some() && start >= n {
        return Err(Error::corrupt(
            session_dir(session_id),
            0,
            format!("the index covers segment {start}, the session has {n}"),
        ));
    }
    let mut scanned = Vec::with_capacity(n - start);
    for (i, file) in listing.segments.iter().enumerate().skip(start) {
        let result = match resume.filter(|_| i == start) {
            Some(r) => {
                let (header, tail) = read_segment_tail(storage, &file.path, r.last_frame_offset)?;
                scan_segment_tail(&header, &tail, r)
            }
            None => scan_segment(&read_segment(storage, &file.path, i + 1 == n)?),
        };
        scanned.push(ScannedSegment {
            file: file.clone(),
            result,
        });
    }
    Ok((listing, scanned))
}

/// Reads a segment's header bytes and its bytes from `from` on, to its last non-zero byte and
/// at most a frame's length of zeros ([`data_end`]).
pub fn read_segment_tail(
    storage: &dyn Storage,
    path: &Path,
    from: u64,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let file = storage
        .open(path, OpenMode::Read)
        .map_err(|e| Error::io(path, "open", e))?;
    let mut header = vec![0u8; HEADER_LEN];
    let n = file
        .read_full_at(&mut header, 0)
        .map_err(|e| Error::io(path, "read", e))?;
    header.truncate(n);
    let tail = data_end::read_needed(&*file, from).map_err(|e| Error::io(path, "read", e))?;
    Ok((header, tail))
}
