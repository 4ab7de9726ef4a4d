//! The 128-byte header of the claims log.
//!
//! Layout (little-endian), described byte by byte in format/FORMAT.md:
//! magic[8] version u16 algo u8 flags u8 max_payload u32 root_id[32] reserved[76] crc u32.

use super::file_header::{decode_prefix, encode_prefix, seal_crc, Prefix};
use super::FrameLayout;
use super::{array32_at, ChainValue, FormatError};
use sha2::{Digest, Sha256};

/// Size of the claims-log header in bytes.
pub const CLAIMS_HEADER_LEN: usize = 128;

/// The first eight bytes of the claims log.
pub const CLAIMS_MAGIC: [u8; 8] = *b"MKLGCLM\0";

const CRC_AT: usize = CLAIMS_HEADER_LEN - 4;

/// What the claims-log header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsHeader {
    /// Format version of the file.
    pub version: u16,
    /// The largest payload a frame may carry.
    pub max_payload: u32,
    /// The root this log belongs to: the marker's rootId as 32 bytes.
    pub root_id: [u8; 32],
}

impl ClaimsHeader {
    /// How the file's frames are laid out. A decoded header has a version this build reads.
    pub fn layout(&self) -> FrameLayout {
        super::layout_of(self.version)
    }

    /// Encodes the header into exactly [`CLAIMS_HEADER_LEN`] bytes.
    pub fn encode(&self) -> [u8; CLAIMS_HEADER_LEN] {
        let mut b = [0u8; CLAIMS_HEADER_LEN];
        encode_prefix(&mut b, &CLAIMS_MAGIC, self.version, self.max_payload);
        b[16..48].copy_from_slice(&self.root_id);
        seal_crc(&mut b);
        b
    }

    /// Decodes a header from the start of `bytes`; returns it and [`CLAIMS_HEADER_LEN`].
    pub fn decode(bytes: &[u8]) -> Result<(ClaimsHeader, usize), FormatError> {
        let (
            b,
            Prefix {
                version,
                max_payload,
            },
        ) = decode_prefix(bytes, CLAIMS_HEADER_LEN, &CLAIMS_MAGIC, "claims-log")?;
        if let Some(i) = b[48..CRC_AT].iter().position(|&x| x != 0) {
            return Err(FormatError::new(48 + i, "reserved bytes are not zero"));
        }
        Ok((
            ClaimsHeader {
                version,
                max_payload,
                root_id: array32_at(b, 16),
            },
            CLAIMS_HEADER_LEN,
        ))
    }
}

const CLAIMS_GENESIS_DOMAIN: &[u8] = b"makalog claims chain v1\0";

/// The chain value the claims log of a root starts from; it binds the log to its root.
pub fn claims_genesis(root_id: &[u8; 32]) -> ChainValue {
    let mut h = Sha256::new();
    h.update(CLAIMS_GENESIS_DOMAIN);
    h.update(root_id);
    h.finalize().into()
}
