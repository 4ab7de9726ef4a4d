//! Reading single frames back by where an index says they lie: (segment ordinal, offset, and
//! the sequence number the frame must carry), each checked by its CRC. Open files are kept for
//! the reader's life, so reading many frames of one segment opens it once.

use super::layout::{list_session, session_dir};
use crate::error::{Error, Result};
use crate::format::{
    decode_frame, FrameDecode, FrameLayout, RecordKind, SegmentHeader, HEADER_LEN,
    MAX_PAYLOAD_LIMIT,
};
use crate::storage::{data_end, OpenMode, Storage, StorageFile};
use std::collections::HashMap;
use std::path::PathBuf;

/// The first read of a frame asks for this many bytes.
const FIRST_READ: usize = 1024;

/// Frames of one segment read together take one read of their span from this many on.
const BULK_MIN: usize = 16;

/// The longest span read in one call. Spans are read into one buffer kept for the whole call,
/// so a long read touches this much memory (it stays in cache, and is faulted in once), not
/// the length of what it reads.
pub const WINDOW: u64 = 256 << 10;

/// Reads frames of one session by position.
pub struct FramesAt<'s> {
    storage: &'s dyn Storage,
    session_id: String,
    /// Segment files by ordinal: listed on first use unless given.
    paths: Option<Vec<PathBuf>>,
    /// Open segments by ordinal, with how their frames are laid out.
    open: HashMap<u64, (Box<dyn StorageFile>, FrameLayout)>,
    /// Bytes the single-frame reads asked for.
    read_bytes: u64,
}

impl<'s> FramesAt<'s> {
    /// A reader that lists the session's segments when it first needs one.
    pub fn new(storage: &'s dyn Storage, session_id: &str) -> Self {
        FramesAt {
            storage,
            session_id: session_id.to_owned(),
            paths: None,
            open: HashMap::new(),
            read_bytes: 0,
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
        match self.frame(ordinal, offset)? {
            (at, payload) if at == seq => Ok(payload),
            _ => Err(self.no_record(ordinal, offset)),
        }
    }

    /// The frame at `offset` of segment `ordinal`, whatever record it is: its sequence number
    /// and payload.
    pub fn frame(&mut self, ordinal: u64, offset: u64) -> Result<(u64, Vec<u8>)> {
        let (path, file, layout) = self.opened(ordinal)?;
        within_any_file(&path, offset)?;
        let mut read_bytes = 0u64;
        let mut read = |at: u64, len: usize| -> Result<Vec<u8>> {
            read_bytes += len as u64;
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, at)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => {
                        Error::corrupt(&path, at, "indexed frame runs past the end of the file")
                    }
                    _ => Error::io(&path, "read", e),
                })?;
            Ok(buf)
        };
        // Most openings and terminals fit in one read of this size; a longer frame takes a second.
        let mut frame = vec![0u8; FIRST_READ];
        // One system call: a short read (a frame near the end of the file) is completed below.
        let got = file
            .read_at(&mut frame, offset)
            .map_err(|e| Error::io(&path, "read", e));
        let first = got.as_ref().map_or(0, |&n| n as u64);
        let decoded = got.and_then(|got| {
            frame.truncate(got);
            if frame.len() < layout.header_len() {
                frame = read(offset, layout.header_len())?;
            }
            let len = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
            if len > MAX_PAYLOAD_LIMIT as usize {
                return Err(Error::corrupt(
                    &path,
                    offset,
                    "indexed frame is longer than any frame",
                ));
            }
            if frame.len() < layout.overhead() + len {
                frame = read(offset, layout.overhead() + len)?;
            }
            frame_of(&frame, layout)
                .map(|(seq, payload)| (seq, payload.to_vec()))
                .ok_or_else(|| Error::corrupt(&path, offset, "the index points at no such record"))
        });
        self.read_bytes += first + read_bytes;
        decoded
    }

    /// The error for an index naming no such record at `offset` of segment `ordinal`.
    fn no_record(&self, ordinal: u64, offset: u64) -> Error {
        let file = self
            .paths
            .as_ref()
            .and_then(|p| p.get(ordinal as usize))
            .cloned()
            .unwrap_or_else(|| session_dir(&self.session_id));
        Error::corrupt(file, offset, "the index points at no such record")
    }

    /// The bytes the single-frame reads ([`FramesAt::frame`], [`FramesAt::payload`]) asked
    /// for so far.
    pub fn bytes_read(&self) -> u64 {
        self.read_bytes
    }

    /// The bytes of segment `ordinal` a scan of it reads: to its last non-zero byte and at
    /// most a frame's length of zeros after it ([`data_end::needed_end`]), not the length the
    /// file system states, which a sparse file makes anything for nothing.
    pub fn segment_data_len(&mut self, ordinal: u64) -> Result<u64> {
        let (path, file, _) = self.opened(ordinal)?;
        data_end::needed_end(file, 0).map_err(|e| Error::io(&path, "read", e))
    }

    /// Hands `each` the payload of every frame at `positions` (segment ordinal, offset,
    /// sequence number), in order, with its index in `positions`. Where many of them lie close
    /// together in one segment, the span from the first to the last is read in one call (at
    /// most [`WINDOW`] bytes) instead of one read a frame, and its payloads are lent from it
    /// uncopied (a frame the span does not hold whole is read on its own).
    pub fn each_payload(
        &mut self,
        positions: &[(u64, u64, u64)],
        mut each: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut window = Vec::new();
        let mut done = 0;
        while let Some(&(ordinal, lo, _)) = positions.get(done) {
            // The frames from here on that start within one window of this one.
            let run = &positions[done..];
            let in_window = |p: &&(u64, u64, u64)| {
                p.0 == ordinal && p.1 >= lo && p.1 - lo < WINDOW - FIRST_READ as u64
            };
            let run = &run[..run.iter().take_while(in_window).count()];
            debug_assert!(!run.is_empty(), "the first frame is in its own window");
            // Offsets come from an index that may be damaged: no arithmetic on them may wrap.
            let hi = run
                .iter()
                .map(|p| p.1)
                .max()
                .unwrap_or(lo)
                .saturating_add(FIRST_READ as u64);
            let span = match run.len() >= BULK_MIN {
                true => Some(self.span(ordinal, lo, hi, &mut window)?),
                false => None,
            };
            for &(ordinal, offset, seq) in run {
                let whole = span.and_then(|(got, layout)| {
                    let at = usize::try_from(offset - lo).ok()?;
                    payload_of(window[..got].get(at..)?, layout, seq)
                });
                match whole {
                    Some(payload) => each(done, payload)?,
                    None => each(done, &self.payload(ordinal, offset, seq)?)?,
                }
                done += 1;
            }
        }
        Ok(())
    }

    /// Reads the bytes of segment `ordinal` from `lo` to `hi` (fewer at its end) into the
    /// start of `buf`: how many it read, and the segment's layout.
    fn span(
        &mut self,
        ordinal: u64,
        lo: u64,
        hi: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(usize, FrameLayout)> {
        debug_assert!(hi - lo <= WINDOW, "a span is bounded");
        let len = (hi - lo) as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let (path, file, layout) = self.opened(ordinal)?;
        within_any_file(&path, hi)?;
        let got = file
            .read_full_at(&mut buf[..len], lo)
            .map_err(|e| Error::io(&path, "read", e))?;
        Ok((got, layout))
    }

    /// Segment `ordinal`'s path, open file and frame layout, opened on first use.
    fn opened(&mut self, ordinal: u64) -> Result<(PathBuf, &dyn StorageFile, FrameLayout)> {
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
            let layout = read_layout(&*file, &path)?;
            self.open.insert(ordinal, (file, layout));
        }
        let (file, layout) = &self.open[&ordinal];
        Ok((path, &**file, *layout))
    }
}

/// How the frames of an open segment are laid out: what its header's version says.
pub(crate) fn read_layout(file: &dyn StorageFile, path: &std::path::Path) -> Result<FrameLayout> {
    let mut head = [0u8; HEADER_LEN];
    let got = file
        .read_full_at(&mut head, 0)
        .map_err(|e| Error::io(path, "read", e))?;
    SegmentHeader::decode(&head[..got])
        .map(|(h, _)| h.layout())
        .map_err(|e| Error::corrupt(path, e.offset as u64, e.what))
}

/// Refuses an offset no file reaches (an index's, which may be damaged): the system call would
/// fail with EINVAL, an I/O error blamed on a sound segment.
fn within_any_file(path: &std::path::Path, offset: u64) -> Result<()> {
    if i64::try_from(offset).is_err() {
        return Err(Error::corrupt(
            path,
            0,
            format!("the index points at byte {offset}, past any file"),
        ));
    }
    Ok(())
}

/// The payload of the frame at the start of `bytes` if it decodes and is record `seq`.
pub fn payload_of(bytes: &[u8], layout: FrameLayout, seq: u64) -> Option<&[u8]> {
    frame_of(bytes, layout).and_then(|(at, payload)| (at == seq).then_some(payload))
}

/// The sequence number and payload of the frame at the start of `bytes`, if it decodes.
fn frame_of(bytes: &[u8], layout: FrameLayout) -> Option<(u64, &[u8])> {
    match decode_frame::<RecordKind>(bytes, layout, MAX_PAYLOAD_LIMIT) {
        Ok(FrameDecode::Frame(f, _)) => Some((f.seq, f.payload)),
        _ => None,
    }
}
