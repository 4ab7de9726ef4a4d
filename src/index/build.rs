//! Building a session's view from its segments: a full rebuild, or catching up a stored view
//! from where it stops (work proportional to the new bytes).

use super::entries::Cover;
use super::sidecar::{decode_sidecar_header, decode_sidecar_state, SidecarHeader};
use super::view::{RecordRef, SessionIndex};
use crate::error::{Error, Result};
use crate::format::{
    decode_frame, FrameDecode, RecordKind, FOOTER_LEN, MAX_FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::segment::frames_at::read_layout;
use crate::segment::layout::list_session;
use crate::segment::{Resume, SessionReader};
use crate::storage::{OpenMode, Storage};

/// Rebuilds the view of `session_id` from every record of its segments.
pub fn rebuild(storage: &dyn Storage, session_id: &str) -> Result<SessionIndex> {
    let mut view = SessionIndex::new(session_id);
    apply_all(
        &mut view,
        SessionReader::open(storage, session_id, 1)?,
        &|_| false,
    )?;
    Ok(view)
}

/// Applies the records after what `view` covers; `known_id` answers for ids recorded outside
/// the view.
pub fn catch_up(
    storage: &dyn Storage,
    view: &mut SessionIndex,
    known_id: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let reader = match resume_point(view) {
        Some(r) => SessionReader::resume(storage, &view.session_id, r)?,
        None => SessionReader::open(storage, &view.session_id, 1)?,
    };
    apply_all(view, reader, known_id)
}

fn apply_all(
    view: &mut SessionIndex,
    mut reader: SessionReader<'_>,
    known_id: &dyn Fn(&str) -> bool,
) -> Result<()> {
    while let Some(record) = reader.next_view() {
        let r = record?;
        let at = RecordRef {
            ordinal: r.ordinal,
            format_version: r.format_version,
            offset: r.offset,
            end: r.end,
            seq: r.seq,
            chain: r.chain,
            kind: r.kind,
            payload: r.payload,
        };
        view.apply_record(&at, known_id)
            .map_err(|what| Error::corrupt(r.file, r.offset, what))?;
    }
    Ok(())
}

/// Rebuilds a session's sidecar from its segments and replaces it, under the owner's lease.
/// The session is recovered first, as an open for writing recovers it, so the sidecar is built
/// only from bytes that are durable (a process that died may have left written but unsynced
/// bytes in the page cache, and a sidecar vouching for them would let the next open skip the
/// syncs that make them durable).
///
/// What the sidecar recorded as durable is never cut: damage there is refused, as the store's
/// open refuses it, not taken for a torn tail and replaced by a sidecar over the loss.
pub fn rebuild_sidecar(
    owner: &crate::root::Owner,
    session_id: &str,
    config: crate::segment::WriterConfig,
) -> Result<SessionIndex> {
    let storage = &**owner.storage();
    let path = crate::segment::layout::session_dir(session_id).join(super::SIDECAR_FILE);
    let durable = storage
        .map_file(&path)
        .ok()
        .and_then(|bytes| recorded_durable(&bytes, session_id));
    let (writer, _) =
        crate::segment::SegmentWriter::open_guarded(owner, session_id, config, None, durable)?;
    writer.close()?;
    let view = rebuild(storage, session_id)?;
    let bytes = super::encode_sidecar(&view, &[]).map_err(|e| Error::corrupt(&path, 0, e.what))?;
    crate::storage::write_atomically(storage, &path, &bytes)?;
    Ok(view)
}

/// The view's invocations, their opening and terminal events read back from the segments.
pub fn invocations_from_log(
    storage: &dyn Storage,
    view: &SessionIndex,
) -> Result<Vec<super::RuntimeInvocation>> {
    let mut frames = crate::segment::FramesAt::new(storage, &view.session_id);
    view.invocations(&mut |at| {
        let bytes = frames.payload(at.ordinal, at.offset, at.record_seq)?;
        String::from_utf8(bytes).map_err(|_| {
            Error::corrupt(
                crate::segment::layout::session_dir(&view.session_id),
                at.offset,
                "runtime event is not UTF-8",
            )
        })
    })
}

/// Where a session's sidecar bytes, if they decode and are this session's, say the log was
/// durable, whether or not their covers still hold.
pub fn recorded_durable(bytes: &[u8], session_id: &str) -> Option<Resume> {
    let header = super::decode_sidecar_header(bytes).ok()?;
    let view = super::decode_sidecar_state(bytes, &header).ok()?;
    (view.session_id == session_id)
        .then(|| resume_point(&view))
        .flatten()
}

/// Where a view stops: just after the last record it covers.
pub fn resume_point(view: &SessionIndex) -> Option<Resume> {
    view.covers.last().map(|c| Resume {
        ordinal: c.ordinal,
        last_frame_offset: c.last_frame_offset,
        data_end: c.data_end,
        last_seq: c.last_seq,
        chain: c.chain,
    })
}

/// Checks that the segments still hold what `covers` says, without reading the covered bytes:
/// a covered segment followed by another must end with its seal footer right after its last
/// covered record; the last covered record must be where the cover says, with its sequence
/// number and chain value. False means the view is stale or belongs to another log.
pub fn covers_hold(storage: &dyn Storage, session_id: &str, covers: &[Cover]) -> Result<bool> {
    let files = list_session(storage, session_id)?.segments;
    for (i, c) in covers.iter().enumerate() {
        if c.last_seq == u64::MAX {
            return Ok(false);
        }
        let Some(file) = files.get(c.ordinal as usize) else {
            return Ok(false);
        };
        let f = match storage.open(&file.path, OpenMode::Read) {
            Ok(f) => f,
            Err(_) => return Ok(false),
        };
        if i + 1 < covers.len() {
            let size = f.size().map_err(|e| Error::io(&file.path, "stat", e))?;
            if Some(size) != c.data_end.checked_add(FOOTER_LEN as u64) {
                return Ok(false);
            }
            continue;
        }
        let len = match c.data_end.checked_sub(c.last_frame_offset) {
            Some(len) if len <= (MAX_FRAME_OVERHEAD as u64 + u64::from(MAX_PAYLOAD_LIMIT)) => len,
            _ => return Ok(false),
        };
        // A frame the file does not reach is the sidecar's fault, not a read to try (one at
        // 2^63 or past fails with EINVAL, an I/O error blamed on a sound segment).
        let size = f.size().map_err(|e| Error::io(&file.path, "stat", e))?;
        if c.data_end > size {
            return Ok(false);
        }
        let Ok(layout) = read_layout(&*f, &file.path) else {
            return Ok(false);
        };
        let mut buf = vec![0u8; len as usize];
        match f.read_exact_at(&mut buf, c.last_frame_offset) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(Error::io(&file.path, "read", e)),
        }
        let ok = matches!(
            decode_frame::<RecordKind>(&buf, layout, u32::MAX),
            Ok(FrameDecode::Frame(frame, used))
                if used as u64 == len && frame.seq == c.last_seq && frame.chain == c.chain
        );
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A sidecar's view and header, if its bytes decode, it names `session_id`, and its covers
/// still hold for the segments; `None` means it cannot be trusted and the view is rebuilt.
/// The ids section is not checked here (the store checks it on first use).
pub fn trusted_sidecar(
    storage: &dyn Storage,
    session_id: &str,
    bytes: &[u8],
) -> Result<Option<(SessionIndex, SidecarHeader)>> {
    let Ok(header) = decode_sidecar_header(bytes) else {
        return Ok(None);
    };
    // A sidecar of an older version was written by a build that did not read session records:
    // its view may lack them, so it is rebuilt (its covers still say what was durable).
    if header.version != super::SIDECAR_VERSION {
        return Ok(None);
    }
    let Ok(view) = decode_sidecar_state(bytes, &header) else {
        return Ok(None);
    };
    if !belongs_to(&view, session_id) || !covers_hold(storage, session_id, &view.covers)? {
        return Ok(None);
    }
    Ok(Some((view, header)))
}

/// Whether a view decoded from a sidecar is session `session_id`'s: it says so, and so does
/// the session header it holds (if any). A header naming another session (a forged sidecar,
/// its checksums intact) would show this session under that id, and a listing telling sessions
/// by their ids would hide one. Only the header's id is read; the rest is checked when decoded.
pub fn belongs_to(view: &SessionIndex, session_id: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Named {
        id: String,
    }
    let named = |t: &str| serde_json::from_str::<Named>(t).is_ok_and(|n| n.id == session_id);
    view.session_id == session_id && view.session.header.as_deref().is_none_or(named)
}
