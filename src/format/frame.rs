//! A frame: one record in a segment or in the claims log.
//!
//! Version 1 layout (little-endian): payload_len u32 ‖ crc u32 ‖ seq u64 ‖ kind u8 ‖ payload ‖
//! chain[32]. Version 2 adds, after the kind, durable_seq u64: the highest sequence number of
//! the log that was durable when the frame was written, so recovery can tell a batch that was
//! never synced (its pages may reach the disk in any order) from damage to synced records. The
//! CRC-32 covers every byte of the frame except itself. A frame header of all zeros is never
//! valid (kind 0 does not exist): it marks the end of data in a preallocated segment.

use super::{array32_at, u32_at, u64_at, ChainValue, FormatError, RecordKind, CHAIN_LEN};

/// The kinds of record one kind of file may hold. Code 0 is never a kind, so an all-zero frame
/// header never decodes.
pub trait FrameKind: Copy + Eq + std::fmt::Debug {
    /// The kind with this code, if this file type has one.
    fn from_code(code: u8) -> Option<Self>;
    /// The byte stored in the frame.
    fn code(self) -> u8;
    /// The name tools print.
    fn name(self) -> &'static str;
    /// The first file version whose frames may carry this kind: in an older file it is an
    /// unknown kind, as it was to that version's readers.
    fn first_version(self) -> u16 {
        1
    }
}

/// The kind with this code, if a file laid out as `layout` may hold it.
pub(crate) fn kind_in<K: FrameKind>(layout: FrameLayout, code: u8) -> Option<K> {
    K::from_code(code).filter(|k| k.first_version() <= layout.version())
}

/// How the frames of one file are laid out; the file header's version decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameLayout {
    /// Length, CRC, sequence number, kind.
    V1,
    /// Version 1 plus the durable sequence number at the time of writing.
    V2,
    /// The version 2 layout; segments may also hold `turn_rejection` records.
    V3,
}

impl FrameLayout {
    /// The layout of the files this build creates in a new root (format version
    /// [`super::FORMAT_VERSION`]).
    pub const NEW: FrameLayout = FrameLayout::V3;

    /// The layout of a file header's version, if this build reads it.
    pub const fn for_version(version: u16) -> Option<FrameLayout> {
        match version {
            1 => Some(FrameLayout::V1),
            2 => Some(FrameLayout::V2),
            3 => Some(FrameLayout::V3),
            _ => None,
        }
    }

    /// The file version that lays frames out this way.
    pub const fn version(self) -> u16 {
        match self {
            FrameLayout::V1 => 1,
            FrameLayout::V2 => 2,
            FrameLayout::V3 => 3,
        }
    }

    /// Bytes before the payload.
    pub const fn header_len(self) -> usize {
        match self {
            FrameLayout::V1 => 17,
            FrameLayout::V2 | FrameLayout::V3 => 25,
        }
    }

    /// Bytes a frame adds to its payload.
    pub const fn overhead(self) -> usize {
        self.header_len() + CHAIN_LEN
    }

    /// True when frames say how far the log was durable as they were written.
    pub const fn records_durable(self) -> bool {
        !matches!(self, FrameLayout::V1)
    }
}

const _: () = assert!(matches!(
    FrameLayout::for_version(super::FORMAT_VERSION),
    Some(FrameLayout::NEW)
));

/// Bytes before the payload in a version 1 frame: length, CRC, sequence number, kind.
pub const FRAME_HEADER_LEN: usize = FrameLayout::V1.header_len();

/// Bytes a version 1 frame adds to its payload.
pub const FRAME_OVERHEAD: usize = FrameLayout::V1.overhead();

/// The largest frame overhead of any layout: a bound for readers that do not know the layout.
pub const MAX_FRAME_OVERHEAD: usize = FrameLayout::V2.overhead();

/// A decoded frame borrowing its payload from the decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a, K = RecordKind> {
    /// Sequence number in the session, from 1, without gaps.
    pub seq: u64,
    /// What the payload is.
    pub kind: K,
    /// The highest sequence number durable when the frame was written (version 2 frames).
    pub durable_seq: Option<u64>,
    /// The record bytes.
    pub payload: &'a [u8],
    /// The chain value stored in the frame.
    pub chain: ChainValue,
}

/// What [`decode_frame`] found at the start of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameDecode<'a, K = RecordKind> {
    /// A frame whose CRC holds, and how many bytes it used.
    Frame(Frame<'a, K>, usize),
    /// The end of data: no bytes left, or a frame header (or what remains of one) of all zeros.
    EndOfData,
}

/// Appends the encoding of one frame to `out`. `chain` must be `next_chain(prev, seq, kind,
/// payload)`; `durable_seq` is written only by layouts that record it.
#[allow(clippy::too_many_arguments)]
pub fn encode_frame<K: FrameKind>(
    out: &mut Vec<u8>,
    layout: FrameLayout,
    seq: u64,
    kind: K,
    payload: &[u8],
    chain: &ChainValue,
    durable_seq: u64,
) {
    let start = out.len();
    encode_unstamped(out, layout, seq, kind, payload, chain);
    stamp_frame(&mut out[start..], layout, durable_seq);
}

/// Appends one frame without its durable sequence number and CRC, which [`stamp_frame`] fills
/// in when the frame is written: only then is it known how far the log is durable.
pub(crate) fn encode_unstamped<K: FrameKind>(
    out: &mut Vec<u8>,
    layout: FrameLayout,
    seq: u64,
    kind: K,
    payload: &[u8],
    chain: &ChainValue,
) {
    // One allocation for the frame, not one a doubling while its parts go in.
    out.reserve(layout.overhead() + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.push(kind.code());
    if layout.records_durable() {
        out.extend_from_slice(&[0u8; 8]);
    }
    out.extend_from_slice(payload);
    out.extend_from_slice(chain);
}

/// Fills in the durable sequence number (where the layout has one) and the CRC of the frame
/// encoded at the start of `frame`; returns the frame's length.
pub(crate) fn stamp_frame(frame: &mut [u8], layout: FrameLayout, durable_seq: u64) -> usize {
    let total = layout.overhead() + u32_at(frame, 0) as usize;
    debug_assert!(
        durable_seq < u64_at(frame, 8),
        "a frame is durable only after it is written"
    );
    if layout.records_durable() {
        frame[17..25].copy_from_slice(&durable_seq.to_le_bytes());
    }
    let crc = frame_crc(&frame[..total]);
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
    total
}

fn frame_crc(frame: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&frame[0..4]);
    h.update(&frame[8..]);
    h.finalize()
}

/// Decodes the frame at the start of `bytes`. `max_payload` is the segment header's bound:
/// a larger length is refused before anything is read or allocated.
pub fn decode_frame<K: FrameKind>(
    bytes: &[u8],
    layout: FrameLayout,
    max_payload: u32,
) -> Result<FrameDecode<'_, K>, FormatError> {
    let header_len = layout.header_len();
    let head = &bytes[..bytes.len().min(header_len)];
    if head.iter().all(|&b| b == 0) {
        return Ok(FrameDecode::EndOfData);
    }
    if bytes.len() < header_len {
        return Err(FormatError::new(
            bytes.len(),
            format!(
                "incomplete frame header: {} of {header_len} bytes",
                bytes.len()
            ),
        ));
    }
    let len = u32_at(bytes, 0);
    if len > max_payload {
        return Err(FormatError::new(
            0,
            format!("frame length {len} exceeds the segment's bound {max_payload}"),
        ));
    }
    let total = layout.overhead() + len as usize;
    if bytes.len() < total {
        return Err(FormatError::new(
            bytes.len(),
            format!("incomplete frame: {} of {total} bytes", bytes.len()),
        ));
    }
    let stored = u32_at(bytes, 4);
    let computed = frame_crc(&bytes[..total]);
    if stored != computed {
        return Err(FormatError::new(
            4,
            format!("frame CRC mismatch: stored {stored:08x}, computed {computed:08x}"),
        ));
    }
    let seq = u64_at(bytes, 8);
    if seq == 0 {
        return Err(FormatError::new(8, "frame sequence number is 0"));
    }
    let kind = kind_in::<K>(layout, bytes[16])
        .ok_or_else(|| FormatError::new(16, format!("unknown record kind {}", bytes[16])))?;
    let durable_seq = layout.records_durable().then(|| u64_at(bytes, 17));
    if let Some(d) = durable_seq.filter(|&d| d >= seq) {
        return Err(FormatError::new(
            17,
            format!("frame {seq} says record {d} was durable when it was written"),
        ));
    }
    let payload_end = header_len + len as usize;
    Ok(FrameDecode::Frame(
        Frame {
            seq,
            kind,
            durable_seq,
            payload: &bytes[header_len..payload_end],
            chain: array32_at(bytes, payload_end),
        },
        total,
    ))
}
