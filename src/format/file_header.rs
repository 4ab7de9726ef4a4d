//! The first 16 bytes every log file header shares (segments and the claims log), and the
//! header CRC in its last 4 bytes: magic[8] version u16 algo u8 flags u8 max_payload u32.

use super::{u16_at, u32_at, FormatError, FrameLayout, CHECKSUM_CRC32_SHA256, MAX_PAYLOAD_LIMIT};

/// What the shared prefix says.
pub(crate) struct Prefix {
    pub version: u16,
    pub max_payload: u32,
}

/// Writes the shared prefix into the start of `b`.
pub(crate) fn encode_prefix(b: &mut [u8], magic: &[u8; 8], version: u16, max_payload: u32) {
    b[0..8].copy_from_slice(magic);
    b[8..10].copy_from_slice(&version.to_le_bytes());
    b[10] = CHECKSUM_CRC32_SHA256;
    b[11] = 0;
    b[12..16].copy_from_slice(&max_payload.to_le_bytes());
}

/// Writes the CRC-32 of everything before the last 4 bytes of `b` into them.
pub(crate) fn seal_crc(b: &mut [u8]) {
    let at = b.len() - 4;
    let crc = crc32fast::hash(&b[..at]);
    b[at..].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a header of `len` bytes at the start of `bytes` (a `what` header with `magic`): its
/// length, magic, CRC, version, checksum algorithm, flags and payload bound. Returns the
/// header's bytes and its prefix.
pub(crate) fn decode_prefix<'a>(
    bytes: &'a [u8],
    len: usize,
    magic: &[u8; 8],
    what: &str,
) -> Result<(&'a [u8], Prefix), FormatError> {
    if bytes.len() < len {
        return Err(FormatError::new(
            bytes.len(),
            format!("{what} header needs {len} bytes, file has {}", bytes.len()),
        ));
    }
    let b = &bytes[..len];
    if b[0..8] != *magic {
        return Err(FormatError::new(0, format!("bad {what} magic")));
    }
    let crc_at = len - 4;
    let stored = u32_at(b, crc_at);
    let computed = crc32fast::hash(&b[..crc_at]);
    if stored != computed {
        return Err(FormatError::new(
            crc_at,
            format!("{what} header CRC mismatch: stored {stored:08x}, computed {computed:08x}"),
        ));
    }
    let version = u16_at(b, 8);
    if FrameLayout::for_version(version).is_none() {
        return Err(FormatError::new(
            8,
            format!("unsupported {what} format version {version}"),
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
    Ok((
        b,
        Prefix {
            version,
            max_payload,
        },
    ))
}
