//! Reading single frames back by where an index says they lie: (segment ordinal, offset, and
//! the sequence number the frame must carry), each checked by its CRC. Open files are kept for
//! the reader's life, so reading many frames of one segment opens it once.

use super::layout::{list_session, session_dir};
use crate::error::{Error, Result};
use crate::format::{
    decode_frame, FrameDecode, RecordKind, FRAME_HEADER_LEN, FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT,
};
use crate::storage::{OpenMode, Storage, StorageFile};
use std::collections::HashMap;
use std::path::PathBuf;

/// The first read of a frame asks for this many bytes.
const FIRST_READ: usize = 1024;

/// Reads frames of one session by position.
pub struct FramesAt<'s> {
    storage: &'s dyn Storage,
    session_id: String,
    /// Segment files by ordinal: listed on first use unless given.
    paths: Option<Vec<PathBuf>>,
    open: HashMap<u64, Box<dyn StorageFile>>,
}

impl<'s> FramesAt<'s> {
    /// A reader that lists the session's segments when it first needs one.
    pub fn new(storage: &'s dyn Storage, session_id: &str) -> Self {
        FramesAt {
            storage,
            session_id: session_id.to_owned(),
            paths: None,
            open: HashMap::new(),
        }
    }

    /// A reader over segment files already known, by ordinal.
    pub fn with_paths(storage: &'s dyn Storage, session_id: &str, paths: Vec<PathBuf>) -> Self {
        FramesAt {
            paths: Some(paths),
            ..FramesAt::new(storage, session_id)
        }
    }

    /// The payload of the frame at `offset` of segment `ordinal`, which must be record `seq`.
    pub fn payload(&mut self, ordinal: u64, offset: u64, seq: u64) -> Result<Vec<u8>> {
        if self.paths.is_none() {
            let listed = list_session(self.storage, &self.session_id)?.segments;
            self.paths = Some(listed.into_iter().map(|f| f.path).collect());
        }
        let path = self
            .paths
            .as_ref()
            .and_then(|p| p.get(ordinal as usize))
            .cloned()
            .ok_or_else(|| {
                Error::corrupt(
                    session_dir(&self.session_id),
                    0,
                    "an indexed segment is missing",
                )
            })?;
        if !self.open.contains_key(&ordinal) {
            let file = self
                .storage
                .open(&path, OpenMode::Read)
                .map_err(|e| Error::io(&path, "open", e))?;
            self.open.insert(ordinal, file);
        }
        let file = &self.open[&ordinal];
        let read = |at: u64, len: usize| -> Result<Vec<u8>> {
            let mut buf = vec![0u8; len];
            let mut done = 0;
            while done < len {
                match file.read_at(&mut buf[done..], at + done as u64) {
                    Ok(0) => {
                        return Err(Error::corrupt(
                            &path,
                            at,
                            "indexed frame runs past the end of the file",
                        ))
                    }
                    Ok(n) => done += n,
                    Err(e) => return Err(Error::io(&path, "read", e)),
                }
            }
            Ok(buf)
        };
        // Most openings and terminals fit in one read of this size; a longer frame takes a second.
        let mut frame = vec![0u8; FIRST_READ];
        let got = file
            .read_at(&mut frame, offset)
            .map_err(|e| Error::io(&path, "read", e))?;
        frame.truncate(got);
        if frame.len() < FRAME_HEADER_LEN {
            frame = read(offset, FRAME_HEADER_LEN)?;
        }
        let len = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        if len > MAX_PAYLOAD_LIMIT as usize {
            return Err(Error::corrupt(
                &path,
                offset,
                "indexed frame is longer than any frame",
            ));
        }
        if frame.len() < FRAME_OVERHEAD + len {
            frame = read(offset, FRAME_OVERHEAD + len)?;
        }
        payload_of(&frame, seq)
            .ok_or_else(|| Error::corrupt(&path, offset, "the index points at no such record"))
    }
}

/// The payload of the frame at the start of `bytes` if it decodes and is record `seq`.
pub fn payload_of(bytes: &[u8], seq: u64) -> Option<Vec<u8>> {
    match decode_frame::<RecordKind>(bytes, MAX_PAYLOAD_LIMIT) {
        Ok(FrameDecode::Frame(f, _)) if f.seq == seq => Some(f.payload.to_vec()),
        _ => None,
    }
}
