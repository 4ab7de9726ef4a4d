//! Walking the bytes of one segment: frames in order, each checked for CRC, sequence and chain,
//! then what lies after the last valid frame. Pure: bytes in, findings out.

use crate::format::{
    decode_frame, next_chain, ChainValue, FormatError, Frame, FrameDecode, SealFooter,
    SegmentHeader, FOOTER_LEN, HEADER_LEN,
};

/// What lies after the last valid frame of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// The file ends right after the last frame (or after the header).
    Eof,
    /// Only zeros follow: preallocated space, or writes that never reached the disk.
    Zeros { len: u64 },
    /// A valid seal footer follows; `trailing_zeros` zero bytes may follow it (a roll
    /// interrupted before the preallocated space was cut).
    Sealed {
        footer: SealFooter,
        trailing_zeros: u64,
    },
    /// Non-zero bytes that hold no valid frame: an interrupted write. `len` runs to the last
    /// non-zero byte.
    Torn { len: u64, what: String },
    /// Something that no interrupted write explains: a bad frame with a valid frame after it,
    /// a frame out of sequence or off the chain, a bad or misplaced footer, bytes after a footer.
    Damaged { offset: u64, what: String },
}

/// Frames of one segment, checked as they are read.
///
/// The cursor holds only its position and what it has verified; the caller hands it the same
/// bytes on every call, so it can live beside the bytes it reads.
#[derive(Debug, Clone)]
pub struct FrameCursor {
    pos: usize,
    max_payload: u32,
    next_seq: u64,
    chain: ChainValue,
    count: u64,
    end: Option<SegmentEnd>,
}

impl FrameCursor {
    /// A cursor over the frames after the header of a segment whose decoded header is `header`.
    pub fn new(header: &SegmentHeader) -> Self {
        FrameCursor {
            pos: HEADER_LEN,
            max_payload: header.max_payload,
            next_seq: header.first_seq,
            chain: header.prev_chain,
            count: 0,
            end: None,
        }
    }

    /// Offset just past the last valid frame returned so far.
    pub fn data_end(&self) -> u64 {
        self.pos as u64
    }

    /// Chain value after the last valid frame returned so far.
    pub fn chain(&self) -> ChainValue {
        self.chain
    }

    /// Sequence number the next frame must carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Number of valid frames returned so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// What follows the last valid frame, once [`FrameCursor::next_frame`] has returned `None`.
    pub fn end(&self) -> Option<&SegmentEnd> {
        self.end.as_ref()
    }

    /// The next valid frame and its offset, or `None` at the end of data or at damage.
    pub fn next_frame<'a>(&mut self, bytes: &'a [u8]) -> Option<(u64, Frame<'a>)> {
        if self.end.is_some() {
            return None;
        }
        let rest = bytes.get(self.pos..).unwrap_or(&[]);
        if SealFooter::looks_like_footer(rest) {
            self.end = Some(self.footer_end(rest));
            return None;
        }
        match decode_frame(rest, self.max_payload) {
            Ok(FrameDecode::EndOfData) => {
                self.end = Some(self.after_end_of_data(rest));
                None
            }
            Ok(FrameDecode::Frame(frame, used)) => {
                let offset = self.pos as u64;
                if frame.seq != self.next_seq {
                    self.end = Some(SegmentEnd::Damaged {
                        offset,
                        what: format!(
                            "frame has sequence number {}, expected {}",
                            frame.seq, self.next_seq
                        ),
                    });
                    return None;
                }
                let expected = next_chain(&self.chain, frame.seq, frame.kind as u8, frame.payload);
                if frame.chain != expected {
                    self.end = Some(SegmentEnd::Damaged {
                        offset,
                        what: format!("frame {} breaks the hash chain", frame.seq),
                    });
                    return None;
                }
                self.pos += used;
                self.next_seq += 1;
                self.chain = frame.chain;
                self.count += 1;
                Some((offset, frame))
            }
            Err(e) => {
                self.end = Some(self.after_bad_frame(rest, e));
                None
            }
        }
    }

    fn footer_end(&self, rest: &[u8]) -> SegmentEnd {
        let offset = self.pos as u64;
        let footer = match SealFooter::decode(rest) {
            Ok((f, _)) => f,
            Err(e) => {
                return SegmentEnd::Damaged {
                    offset: offset + e.offset as u64,
                    what: e.what,
                }
            }
        };
        let last_seq = self.next_seq - 1;
        let what = if footer.footer_offset != offset {
            Some(format!(
                "seal footer says it is at byte {}",
                footer.footer_offset
            ))
        } else if footer.last_seq != last_seq {
            Some(format!(
                "seal footer says last sequence {}, segment ends at {last_seq}",
                footer.last_seq
            ))
        } else if footer.frame_count != self.count {
            Some(format!(
                "seal footer counts {} frames, segment has {}",
                footer.frame_count, self.count
            ))
        } else if footer.chain != self.chain {
            Some("seal footer chain value differs from the last frame's".to_owned())
        } else {
            None
        };
        if let Some(what) = what {
            return SegmentEnd::Damaged { offset, what };
        }
        let after = &rest[FOOTER_LEN..];
        if let Some(i) = after.iter().position(|&b| b != 0) {
            return SegmentEnd::Damaged {
                offset: offset + (FOOTER_LEN + i) as u64,
                what: "non-zero bytes after the seal footer".to_owned(),
            };
        }
        SegmentEnd::Sealed {
            footer,
            trailing_zeros: after.len() as u64,
        }
    }

    fn after_end_of_data(&self, rest: &[u8]) -> SegmentEnd {
        match rest.iter().position(|&b| b != 0) {
            None if rest.is_empty() => SegmentEnd::Eof,
            None => SegmentEnd::Zeros {
                len: rest.len() as u64,
            },
            Some(first) => self.classify_garbage(
                rest,
                first,
                format!(
                    "non-zero bytes at byte {} after the end of data",
                    self.pos + first
                ),
            ),
        }
    }

    fn after_bad_frame(&self, rest: &[u8], e: FormatError) -> SegmentEnd {
        let what = format!("bad frame at byte {}: {}", self.pos, e.what);
        self.classify_garbage(rest, 0, what)
    }

    /// Non-zero bytes start at `rest[first]`: a torn tail unless a valid frame or footer lies
    /// anywhere after them, which no interrupted append can produce.
    fn classify_garbage(&self, rest: &[u8], first: usize, what: String) -> SegmentEnd {
        if let Some(at) = find_valid_after(rest, 1, self.max_payload) {
            return SegmentEnd::Damaged {
                offset: (self.pos + first) as u64,
                what: format!("{what}; a valid record follows at byte {}", self.pos + at),
            };
        }
        let last_nonzero = rest.iter().rposition(|&b| b != 0).unwrap_or(first);
        SegmentEnd::Torn {
            len: (last_nonzero + 1) as u64,
            what,
        }
    }
}

/// The first position at or after `from` where a CRC-valid frame or seal footer starts.
fn find_valid_after(rest: &[u8], from: usize, max_payload: u32) -> Option<usize> {
    (from..rest.len()).find(|&at| {
        let tail = &rest[at..];
        if SealFooter::looks_like_footer(tail) {
            return SealFooter::decode(tail).is_ok();
        }
        matches!(decode_frame(tail, max_payload), Ok(FrameDecode::Frame(..)))
    })
}

/// The summary of one segment whose header decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentScan {
    pub header: SegmentHeader,
    /// Valid frames before the end.
    pub frame_count: u64,
    /// Sequence number of the last valid frame (first_seq − 1 when none).
    pub last_seq: u64,
    /// Chain value after the last valid frame.
    pub chain: ChainValue,
    /// Offset just past the last valid frame.
    pub data_end: u64,
    /// What follows.
    pub end: SegmentEnd,
}

/// What scanning a segment file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanResult {
    /// The header decoded; the body was walked.
    Scanned(SegmentScan),
    /// The header did not decode. `body_empty` is true when nothing but zeros follows where the
    /// header should end, so the file can hold no frame (a create torn before its first sync).
    BadHeader {
        error: FormatError,
        body_empty: bool,
    },
}

/// Scans a whole segment file.
pub fn scan_segment(bytes: &[u8]) -> ScanResult {
    let header = match SegmentHeader::decode(bytes) {
        Ok((h, _)) => h,
        Err(error) => {
            let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
            return ScanResult::BadHeader {
                error,
                body_empty: body.iter().all(|&b| b == 0),
            };
        }
    };
    let mut cursor = FrameCursor::new(&header);
    while cursor.next_frame(bytes).is_some() {}
    let end = cursor.end().cloned().unwrap_or(SegmentEnd::Eof);
    ScanResult::Scanned(SegmentScan {
        frame_count: cursor.count(),
        last_seq: cursor.next_seq() - 1,
        chain: cursor.chain(),
        data_end: cursor.data_end(),
        end,
        header,
    })
}
