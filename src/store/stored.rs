//! Reading stored records back: the frame an id entry points at, and a session's immutable
//! events in commit order.

use crate::error::{Error, Result};
use crate::event::RuntimeEvent;
use crate::format::{
    decode_frame, FrameDecode, RecordKind, FRAME_HEADER_LEN, FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::index::{EventFacts, IdEntry};
use crate::segment::layout::{list_session, session_dir};
use crate::segment::SessionReader;
use crate::storage::{OpenMode, Storage};
use std::collections::HashMap;

/// The stored event an id entry points at, if it is the event with `id` (entries are found by
/// a 64-bit hash, so another id may share one).
pub(crate) fn stored_event(
    storage: &dyn Storage,
    session_id: &str,
    at: &IdEntry,
    id: &str,
) -> Result<Option<Vec<u8>>> {
    let bytes = stored_payload(storage, session_id, at)?;
    let same = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|json| EventFacts::peek(json).ok())
        .is_some_and(|f| f.id == id);
    Ok(same.then_some(bytes))
}

/// The payload of the frame an id entry points at, checked by its CRC.
fn stored_payload(storage: &dyn Storage, session_id: &str, at: &IdEntry) -> Result<Vec<u8>> {
    let files = list_session(storage, session_id)?.segments;
    let path = files
        .get(at.ordinal as usize)
        .map(|f| f.path.clone())
        .ok_or_else(|| {
            Error::corrupt(session_dir(session_id), 0, "an indexed segment is missing")
        })?;
    let file = storage
        .open(&path, OpenMode::Read)
        .map_err(|e| Error::io(&path, "open", e))?;
    let read = |offset: u64, len: usize| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let mut done = 0;
        while done < len {
            match file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    return Err(Error::corrupt(
                        &path,
                        offset,
                        "indexed frame runs past the end of the file",
                    ))
                }
                Ok(n) => done += n,
                Err(e) => return Err(Error::io(&path, "read", e)),
            }
        }
        Ok(buf)
    };
    let head = read(at.offset, FRAME_HEADER_LEN)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_PAYLOAD_LIMIT as usize {
        return Err(Error::corrupt(
            &path,
            at.offset,
            "indexed frame is longer than any frame",
        ));
    }
    let frame = read(at.offset, FRAME_OVERHEAD + len)?;
    match decode_frame::<RecordKind>(&frame, MAX_PAYLOAD_LIMIT) {
        Ok(FrameDecode::Frame(f, _)) if f.seq == at.record_seq => Ok(f.payload.to_vec()),
        _ => Err(Error::corrupt(
            &path,
            at.offset,
            "the index points at no such record",
        )),
    }
}

/// Every immutable event of a session in commit order, up to record `upto`, with its sequence
/// number in its invocation (counted as the index counts them).
pub(crate) fn read_events(
    storage: &dyn Storage,
    session_id: &str,
    upto: u64,
) -> Result<Vec<(RuntimeEvent, u64)>> {
    let mut seqs: HashMap<String, u64> = HashMap::new();
    let mut out = Vec::new();
    for record in SessionReader::open(storage, session_id, 1)? {
        let r = record?;
        if r.seq > upto {
            break;
        }
        if r.kind != RecordKind::RuntimeEvent {
            continue;
        }
        let text = std::str::from_utf8(&r.payload)
            .map_err(|_| Error::corrupt(&r.file, r.offset, "runtime event is not UTF-8"))?;
        let event = RuntimeEvent::decode(text).map_err(|e| {
            Error::corrupt(
                &r.file,
                r.offset,
                format!("runtime event does not decode: {e}"),
            )
        })?;
        if event.partial() || event.session_id() != session_id {
            continue;
        }
        let seq = seqs.entry(event.invocation_id().to_owned()).or_insert(0);
        *seq += 1;
        out.push((event, *seq));
    }
    Ok(out)
}
