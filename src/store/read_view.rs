//! A session's view for reading: what its files hold, with no write hold taken and nothing
//! written.
//!
//! The common case is a session closed cleanly: its sidecar vouches for the whole log. Then the
//! view is the sidecar's, checked against the log the way an open for writing checks it (the
//! earlier segments sealed where the covers end, the last covered frame in place with its
//! sequence number and chain value), caught up over the few bytes after it, with the segment
//! files named from the covers instead of listing the directory: one read of the sidecar and
//! one open of the last segment. (A segment after an unsealed one is damage no crash leaves;
//! this view does not look for it, `makalog verify` and an open for writing report it.)
//! A session with no sidecar (not closed yet, or a crash lost it) whose first segment is its
//! whole log, small and ending cleanly, is read from that segment alone (`first_segment`).
//! Any other session (a damaged or foreign sidecar, a roll after it, a torn or damaged tail, a
//! larger log with no sidecar) takes the general path: the sidecar caught up through the
//! session reader, or a rebuild, which report damage as an open for writing would. Files are
//! opened by name under the session's directory, which is checked to be one first: a symlink
//! there is never followed.

use super::first_segment::first_segment_alone;
use super::live::{caught_up, load_sidecar, sidecar_path, utf8};
use super::stored::stored_event;
use crate::error::{Error, Result};
use crate::format::{
    decode_frame, FrameCursor, FrameDecode, FrameLayout, RecordKind, SegmentHeader, Tail,
    FOOTER_LEN, HEADER_LEN, MAX_FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::index::{
    decode_sidecar_header, decode_sidecar_state, find_ids, id_hash, invocations_from_log, rebuild,
    resume_point, section_unchecked, RecordRef, RuntimeInvocation, SessionIndex,
};
use crate::segment::frames_at::payload_of;
use crate::segment::layout::{segment_file_name, session_dir};
use crate::segment::{scan_segment_tail, FramesAt, ScanResult};
use crate::storage::{EntryKind, OpenMode, Storage, StorageFile};
use std::io::ErrorKind;
use std::path::PathBuf;

/// Segments whose covered data ends within this many bytes are read whole, in one call.
const WHOLE_READ: u64 = 12 << 10;

/// The first read of a file asks for this many bytes: a small session's sidecar and segment
/// each come in one read.
pub(super) const FIRST_READ: usize = 16 << 10;

/// The session's invocations as its files hold them; none when it has no directory.
pub(crate) fn read_only_invocations(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<Vec<RuntimeInvocation>> {
    match read_only_view(storage, session_id)? {
        ReadOnly::Absent => Ok(Vec::new()),
        ReadOnly::Vouched(vouched) => vouched.invocations(storage),
        ReadOnly::General(view) => invocations_from_log(storage, &view),
    }
}

/// The session's view as its files hold it: the session's state read the short way when the
/// sidecar vouches for the log (or, with no sidecar, the first segment is the whole log), the
/// general way otherwise; the default for a session with no directory.
pub(crate) fn read_only_state(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<crate::index::SessionState> {
    Ok(match read_only_view(storage, session_id)? {
        ReadOnly::Absent => Default::default(),
        ReadOnly::Vouched(vouched) => vouched.view.session,
        ReadOnly::General(view) => view.session,
    })
}

/// How a session's files were read.
enum ReadOnly {
    /// The session has no directory.
    Absent,
    /// Read the short way: its sidecar vouches for the log (a session closed cleanly), or the
    /// log, with no sidecar, is its first segment alone.
    Vouched(Vouched),
    /// Its sidecar caught up through the session reader, or a rebuild.
    General(SessionIndex),
}

fn read_only_view(storage: &dyn Storage, session_id: &str) -> Result<ReadOnly> {
    // Every way below opens files by name under the session's directory, which would follow a
    // symlink there out of the root: its kind is checked first (one lstat, no listing).
    let dir = session_dir(session_id);
    match storage
        .entry_kind(&dir)
        .map_err(|e| Error::io(&dir, "stat", e))?
    {
        None => return Ok(ReadOnly::Absent),
        Some(EntryKind::Dir) => {}
        Some(_) => {
            let why = "not a directory (a symlink is never followed)";
            return Err(Error::io(&dir, "open", std::io::Error::other(why)));
        }
    }
    let path = sidecar_path(session_id);
    match read_whole(storage, &path) {
        Ok(bytes) => {
            if let Some(vouched) = vouched_view(storage, session_id, &bytes)? {
                return Ok(ReadOnly::Vouched(vouched));
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(first) = first_segment_alone(storage, session_id)? {
                return Ok(ReadOnly::Vouched(Vouched {
                    view: first.view,
                    paths: vec![first.path],
                    last_ordinal: 0,
                    bytes: first.bytes,
                    from: 0,
                    layout: first.layout,
                }));
            }
        }
        Err(_) => {}
    }
    let view = match load_sidecar(storage, session_id)? {
        Some(mut live) => {
            caught_up(storage, &mut live)?;
            live.view
        }
        None => rebuild(storage, session_id)?,
    };
    Ok(ReadOnly::General(view))
}

/// A view read the short way, with the bytes of its last segment it read: kept events that
/// lie there are taken from them, the others read from their segments.
struct Vouched {
    view: SessionIndex,
    paths: Vec<PathBuf>,
    last_ordinal: u64,
    /// Bytes of the last segment from offset `from` on.
    bytes: Vec<u8>,
    from: u64,
    /// How the last segment's frames are laid out.
    layout: FrameLayout,
}

impl Vouched {
    fn invocations(self, storage: &dyn Storage) -> Result<Vec<RuntimeInvocation>> {
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

/// A whole file, through one open handle.
fn read_whole(storage: &dyn Storage, path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    read_from(&*storage.open(path, OpenMode::Read)?, 0)
}

/// A file's bytes from `at` to its end, in as few reads as it takes: a read that returns less
/// than asked is taken as the end (it is, for regular files; and whatever was cut short, the
/// sidecar's section table and the frames' checks find). No stat is needed first.
fn read_from(file: &dyn StorageFile, at: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; FIRST_READ];
    let mut done = 0;
    loop {
        // One read a round: a short read is the end (see above), so a small file costs one
        // system call, not a second one to see the end.
        done += file.read_at(&mut buf[done..], at + done as u64)?;
        if done < buf.len() {
            break;
        }
        let more = buf.len();
        buf.resize(buf.len() + more, 0);
    }
    buf.truncate(done);
    Ok(buf)
}

/// The sidecar's view caught up over a clean tail, if the sidecar holds for the log and the log
/// goes on no further than its last covered segment; `None` sends the caller the general way.
fn vouched_view(storage: &dyn Storage, session_id: &str, bytes: &[u8]) -> Result<Option<Vouched>> {
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
    if view.session_id != session_id
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
        let whole = read_from(&*file, 0).map_err(read_err)?;
        (whole[..HEADER_LEN.min(whole.len())].to_vec(), 0, whole)
    } else {
        let mut head = vec![0u8; HEADER_LEN];
        let n = file.read_full_at(&mut head, 0).map_err(read_err)?;
        head.truncate(n);
        let from = last.last_frame_offset;
        (head, from, read_from(&*file, from).map_err(read_err)?)
    };
    if bytes_from + (last_bytes.len() as u64) < last.data_end {
        return Ok(None);
    }
    let from_last = last_bytes
        .get((last.last_frame_offset - bytes_from) as usize..)
        .unwrap_or(&[]);
    let covered = (last.data_end - last.last_frame_offset) as usize;
    let Ok((header_seen, _)) = SegmentHeader::decode(&head) else {
        return Ok(None);
    };
    let in_place = matches!(
        decode_frame::<RecordKind>(
            from_last.get(..covered).unwrap_or(&[]),
            header_seen.layout(),
            u32::MAX
        ),
        Ok(FrameDecode::Frame(f, used))
            if used == covered && f.seq == last.last_seq && f.chain == last.chain
    );
    if !in_place {
        return Ok(None);
    }
    let tail = &from_last[covered..];
    let scan = match scan_segment_tail(&head, tail, &resume) {
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
    // reading the stored event back, as the general path does.
    let ids = section_unchecked(bytes, &header, 2);
    let known = |id: &str| {
        find_ids(ids, id_hash(id)).is_ok_and(|entries| {
            entries
                .iter()
                .any(|e| stored_event(storage, session_id, e, id).is_ok_and(|p| p.is_some()))
        })
    };
    let mut cursor =
        FrameCursor::resuming(&scan.header, resume.last_seq, resume.chain, resume.data_end);
    let segment = (path.as_path(), last.ordinal, scan.header.version);
    apply_frames(&mut view, &mut cursor, tail, segment, &known)?;
    Ok(Some(Vouched {
        view,
        paths,
        last_ordinal: last.ordinal,
        bytes: last_bytes,
        from: bytes_from,
        layout: scan.header.layout(),
    }))
}

/// Applies the frames `cursor` finds in `bytes` to `view`: frames of the segment at `path`
/// with that ordinal and format version. A record the view refuses is damage there.
pub(super) fn apply_frames(
    view: &mut SessionIndex,
    cursor: &mut FrameCursor<RecordKind>,
    bytes: &[u8],
    (path, ordinal, format_version): (&std::path::Path, u64, u16),
    known: &dyn Fn(&str) -> bool,
) -> Result<()> {
    while let Some((offset, frame)) = cursor.next_frame(bytes) {
        let at = RecordRef {
            ordinal,
            format_version,
            offset,
            end: cursor.data_end(),
            seq: frame.seq,
            chain: frame.chain,
            kind: frame.kind,
            payload: frame.payload,
        };
        view.apply_record(&at, known)
            .map_err(|what| Error::corrupt(path, offset, what))?;
    }
    Ok(())
}
