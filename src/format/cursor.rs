//! Walking a run of frames: each checked for CRC, sequence number and chain as it is read,
//! then a verdict on what lies after the last valid one. Pure: bytes in, findings out. Shared by
//! segments and the claims log.

mod ending;
mod search;

use super::{
    decode_frame, next_chain, ChainValue, Frame, FrameDecode, FrameKind, FrameLayout, RecordKind,
    SealFooter, SegmentHeader, HEADER_LEN,
};
use std::marker::PhantomData;

/// What lies after the last valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
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
    /// Non-zero bytes that hold no valid frame (in version 2, none written after the bytes
    /// before them were durable): an interrupted write. `len` runs to the last non-zero byte.
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
pub struct FrameCursor<K = RecordKind> {
    pos: usize,
    /// Offset in the file of the first byte handed to the cursor.
    base: u64,
    layout: FrameLayout,
    max_payload: u32,
    footers: bool,
    kind: PhantomData<K>,
    next_seq: u64,
    chain: ChainValue,
    count: u64,
    /// The durable sequence number the last frame recorded: the next may not record less.
    durable: u64,
    end: Option<Tail>,
}

impl FrameCursor<RecordKind> {
    /// A cursor over the frames after the header of a segment whose decoded header is `header`.
    pub fn for_segment(header: &SegmentHeader) -> Self {
        FrameCursor::new(
            HEADER_LEN,
            header.layout(),
            header.max_payload,
            header.first_seq,
            header.prev_chain,
            true,
        )
    }
}

impl FrameCursor<RecordKind> {
    /// A cursor over the bytes of a segment from `last_frame_offset` on, where a trusted prefix
    /// (a point an index sidecar vouches for) ends with the frame with sequence number
    /// `last_seq` and chain value `chain`, just before `data_end`. That frame is read again,
    /// not trusted blindly: the durable sequence number it records is the least the next frame
    /// may record, as in a scan from the start. A frame that is not there ends the cursor with
    /// damage at `last_frame_offset`.
    pub fn resuming(
        header: &SegmentHeader,
        last_seq: u64,
        chain: ChainValue,
        (last_frame_offset, data_end): (u64, u64),
        bytes: &[u8],
    ) -> Self {
        let mut cursor = FrameCursor::new(
            0,
            header.layout(),
            header.max_payload,
            last_seq.saturating_add(1),
            chain,
            true,
        )
        .at_base(last_frame_offset)
        .counted_from(header.first_seq);
        match decode_frame::<RecordKind>(bytes, cursor.layout, cursor.max_payload) {
            Ok(FrameDecode::Frame(frame, used))
                if frame.seq == last_seq
                    && frame.chain == chain
                    && last_frame_offset.checked_add(used as u64) == Some(data_end) =>
            {
                cursor.pos = used;
                cursor.durable = frame.durable_seq.unwrap_or(0);
            }
            _ => {
                cursor.end = Some(Tail::Damaged {
                    offset: last_frame_offset,
                    what: format!(
                        "the frame a trusted prefix ends with (sequence number {last_seq}, \
                         ending at byte {data_end}) is not here"
                    ),
                })
            }
        }
        cursor
    }
}

impl<K: FrameKind> FrameCursor<K> {
    /// A cursor over frames laid out as `layout` starting at byte `start`, the first with
    /// sequence number `first_seq` continuing the chain from `prev_chain`. `footers` says
    /// whether a seal footer may end them.
    pub fn new(
        start: usize,
        layout: FrameLayout,
        max_payload: u32,
        first_seq: u64,
        prev_chain: ChainValue,
        footers: bool,
    ) -> Self {
        FrameCursor {
            pos: start,
            base: 0,
            layout,
            max_payload,
            footers,
            kind: PhantomData,
            next_seq: first_seq,
            chain: prev_chain,
            count: 0,
            durable: 0,
            end: None,
        }
    }

    /// The same cursor reading bytes that start at offset `base` of the file, so that every
    /// offset it reports (and the one a seal footer must name) is the file's.
    pub fn at_base(mut self, base: u64) -> Self {
        self.base = base;
        self
    }

    /// The same cursor resuming inside a segment whose first frame has sequence number
    /// `segment_first_seq`: the frames before the resume point count toward a seal footer's
    /// frame count.
    pub fn counted_from(mut self, segment_first_seq: u64) -> Self {
        self.count = self.next_seq.saturating_sub(segment_first_seq);
        self
    }

    fn abs(&self, pos: usize) -> u64 {
        self.base + pos as u64
    }

    /// Offset just past the last valid frame returned so far.
    pub fn data_end(&self) -> u64 {
        self.abs(self.pos)
    }

    /// Chain value after the last valid frame returned so far.
    pub fn chain(&self) -> ChainValue {
        self.chain
    }

    /// Sequence number the next frame must carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Number of valid frames so far (counting those before a resume point).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// What follows the last valid frame, once [`FrameCursor::next_frame`] has returned `None`.
    pub fn end(&self) -> Option<&Tail> {
        self.end.as_ref()
    }

    /// The next valid frame and its offset, or `None` at the end of data or at damage.
    pub fn next_frame<'a>(&mut self, bytes: &'a [u8]) -> Option<(u64, Frame<'a, K>)> {
        if self.end.is_some() {
            return None;
        }
        let rest = bytes.get(self.pos..).unwrap_or(&[]);
        if self.footers && SealFooter::looks_like_footer(rest) {
            self.end = Some(self.footer_end(rest));
            return None;
        }
        match decode_frame::<K>(rest, self.layout, self.max_payload) {
            Ok(FrameDecode::EndOfData) => {
                self.end = Some(self.after_end_of_data(rest));
                None
            }
            Ok(FrameDecode::Frame(frame, used)) => {
                let offset = self.abs(self.pos);
                if frame.seq != self.next_seq {
                    self.end = Some(Tail::Damaged {
                        offset,
                        what: format!(
                            "frame has sequence number {}, expected {}",
                            frame.seq, self.next_seq
                        ),
                    });
                    return None;
                }
                if frame.seq == u64::MAX {
                    self.end = Some(Tail::Damaged {
                        offset,
                        what: "frame uses the last sequence number there is".into(),
                    });
                    return None;
                }
                let expected = next_chain(&self.chain, frame.seq, frame.kind.code(), frame.payload);
                if frame.chain != expected {
                    self.end = Some(Tail::Damaged {
                        offset,
                        what: format!("frame {} breaks the hash chain", frame.seq),
                    });
                    return None;
                }
                let durable = frame.durable_seq.unwrap_or(0);
                if durable < self.durable {
                    self.end = Some(Tail::Damaged {
                        offset,
                        what: format!(
                            "frame {} records record {durable} as durable, the frame before it \
                             record {}",
                            frame.seq, self.durable
                        ),
                    });
                    return None;
                }
                self.durable = durable;
                debug_assert!(
                    durable < frame.seq,
                    "decode_frame refuses a frame durable before it"
                );
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
}
