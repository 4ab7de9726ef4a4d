//! Pure byte encoders and decoders: segment header, frame, seal footer and the hash chain.
//!
//! Nothing here touches files or clocks. Every decoder is a function over a byte slice that
//! returns the value and the number of bytes it used, and never allocates more than the bytes
//! present. These are what the golden vectors and the fuzz targets exercise.

mod batch;
pub mod chain;
pub mod claim_kind;
pub mod claims_header;
pub mod cursor;
mod file_header;
pub mod footer;
pub mod frame;
pub mod header;
pub mod json_object;
pub mod record_kind;

pub(crate) use batch::FrameBatch;
pub use chain::{genesis_chain, next_chain, ChainValue, CHAIN_LEN};
pub use claim_kind::ClaimKind;
pub use claims_header::{claims_genesis, ClaimsHeader, CLAIMS_HEADER_LEN, CLAIMS_MAGIC};
pub use cursor::{FrameCursor, Tail};
pub use footer::{SealFooter, FOOTER_LEN, FOOTER_MAGIC};
pub use frame::{
    decode_frame, encode_frame, Frame, FrameDecode, FrameKind, FrameLayout, FRAME_HEADER_LEN,
    FRAME_OVERHEAD, MAX_FRAME_OVERHEAD,
};
pub use header::{SegmentHeader, HEADER_LEN, SEGMENT_MAGIC};
pub use record_kind::RecordKind;

/// The format version this build writes for a new root. A root keeps the version its marker
/// names: files of a version 1 root are continued (and new ones created) in version 1.
pub const FORMAT_VERSION: u16 = 3;

/// The oldest format version this build reads and continues.
pub const OLDEST_FORMAT_VERSION: u16 = 1;

/// Checksum-algorithm id 1: CRC-32 (IEEE, as `crc32fast`) per frame, SHA-256 chain.
pub const CHECKSUM_CRC32_SHA256: u8 = 1;

/// The largest payload any segment may declare as its bound (16 MiB).
pub const MAX_PAYLOAD_LIMIT: u32 = 16 << 20;

/// The payload bound new segments declare unless configured otherwise (4 MiB).
pub const DEFAULT_MAX_PAYLOAD: u32 = 4 << 20;

/// The longest session id, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Why bytes failed to decode; `offset` is relative to the slice handed to the decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset of the problem within the decoded slice.
    pub offset: usize,
    /// What is wrong, for a person.
    pub what: String,
}

impl FormatError {
    pub(crate) fn new(offset: usize, what: impl Into<String>) -> Self {
        FormatError {
            offset,
            what: what.into(),
        }
    }
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.what)
    }
}

/// Checks that a session id is safe as a path component: `^[A-Za-z0-9_-]{1,128}$`.
pub fn validate_session_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
        return Err(format!(
            "session id must be 1 to {MAX_SESSION_ID_LEN} bytes, got {}",
            id.len()
        ));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "session id {id:?} has {c:?}; only A-Z a-z 0-9 _ - are allowed"
        ));
    }
    Ok(())
}

/// The frame layout of a file version this build reads (decoders refuse any other).
pub(crate) fn layout_of(version: u16) -> FrameLayout {
    debug_assert!(
        FrameLayout::for_version(version).is_some(),
        "version {version}"
    );
    FrameLayout::for_version(version).unwrap_or(FrameLayout::V2)
}

/// Lowercase hex of any bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The 32 bytes 64 hex digits (either case) spell; `None` for anything else.
pub fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    let digits = text.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in digits.chunks(2).enumerate() {
        let nibble = |c: u8| (c as char).to_digit(16);
        out[i] = (nibble(pair[0])? * 16 + nibble(pair[1])?) as u8;
    }
    Some(out)
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

pub(crate) fn array32_at(b: &[u8], at: usize) -> [u8; 32] {
    let mut a = [0u8; 32];
    a.copy_from_slice(&b[at..at + 32]);
    a
}
