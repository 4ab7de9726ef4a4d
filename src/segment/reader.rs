//! Reading a session's records in order from any sequence number, checking every frame and the
//! chain as it goes. Sealed segments are memory-mapped; the last one is read into memory.

use super::check::{continuity_problems, header_problems};
use super::layout::{list_session, SegmentFile};
use super::load::{read_segment, read_segment_tail};
pub use super::record::{Record, RecordView};
use super::scan::Resume;
use crate::error::{Error, Result};
use crate::format::{validate_session_id, ChainValue, RecordKind, SegmentHeader, HEADER_LEN};
use crate::format::{FrameCursor, Tail};
use crate::storage::{FileBytes, Storage};

/// Iterates a session's records from a sequence number. Yields the valid records, then stops:
/// at the end of data, at a torn tail of the last segment (a write in flight), or with one
/// `Err` naming the file and byte offset of damage.
pub struct SessionReader<'s> {
    storage: &'s dyn Storage,
    segments: Vec<SegmentFile>,
    next_index: usize,
    from_seq: u64,
    current: Option<Open>,
    expect: Option<(u64, ChainValue)>,
    session_id: String,
    /// Where to start in the first segment, when resuming after a trusted prefix.
    resume: Option<Resume>,
    done: bool,
}

struct Open {
    ordinal: u64,
    /// The segment's format version.
    version: u16,
    file: SegmentFile,
    bytes: FileBytes,
    cursor: FrameCursor,
    is_last: bool,
}

impl<'s> SessionReader<'s> {
    /// A reader over `session_id`'s records whose sequence number is at least `from_seq`.
    pub fn open(storage: &'s dyn Storage, session_id: &str, from_seq: u64) -> Result<Self> {
        validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let segments = list_session(storage, session_id)?.segments;
        let start = segments
            .iter()
            .rposition(|s| s.first_seq <= from_seq)
            .unwrap_or(0);
        Ok(SessionReader {
            storage,
            segments,
            next_index: start,
            from_seq,
            current: None,
            expect: None,
            session_id: session_id.to_owned(),
            resume: None,
            done: false,
        })
    }

    /// A reader over the records after a trusted prefix that ends at `resume`: the covered
    /// bytes are not read.
    pub fn resume(storage: &'s dyn Storage, session_id: &str, resume: Resume) -> Result<Self> {
        validate_session_id(session_id).map_err(Error::InvalidInput)?;
        let segments = list_session(storage, session_id)?.segments;
        if resume.ordinal as usize >= segments.len() {
            return Err(Error::corrupt(
                super::layout::session_dir(session_id),
                0,
                format!("no segment {} to resume in", resume.ordinal),
            ));
        }
        Ok(SessionReader {
            storage,
            segments,
            next_index: resume.ordinal as usize,
            from_seq: resume.last_seq + 1,
            current: None,
            expect: None,
            session_id: session_id.to_owned(),
            resume: Some(resume),
            done: false,
        })
    }

    fn open_next(&mut self) -> Result<bool> {
        let Some(file) = self.segments.get(self.next_index).cloned() else {
            return Ok(false);
        };
        let is_last = self.next_index + 1 == self.segments.len();
        self.next_index += 1;
        if let Some(r) = self.resume.take() {
            let (head, tail) = read_segment_tail(self.storage, &file.path, r.last_frame_offset)?;
            let header = SegmentHeader::decode(&head)
                .map_err(|e| Error::corrupt(&file.path, e.offset as u64, e.what))?
                .0;
            check_ordinal(&file.path, header.ordinal, self.next_index - 1)?;
            self.current = Some(Open {
                ordinal: header.ordinal,
                version: header.version,
                cursor: r.cursor(&header, &tail),
                file,
                bytes: FileBytes::Owned(tail),
                is_last,
            });
            return Ok(true);
        }
        let bytes = read_segment(self.storage, &file.path, is_last)?;
        let header = match SegmentHeader::decode(&bytes) {
            Ok((h, _)) => h,
            // A create torn before its first sync holds no record: the end of data.
            Err(_) if is_last && body_is_zero(&bytes) => return Ok(false),
            Err(e) => return Err(Error::corrupt(&file.path, e.offset as u64, e.what)),
        };
        // Where the header places it, checked as verify checks it (the first problem found).
        let from_genesis = self.expect.is_none() && self.next_index == 1;
        let mut problems = header_problems(&self.session_id, &file, &header, from_genesis);
        match self.expect {
            // After the segment before it: its ordinal (the one before it had its place's),
            // sequence numbers and chain go on from it.
            Some((seq, chain)) => problems.extend(continuity_problems(
                &self.segments[self.next_index - 2].path,
                ((self.next_index - 2) as u64, seq.saturating_sub(1), &chain),
                &file.path,
                &header,
            )),
            None if !from_genesis => {
                check_ordinal(&file.path, header.ordinal, self.next_index - 1)?
            }
            None => {}
        }
        if let Some(problem) = problems.into_iter().next() {
            return Err(problem.into_error());
        }
        self.current = Some(Open {
            ordinal: header.ordinal,
            version: header.version,
            cursor: FrameCursor::for_segment(&header),
            file,
            bytes,
            is_last,
        });
        Ok(true)
    }

    /// Advances to the next record; returns where it lies in the current segment's bytes.
    fn step(&mut self) -> Result<Option<Located>> {
        loop {
            if self.current.is_none() && !self.open_next()? {
                return Ok(None);
            }
            let Some(open) = self.current.as_mut() else {
                return Ok(None);
            };
            if let Some((offset, frame)) = open.cursor.next_frame(&open.bytes) {
                if frame.seq < self.from_seq {
                    continue;
                }
                let start = frame.payload.as_ptr() as usize - open.bytes.as_ptr() as usize;
                return Ok(Some(Located {
                    seq: frame.seq,
                    kind: frame.kind,
                    chain: frame.chain,
                    offset,
                    end: open.cursor.data_end(),
                    durable_seq: frame.durable_seq,
                    payload: start..start + frame.payload.len(),
                }));
            }
            let end = open.cursor.end().cloned().unwrap_or(Tail::Eof);
            match end {
                Tail::Damaged { offset, what } => {
                    return Err(Error::corrupt(&open.file.path, offset, what))
                }
                Tail::Torn { what, .. } if !open.is_last => {
                    return Err(Error::corrupt(
                        &open.file.path,
                        open.cursor.data_end(),
                        what,
                    ))
                }
                Tail::Eof | Tail::Zeros { .. } if !open.is_last => {
                    return Err(Error::corrupt(
                        &open.file.path,
                        open.cursor.data_end(),
                        "segment is followed by another but has no seal footer",
                    ))
                }
                Tail::Sealed { .. } => {
                    self.expect = Some((open.cursor.next_seq(), open.cursor.chain()));
                    self.current = None;
                }
                _ => return Ok(None),
            }
        }
    }

    /// The next record, borrowed from the segment bytes the reader holds (no copy), or `None`
    /// at the end; an `Err` ends the reading as for the iterator.
    pub fn next_view(&mut self) -> Option<Result<RecordView<'_>>> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(at)) => {
                let open = self.current.as_ref()?;
                Some(Ok(RecordView {
                    ordinal: open.ordinal,
                    format_version: open.version,
                    seq: at.seq,
                    kind: at.kind,
                    chain: at.chain,
                    file: &open.file.path,
                    offset: at.offset,
                    end: at.end,
                    durable_seq: at.durable_seq,
                    payload: open.bytes.get(at.payload)?,
                }))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Where the record [`SessionReader::step`] found lies.
struct Located {
    seq: u64,
    kind: RecordKind,
    chain: ChainValue,
    offset: u64,
    end: u64,
    durable_seq: Option<u64>,
    payload: std::ops::Range<usize>,
}

/// Fails unless a segment's header gives it the ordinal of its place in the log (the
/// `index`-th segment file, from 0): ordinals are consecutive from 0, and a reader that did not
/// check them read a log `verify` finds a gap in.
fn check_ordinal(path: &std::path::Path, ordinal: u64, index: usize) -> Result<()> {
    if ordinal != index as u64 {
        return Err(Error::corrupt(
            path,
            ORDINAL_OFFSET,
            format!("the segment's header says ordinal {ordinal}, its place in the log is {index}"),
        ));
    }
    Ok(())
}

/// Where a segment header holds its ordinal.
const ORDINAL_OFFSET: u64 = 16;

fn body_is_zero(bytes: &[u8]) -> bool {
    bytes
        .get(HEADER_LEN..)
        .unwrap_or(&[])
        .iter()
        .all(|&b| b == 0)
}

impl Iterator for SessionReader<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_view().map(|r| r.map(|v| v.to_record()))
    }
}
