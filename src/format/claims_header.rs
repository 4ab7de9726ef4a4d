//! The 128-byte header of the claims log.
//!
//! Layout (little-endian), described byte by byte in format/FORMAT.md:
//! magic[8] version u16 algo u8 flags u8 max_payload u32 root_id[32] reserved[76] crc u32.

use super::{
    array32_at, u16_at, u32_at, ChainValue, FormatError, CHECKSUM_CRC32_SHA256, FORMAT_VERSION,
    MAX_PAYLOAD_LIMIT,
};
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
    /// Encodes the header into exactly [`CLAIMS_HEADER_LEN`] bytes.
    pub fn encode(&self) -> [u8; CLAIMS_HEADER_LEN] {
        let mut b = [0u8; CLAIMS_HEADER_LEN];
        b[0..8].copy_from_slice(&CLAIMS_MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10] = CHECKSUM_CRC32_SHA256;
        b[12..16].copy_from_slice(&self.max_payload.to_le_bytes());
        b[16..48].copy_from_slice(&self.root_id);
        let crc = crc32fast::hash(&b[..CRC_AT]);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header from the start of `bytes`; returns it and [`CLAIMS_HEADER_LEN`].
    pub fn decode(bytes: &[u8]) -> Result<(ClaimsHeader, usize), FormatError> {
        if bytes.len() < CLAIMS_HEADER_LEN {
            return Err(FormatError::new(
                bytes.len(),
                format!(
                    "claims header needs {CLAIMS_HEADER_LEN} bytes, file has {}",
                    bytes.len()
                ),
            ));
        }
        let b = &bytes[..CLAIMS_HEADER_LEN];
        if b[0..8] != CLAIMS_MAGIC {
            return Err(FormatError::new(0, "bad claims-log magic"));
        }
        let stored = u32_at(b, CRC_AT);
        let computed = crc32fast::hash(&b[..CRC_AT]);
        if stored != computed {
            return Err(FormatError::new(
                CRC_AT,
                format!("claims header CRC mismatch: stored {stored:08x}, computed {computed:08x}"),
            ));
        }
        let version = u16_at(b, 8);
        if version != FORMAT_VERSION {
            return Err(FormatError::new(
                8,
                format!("unsupported claims-log version {version}"),
            ));
        }
        if b[10] != CHECKSUM_CRC32_SHA256 {
            return Err(FormatError::new(
                10,
                format!("unknown checksum algorithm {}", b[10]),
            ));
        }
        if b[11] != 0 {
            return Err(FormatError::new(11, "reserved flags are not zero"));
        }
        let max_payload = u32_at(b, 12);
        if max_payload == 0 || max_payload > MAX_PAYLOAD_LIMIT {
            return Err(FormatError::new(
                12,
                format!("max payload {max_payload} outside 1..={MAX_PAYLOAD_LIMIT}"),
            ));
        }
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
