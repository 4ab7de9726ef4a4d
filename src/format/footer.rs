//! The seal footer that closes a segment when the writer rolls to the next one.
//!
//! Layout (little-endian): magic[8] ‖ footer_offset u64 ‖ last_seq u64 ‖ frame_count u64 ‖
//! chain[32] ‖ crc u32 — 68 bytes. The magic read as a frame length is about 1.2 GB, far above
//! any segment's payload bound, so a footer can never be mistaken for a frame.

use super::{array32_at, u32_at, u64_at, ChainValue, FormatError, MAX_PAYLOAD_LIMIT};

/// Size of a seal footer in bytes.
pub const FOOTER_LEN: usize = 68;

/// The first eight bytes of a seal footer.
pub const FOOTER_MAGIC: [u8; 8] = *b"MKLGSEAL";

const _: () = assert!(
    u32::from_le_bytes([
        FOOTER_MAGIC[0],
        FOOTER_MAGIC[1],
        FOOTER_MAGIC[2],
        FOOTER_MAGIC[3]
    ]) > MAX_PAYLOAD_LIMIT
);

/// What a seal footer says about the segment it closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealFooter {
    /// Byte offset of the footer itself in its file (binds the footer to its place).
    pub footer_offset: u64,
    /// Sequence number of the segment's last frame (first_seq − 1 when it has none).
    pub last_seq: u64,
    /// Number of frames in the segment.
    pub frame_count: u64,
    /// Chain value after the segment's last frame; the next segment's header repeats it.
    pub chain: ChainValue,
}

impl SealFooter {
    /// Encodes the footer into exactly [`FOOTER_LEN`] bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&FOOTER_MAGIC);
        b[8..16].copy_from_slice(&self.footer_offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.last_seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.frame_count.to_le_bytes());
        b[32..64].copy_from_slice(&self.chain);
        let crc = crc32fast::hash(&b[..64]);
        b[64..68].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// True when `bytes` starts with the footer magic (whether or not the rest is valid).
    pub fn looks_like_footer(bytes: &[u8]) -> bool {
        bytes.len() >= FOOTER_MAGIC.len() && bytes[..FOOTER_MAGIC.len()] == FOOTER_MAGIC
    }

    /// Decodes a footer from the start of `bytes`; returns it and [`FOOTER_LEN`].
    pub fn decode(bytes: &[u8]) -> Result<(SealFooter, usize), FormatError> {
        if bytes.len() < FOOTER_LEN {
            return Err(FormatError::new(
                bytes.len(),
                format!(
                    "incomplete seal footer: {} of {FOOTER_LEN} bytes",
                    bytes.len()
                ),
            ));
        }
        if bytes[..8] != FOOTER_MAGIC {
            return Err(FormatError::new(0, "bad seal footer magic"));
        }
        let stored = u32_at(bytes, 64);
        let computed = crc32fast::hash(&bytes[..64]);
        if stored != computed {
            return Err(FormatError::new(
                64,
                format!("seal footer CRC mismatch: stored {stored:08x}, computed {computed:08x}"),
            ));
        }
        Ok((
            SealFooter {
                footer_offset: u64_at(bytes, 8),
                last_seq: u64_at(bytes, 16),
                frame_count: u64_at(bytes, 24),
                chain: array32_at(bytes, 32),
            },
            FOOTER_LEN,
        ))
    }
}
