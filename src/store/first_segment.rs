//! A session with no sidecar read the short way. A session has none until its first clean
//! close (one in use by its owner while a tool reads the root), or when a crash lost it; most
//! such sessions are young and small, their first segment the whole log: read in one bounded
//! read, once its directory is listed to show no other segment.

use super::read_view::{apply_frames, FIRST_READ};
use crate::error::{Error, Result};
use crate::format::{genesis_chain, FrameCursor, FrameLayout, SegmentHeader, Tail};
use crate::index::SessionIndex;
use crate::segment::layout::{list_session, segment_file_name, session_dir};
use crate::storage::{OpenMode, Storage};
use std::path::PathBuf;

/// A log that is its first segment alone, as read: its view, and the segment's path and bytes
/// (a listing takes the events it names from them).
pub(super) struct FirstSegment {
    pub view: SessionIndex,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub layout: FrameLayout,
}

/// Whether the session's directory holds exactly the segments `paths`, in that order: a short
/// way to a view that names its segments from what it read must not pass over another.
pub(super) fn only_segments(storage: &dyn Storage, session_id: &str, paths: &[PathBuf]) -> bool {
    // A directory that cannot be listed is the general way's to report.
    list_session(storage, session_id)
        .is_ok_and(|listing| listing.segments.iter().map(|f| &f.path).eq(paths.iter()))
}

/// With no sidecar: the view of its first segment when that segment is the whole log (the
/// directory holds no other), shorter than [`FIRST_READ`], unsealed and ending cleanly, read in
/// one bounded read. `None` sends the caller the general way.
pub(super) fn first_segment_alone(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<Option<FirstSegment>> {
    let path = session_dir(session_id).join(segment_file_name(1));
    let Ok(file) = storage.open(&path, OpenMode::Read) else {
        return Ok(None);
    };
    // One read, bounded: a file that fills it is no small log (and may be any size).
    let mut bytes = vec![0u8; FIRST_READ];
    let n = file
        .read_full_at(&mut bytes, 0)
        .map_err(|e| Error::io(&path, "read", e))?;
    if n == bytes.len() {
        return Ok(None);
    }
    bytes.truncate(n);
    let Ok((header, _)) = SegmentHeader::decode(&bytes) else {
        return Ok(None);
    };
    let placed = header.session_id == session_id
        && header.ordinal == 0
        && header.first_seq == 1
        && header.prev_chain == genesis_chain(session_id);
    if !placed {
        return Ok(None);
    }
    let mut view = SessionIndex::new(session_id);
    let mut cursor = FrameCursor::for_segment(&header);
    apply_frames(
        &mut view,
        &mut cursor,
        &bytes,
        (path.as_path(), 0, header.version),
        &|_| false,
    )?;
    if !matches!(cursor.end(), Some(Tail::Eof | Tail::Zeros { .. })) {
        return Ok(None);
    }
    // The whole log only if it is the session's one segment: a later one, under any name,
    // is damage the general way reports (a segment before it lost its seal footer, or a
    // segment out of place).
    if !only_segments(storage, session_id, std::slice::from_ref(&path)) {
        return Ok(None);
    }
    Ok(Some(FirstSegment {
        view,
        path,
        layout: header.layout(),
        bytes,
    }))
}
