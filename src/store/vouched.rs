//! The short way to a session's read-only view: its sidecar vouches for the whole log, checked
//! against it the way an open for writing checks it (the earlier segments sealed where the
//! covers end, the last covered frame in place with its sequence number and chain value) and
//! caught up over the few bytes after it, with the segment files named from the covers.

use super::live::utf8;
use super::read_view::apply_frames;
use super::stored::StoredIds;
use crate::error::{Error, Result};
use crate::format::{
    FrameLayout, Tail, FOOTER_LEN, HEADER_LEN, MAX_FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::index::{
    decode_sidecar_header, decode_sidecar_state, find_ids, id_hash, resume_point,
    section_unchecked, RuntimeInvocation, SessionIndex,
};
use crate::segment::frames_at::payload_of;
use crate::segment::layout::{segment_file_name, session_dir};
use crate::segment::{scan_segment_tail, FramesAt, ScanResult};
use crate::storage::data_end::read_needed;
use crate::storage::{OpenMode, Storage};
use std::path::PathBuf;

/// Segments whose covered data ends within this many bytes are read whole, in one call.
const WHOLE_READ: u64 = 12 << 10;

/// A view read the short way, with the bytes of its last segment it read: kept events that
/// lie there are taken from them, the others read from their segments.
pub(super) struct Vouched {
    pub(super) view: SessionIndex,
    pub(super) paths: Vec<PathBuf>,
    pub(super) last_ordinal: u64,
    /// Bytes of the last segment from offset `from` on.
    pub(super) bytes: Vec<u8>,
    pub(super) from: u64,
    /// How the last segment's frames are laid out.
    pub(super) layout: FrameLayout,
}

impl Vouched {
    pub(super) fn invocations(self, storage: &dyn Storage) -> Result<Vec<RuntimeInvocation>> {
        let id = self.view.session_id.clone();
        let mut frames = FramesAt::with_paths(storage, &id, self.paths.clone());
        self.view.invocations(&mut |at| {
            let here = (at.ordinal == self.last_ordinal && at.offset >= self.from)
                .then(|| (at.offset - self.from) as usize)
                .and_then(|i| self.bytes.get(i..))
                .and_then(|b| payload_of(b, self.layout, at.record_seq))
                .map(<[u8]>::to_vec);
            let payload = match here {
                Some(p) => p,
                None => frames.payload(at.ordinal, at.offset, at.record_seq)?,
            };
            utf8(payload, &id, at.offset)
        })
    }
}

/// The sidecar's view caught up over a clean tail, if the sidecar holds for the log and the log
/// goes on no further than its last covered segment; `None` sends the caller the general way.
pub(super) fn vouched_view(
    storage: &dyn Storage,
    session_id: &str,
    bytes: &[u8],
) -> Result<Option<Vouched>> {
    let Ok(header) = decode_sidecar_header(bytes) else {
        return Ok(None);
    };
    // An older sidecar holds no session state, so it vouches for nothing.
    if header.version != crate::index::SIDECAR_VERSION {
        return Ok(None);
    }
    let Ok(mut view) = decode_sidecar_state(bytes, &header) else {
        return Ok(None);
    };
    let (Some(last), Some(resume)) = (view.covers.last().cloned(), resume_point(&view)) else {
        return Ok(None);
    };
    if !crate::index::belongs_to(&view, session_id)
        || last.last_seq == u64::MAX
        || view
            .covers
            .iter()
            .enumerate()
            .any(|(k, c)| c.ordinal != k as u64)
    {
        return Ok(None);
    }
    let dir = session_dir(session_id);
    // A segment's first sequence number follows the last one of the segment before it.
    let mut first_seq = 1;
    let mut paths = Vec::with_capacity(view.covers.len());
    for c in &view.covers[..view.covers.len() - 1] {
        let path = dir.join(segment_file_name(first_seq));
        paths.push(path.clone());
        let sealed_here = storage
            .open(&path, OpenMode::Read)
            .and_then(|f| f.size())
            .is_ok_and(|size| Some(size) == c.data_end.checked_add(FOOTER_LEN as u64));
        if !sealed_here {
            return Ok(None);
        }
        let Some(next) = c.last_seq.checked_add(1) else {
            return Ok(None);
        };
        first_seq = next;
    }
    let path = dir.join(segment_file_name(first_seq));
    paths.push(path.clone());
    // The covers vouch for these segments only: one more, under any name, is the general
    // way's to judge.
    if !super::first_segment::only_segments(storage, session_id, &paths) {
        return Ok(None);
    }
    let Ok(file) = storage.open(&path, OpenMode::Read) else {
        return Ok(None);
    };
    let frame_len = last.data_end.checked_sub(last.last_frame_offset);
    if frame_len.is_none_or(|n| n > MAX_FRAME_OVERHEAD as u64 + u64::from(MAX_PAYLOAD_LIMIT)) {
        return Ok(None);
    }
    let read_err = |e| Error::io(&path, "read", e);
    // A small segment is read whole in one call; a large one as its header and its end.
    let (head, bytes_from, last_bytes) = if last.data_end <= WHOLE_READ {
        let whole = read_needed(&*file, 0).map_err(read_err)?;
        (whole[..HEADER_LEN.min(whole.len())].to_vec(), 0, whole)
    } else {
        // A frame the file does not reach is the sidecar's fault, not a read to try (one at
        // 2^63 or past fails with EINVAL, an I/O error blamed on a sound segment).
        if last.data_end > file.size().map_err(|e| Error::io(&path, "stat", e))? {
            return Ok(None);
        }
        let mut head = vec![0u8; HEADER_LEN];
        let n = file.read_full_at(&mut head, 0).map_err(read_err)?;
        head.truncate(n);
        let from = last.last_frame_offset;
        (head, from, read_needed(&*file, from).map_err(read_err)?)
    };
    if bytes_from + (last_bytes.len() as u64) < last.data_end {
        return Ok(None);
    }
    let from_last = last_bytes
        .get((last.last_frame_offset - bytes_from) as usize..)
        .unwrap_or(&[]);
    // The frame the cover names is read again by the scan: one not there ends it as damage.
    let scan = match scan_segment_tail(&head, from_last, &resume) {
        ScanResult::Scanned(scan) => scan,
        ScanResult::BadHeader { .. } => return Ok(None),
    };
    let placed = scan.header.session_id == session_id
        && scan.header.ordinal == last.ordinal
        && scan.header.first_seq == first_seq;
    if !placed || !matches!(scan.end, Tail::Eof | Tail::Zeros { .. }) {
        return Ok(None);
    }
    // Ids the sidecar holds, for events repeated in the tail: a hash match is confirmed by
    // reading the stored event back (each frame once), as the general path does.
    let ids = section_unchecked(bytes, &header, 2);
    let stored = StoredIds::new(storage, session_id);
    let known = |id: &str| {
        find_ids(ids, id_hash(id)).is_ok_and(|entries| entries.iter().any(|e| stored.holds(e, id)))
    };
    let mut cursor = resume.cursor(&scan.header, from_last);
    let segment = (path.as_path(), last.ordinal, scan.header.version);
    let applied = apply_frames(&mut view, &mut cursor, from_last, segment, &known);
    // Ids that cost more to confirm than the segments hold: the general way, which rebuilds.
    if stored.exhausted() {
        return Ok(None);
    }
    applied?;
    Ok(Some(Vouched {
        view,
        paths,
        last_ordinal: last.ordinal,
        bytes: last_bytes,
        from: bytes_from,
        layout: scan.header.layout(),
    }))
}
