//! A frame: one record in a segment or in the claims log.
//!
//! Layout (little-endian): payload_len u32 ‖ crc u32 ‖ seq u64 ‖ kind u8 ‖ payload ‖ chain[32].
//! The CRC-32 covers every byte of the frame except itself. A frame header of all zeros is
//! never valid (kind 0 does not exist): it marks the end of data in a preallocated segment.

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
}

/// Bytes before the payload: length, CRC, sequence number, kind.
pub const FRAME_HEADER_LEN: usize = 17;

/// Bytes a frame adds to its payload.
pub const FRAME_OVERHEAD: usize = FRAME_HEADER_LEN + CHAIN_LEN;

/// A decoded frame borrowing its payload from the decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a, K = RecordKind> {
    /// Sequence number in the session, from 1, without gaps.
    pub seq: u64,
    /// What the payload is.
    pub kind: K,
    /// The record bytes.
    pub payload: &'a [u8],
    /// The chain value stored in the frame.
    pub chain: ChainValue,
}

impl<K> Frame<'_, K> {
    /// Total encoded length of this frame.
    pub fn encoded_len(&self) -> usize {
        FRAME_OVERHEAD + self.payload.len()
    }
}

/// What [`decode_frame`] found at the start of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameDecode<'a, K = RecordKind> {
    /// A frame whose CRC holds, and how many bytes it used.
    Frame(Frame<'a, K>, usize),
    /// The end of data: no bytes left, or a frame header (or what remains of one) of all zeros.
    EndOfData,
}

/// Appends the encoding of one frame to `out`. `chain` must be `next_chain(prev, seq, kind, payload)`.
pub fn encode_frame<K: FrameKind>(
    out: &mut Vec<u8>,
    seq: u64,
    kind: K,
    payload: &[u8],
    chain: &ChainValue,
) {
    let start = out.len();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.push(kind.code());
    out.extend_from_slice(payload);
    out.extend_from_slice(chain);
    let mut h = crc32fast::Hasher::new();
    h.update(&out[start..start + 4]);
    h.update(&out[start + 8..]);
    let crc = h.finalize();
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Decodes the frame at the start of `bytes`. `max_payload` is the segment header's bound:
/// a larger length is refused before anything is read or allocated.
pub fn decode_frame<K: FrameKind>(
    bytes: &[u8],
    max_payload: u32,
) -> Result<FrameDecode<'_, K>, FormatError> {
    let head = &bytes[..bytes.len().min(FRAME_HEADER_LEN)];
    if head.iter().all(|&b| b == 0) {
        return Ok(FrameDecode::EndOfData);
    }
    if bytes.len() < FRAME_HEADER_LEN {
        return Err(FormatError::new(
            bytes.len(),
            format!(
                "incomplete frame header: {} of {FRAME_HEADER_LEN} bytes",
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
    let total = FRAME_OVERHEAD + len as usize;
    if bytes.len() < total {
        return Err(FormatError::new(
            bytes.len(),
            format!("incomplete frame: {} of {total} bytes", bytes.len()),
        ));
    }
    let stored = u32_at(bytes, 4);
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[0..4]);
    h.update(&bytes[8..total]);
    let computed = h.finalize();
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
    let kind = K::from_code(bytes[16])
        .ok_or_else(|| FormatError::new(16, format!("unknown record kind {}", bytes[16])))?;
    let payload_end = FRAME_HEADER_LEN + len as usize;
    Ok(FrameDecode::Frame(
        Frame {
            seq,
            kind,
            payload: &bytes[FRAME_HEADER_LEN..payload_end],
            chain: array32_at(bytes, payload_end),
        },
        total,
    ))
}
