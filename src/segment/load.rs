//! Reading a session's segment files from storage and scanning each one.

use super::check::ScannedSegment;
use super::layout::{list_session, SessionListing};
use super::scan::scan_segment;
use crate::error::{Error, Result};
use crate::storage::{FileBytes, Storage};
use std::path::Path;

/// Reads a segment: mapped when a later segment exists (it is sealed and never changes),
/// read into memory when it is the last (a writer may still be appending to it).
pub fn read_segment(storage: &dyn Storage, path: &Path, is_last: bool) -> Result<FileBytes> {
    if is_last {
        storage
            .read_file(path)
            .map(FileBytes::Owned)
            .map_err(|e| Error::io(path, "read", e))
    } else {
        storage
            .map_file(path)
            .map_err(|e| Error::io(path, "map", e))
    }
}

/// Lists a session directory and scans every segment in it, one at a time.
pub fn scan_session_files(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<(SessionListing, Vec<ScannedSegment>)> {
    let listing = list_session(storage, session_id)?;
    let n = listing.segments.len();
    let mut scanned = Vec::with_capacity(n);
    for (i, file) in listing.segments.iter().enumerate() {
        let bytes = read_segment(storage, &file.path, i + 1 == n)?;
        scanned.push(ScannedSegment {
            file: file.clone(),
            result: scan_segment(&bytes),
        });
    }
    Ok((listing, scanned))
}
