//! The 256-byte header every segment file starts with.
//!
//! Layout (little-endian), described byte by byte in format/FORMAT.md:
//! magic[8] version u16 algo u8 flags u8 max_payload u32 ordinal u64 first_seq u64
//! prev_chain[32] id_len u16 session_id[128] reserved[58] crc u32.

use super::file_header::{decode_prefix, encode_prefix, seal_crc, Prefix};
use super::FrameLayout;
use super::{
    array32_at, u16_at, u64_at, validate_session_id, ChainValue, FormatError, MAX_SESSION_ID_LEN,
};

/// Size of a segment header in bytes.
pub const HEADER_LEN: usize = 256;

/// The first eight bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"MKLGSEG\0";

const ID_LEN_AT: usize = 64;
const ID_AT: usize = 66;
const CRC_AT: usize = HEADER_LEN - 4;

/// What a segment header says about its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Format version of the file.
    pub version: u16,
    /// The largest payload a frame of this segment may carry.
    pub max_payload: u32,
    /// Position of this segment in its session, from 0, without gaps.
    pub ordinal: u64,
    /// Sequence number of the segment's first frame (sessions start at 1).
    pub first_seq: u64,
    /// The chain value this segment continues from (the previous segment's last, or genesis).
    pub prev_chain: ChainValue,
    /// The session this segment belongs to.
    pub session_id: String,
}

impl SegmentHeader {
    /// How the file's frames are laid out. A decoded header has a version this build reads.
    pub fn layout(&self) -> FrameLayout {
        super::layout_of(self.version)
    }

    /// Encodes the header into exactly [`HEADER_LEN`] bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        encode_prefix(&mut b, &SEGMENT_MAGIC, self.version, self.max_payload);
        b[16..24].copy_from_slice(&self.ordinal.to_le_bytes());
        b[24..32].copy_from_slice(&self.first_seq.to_le_bytes());
        b[32..64].copy_from_slice(&self.prev_chain);
        let id = self.session_id.as_bytes();
        let n = id.len().min(MAX_SESSION_ID_LEN);
        b[ID_LEN_AT..ID_LEN_AT + 2].copy_from_slice(&(n as u16).to_le_bytes());
        b[ID_AT..ID_AT + n].copy_from_slice(&id[..n]);
        seal_crc(&mut b);
        b
    }

    /// Decodes a header from the start of `bytes`; returns it and [`HEADER_LEN`].
    pub fn decode(bytes: &[u8]) -> Result<(SegmentHeader, usize), FormatError> {
        let (
            b,
            Prefix {
                version,
                max_payload,
            },
        ) = decode_prefix(bytes, HEADER_LEN, &SEGMENT_MAGIC, "segment")?;
        let ordinal = u64_at(b, 16);
        let first_seq = u64_at(b, 24);
        if first_seq == 0 {
            return Err(FormatError::new(24, "first sequence number is 0"));
        }
        let prev_chain = array32_at(b, 32);
        let id_len = u16_at(b, ID_LEN_AT) as usize;
        if id_len == 0 || id_len > MAX_SESSION_ID_LEN {
            return Err(FormatError::new(
                ID_LEN_AT,
                format!("session id length {id_len} outside 1..={MAX_SESSION_ID_LEN}"),
            ));
        }
        let session_id = std::str::from_utf8(&b[ID_AT..ID_AT + id_len])
            .map_err(|_| FormatError::new(ID_AT, "session id is not UTF-8"))?;
        validate_session_id(session_id).map_err(|why| FormatError::new(ID_AT, why))?;
        if let Some(i) = b[ID_AT + id_len..CRC_AT].iter().position(|&x| x != 0) {
            return Err(FormatError::new(
                ID_AT + id_len + i,
                "padding after the session id is not zero",
            ));
        }
        Ok((
            SegmentHeader {
                version,
                max_payload,
                ordinal,
                first_seq,
                prev_chain,
                session_id: session_id.to_owned(),
            },
            HEADER_LEN,
        ))
    }
}
