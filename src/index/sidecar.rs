//! The index sidecar file `sessions/<id>/index`: a session's materialized view, written
//! atomically, with a header that says what it covers. Pure: bytes in, bytes out.
//!
//! Layout (little-endian; format/FORMAT.md describes every byte):
//! magic[8] version u16 reserved u16 header_len u32 cover_count u32 covers[cover_count × 72]
//! sections[5 × 20] header_crc u32, then the sections: runs, invocations, ids (bincode), the
//! session id, and the session records' state (bincode; version 3, and version 4 with the
//! start rejections). The ids section is a sorted array of fixed 40-byte entries, searched in
//! place. Versions 1 and 2 have 4 sections.

use super::entries::{Cover, IdEntry, InvocationEntry, RunEntry};
use super::session_state::SessionState;
use super::view::SessionIndex;
use crate::format::{u32_at, u64_at, FormatError};
use std::collections::BTreeMap;

/// The first eight bytes of a sidecar.
pub const SIDECAR_MAGIC: [u8; 8] = *b"MKLGIDX\0";

/// The sidecar version this build writes. It also reads version 3 (a session state without
/// start rejections), 2 (no session state) and 1 (whose opening and terminal events also hold
/// their JSON instead of where they lie: see `sidecar_old`). Their writers did not read every
/// session record, so they never vouch for a log.
pub const SIDECAR_VERSION: u16 = 4;

pub use crate::segment::layout::SIDECAR_FILE;

const FIXED: usize = 20;
const COVER_LEN: usize = 72;
const SECTION_LEN: usize = 20;
/// Sections of a version 3 or 4 sidecar; versions 1 and 2 have the first four.
const SECTIONS: usize = 5;

/// How many sections a sidecar of `version` has.
fn sections_of(version: u16) -> usize {
    if version >= 3 {
        SECTIONS
    } else {
        SECTIONS - 1
    }
}
/// Bytes of one id entry as bincode encodes it.
pub const ID_ENTRY_LEN: usize = 40;

/// Where a section lies and its CRC-32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
}

/// A decoded sidecar header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarHeader {
    pub version: u16,
    pub covers: Vec<Cover>,
    /// runs, invocations, ids, session id, and (version 3) session state.
    pub sections: Vec<Section>,
}

pub(super) fn bincode_err(e: bincode::Error) -> FormatError {
    FormatError::new(0, format!("sidecar section does not decode: {e}"))
}

/// Encodes a view, with `base_ids` (the entries of an earlier sidecar the view was caught up
/// from) merged into its own. A rebuild and a caught-up view of the same log encode to the same
/// bytes.
pub fn encode_sidecar(view: &SessionIndex, base_ids: &[IdEntry]) -> Result<Vec<u8>, FormatError> {
    let runs: Vec<(&String, &RunEntry)> = view.runs.iter().collect();
    let invocations: Vec<(&String, &InvocationEntry)> = view.invocations.iter().collect();
    let mut ids: Vec<IdEntry> = view
        .ids
        .values()
        .copied()
        .chain(base_ids.iter().copied())
        .collect();
    ids.sort_by_key(|e| (e.hash, e.record_seq));
    let bodies = [
        bincode::serialize(&runs).map_err(bincode_err)?,
        bincode::serialize(&invocations).map_err(bincode_err)?,
        bincode::serialize(&ids).map_err(bincode_err)?,
        view.session_id.as_bytes().to_vec(),
        bincode::serialize(&view.session).map_err(bincode_err)?,
    ];
    let header_len = FIXED + COVER_LEN * view.covers.len() + SECTION_LEN * SECTIONS + 4;
    let mut out = Vec::with_capacity(header_len + bodies.iter().map(Vec::len).sum::<usize>());
    out.extend_from_slice(&SIDECAR_MAGIC);
    out.extend_from_slice(&SIDECAR_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(header_len as u32).to_le_bytes());
    out.extend_from_slice(&(view.covers.len() as u32).to_le_bytes());
    for c in &view.covers {
        out.extend_from_slice(&c.ordinal.to_le_bytes());
        out.extend_from_slice(&c.last_frame_offset.to_le_bytes());
        out.extend_from_slice(&c.data_end.to_le_bytes());
        out.extend_from_slice(&c.last_seq.to_le_bytes());
        out.extend_from_slice(&c.chain);
        out.extend_from_slice(&[0u8; 8]);
    }
    let mut offset = header_len as u64;
    for body in &bodies {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        offset += body.len() as u64;
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    for body in &bodies {
        out.extend_from_slice(body);
    }
    Ok(out)
}

/// Decodes and checks the header: magic, version, lengths, CRC, sections inside the file.
pub fn decode_sidecar_header(bytes: &[u8]) -> Result<SidecarHeader, FormatError> {
    if bytes.len() < FIXED {
        return Err(FormatError::new(
            bytes.len(),
            "sidecar shorter than its header",
        ));
    }
    if bytes[..8] != SIDECAR_MAGIC {
        return Err(FormatError::new(0, "bad sidecar magic"));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if !(1..=SIDECAR_VERSION).contains(&version) {
        return Err(FormatError::new(
            8,
            format!("unsupported sidecar version {version}"),
        ));
    }
    if bytes[10..12] != [0, 0] {
        return Err(FormatError::new(10, "reserved sidecar bytes are not zero"));
    }
    let header_len = u32_at(bytes, 12) as usize;
    let covers = u32_at(bytes, 16) as usize;
    let n_sections = sections_of(version);
    let expected = covers
        .checked_mul(COVER_LEN)
        .and_then(|n| n.checked_add(FIXED + SECTION_LEN * n_sections + 4));
    if expected != Some(header_len) || header_len > bytes.len() {
        return Err(FormatError::new(
            12,
            "sidecar header length does not add up",
        ));
    }
    let stored = u32_at(bytes, header_len - 4);
    if crc32fast::hash(&bytes[..header_len - 4]) != stored {
        return Err(FormatError::new(
            header_len - 4,
            "sidecar header CRC mismatch",
        ));
    }
    let mut out = Vec::with_capacity(covers);
    for i in 0..covers {
        let at = FIXED + i * COVER_LEN;
        let mut chain = [0u8; 32];
        chain.copy_from_slice(&bytes[at + 32..at + 64]);
        if bytes[at + 64..at + COVER_LEN].iter().any(|&b| b != 0) {
            return Err(FormatError::new(
                at + 64,
                "reserved cover bytes are not zero",
            ));
        }
        out.push(Cover {
            ordinal: u64_at(bytes, at),
            last_frame_offset: u64_at(bytes, at + 8),
            data_end: u64_at(bytes, at + 16),
            last_seq: u64_at(bytes, at + 24),
            chain,
        });
    }
    let mut sections = Vec::with_capacity(n_sections);
    for i in 0..n_sections {
        let at = FIXED + covers * COVER_LEN + i * SECTION_LEN;
        let s = Section {
            offset: u64_at(bytes, at),
            len: u64_at(bytes, at + 8),
            crc: u32_at(bytes, at + 16),
        };
        let end = s.offset.checked_add(s.len);
        if s.offset < header_len as u64 || end.is_none_or(|e| e > bytes.len() as u64) {
            return Err(FormatError::new(
                at,
                "sidecar section lies outside the file",
            ));
        }
        sections.push(s);
    }
    Ok(SidecarHeader {
        version,
        covers: out,
        sections,
    })
}

/// The bytes of section `i`, unchecked: the caller checks them against the header's CRC before
/// trusting them (the ids section is checked on first use, so opening stays independent of the
/// log's size).
pub fn section_unchecked<'a>(bytes: &'a [u8], header: &SidecarHeader, i: usize) -> &'a [u8] {
    let s = header.sections[i];
    &bytes[s.offset as usize..(s.offset + s.len) as usize]
}

/// The bytes of section `i`, checked against its CRC.
pub fn section<'a>(
    bytes: &'a [u8],
    header: &SidecarHeader,
    i: usize,
) -> Result<&'a [u8], FormatError> {
    let s = header.sections[i];
    let body = &bytes[s.offset as usize..(s.offset + s.len) as usize];
    if crc32fast::hash(body) != s.crc {
        return Err(FormatError::new(
            s.offset as usize,
            format!("sidecar section {i} CRC mismatch"),
        ));
    }
    Ok(body)
}

/// Decodes the parts of a view a live store keeps in memory: covers, runs, invocations and the
/// session id. The ids stay in the sidecar, searched with [`find_ids`].
pub fn decode_sidecar_state(
    bytes: &[u8],
    header: &SidecarHeader,
) -> Result<SessionIndex, FormatError> {
    let runs: Vec<(String, RunEntry)> =
        bincode::deserialize(section(bytes, header, 0)?).map_err(bincode_err)?;
    let invocations: Vec<(String, InvocationEntry)> = if header.version == 1 {
        super::sidecar_old::invocations(section(bytes, header, 1)?, section(bytes, header, 2)?)?
    } else {
        bincode::deserialize(section(bytes, header, 1)?).map_err(bincode_err)?
    };
    let session_id = std::str::from_utf8(section(bytes, header, 3)?)
        .map_err(|_| FormatError::new(0, "sidecar session id is not UTF-8"))?
        .to_owned();
    let session = match header.sections.get(4) {
        Some(_) if header.version == 3 => {
            super::sidecar_old::session_state_v3(section(bytes, header, 4)?)?
        }
        Some(_) => bincode::deserialize(section(bytes, header, 4)?).map_err(bincode_err)?,
        None => SessionState::default(),
    };
    let view = SessionIndex {
        session_id,
        covers: header.covers.clone(),
        runs: runs.into_iter().collect::<BTreeMap<_, _>>(),
        invocations: invocations.into_iter().collect::<BTreeMap<_, _>>(),
        ids: Default::default(),
        session,
    };
    super::positions::check_positions(&view)?;
    Ok(view)
}

/// Every id entry of an ids section.
pub fn id_entries(body: &[u8]) -> Result<Vec<IdEntry>, FormatError> {
    let n = ids_count(body)?;
    (0..n).map(|i| id_entry(body, i)).collect()
}

fn ids_count(body: &[u8]) -> Result<usize, FormatError> {
    if body.len() < 8 {
        return Err(FormatError::new(0, "sidecar ids section too short"));
    }
    let n = u64_at(body, 0) as usize;
    if n.checked_mul(ID_ENTRY_LEN).and_then(|b| b.checked_add(8)) != Some(body.len()) {
        return Err(FormatError::new(
            0,
            "sidecar ids section length does not add up",
        ));
    }
    Ok(n)
}

fn id_entry(body: &[u8], i: usize) -> Result<IdEntry, FormatError> {
    let at = 8 + i * ID_ENTRY_LEN;
    bincode::deserialize(&body[at..at + ID_ENTRY_LEN]).map_err(bincode_err)
}

/// The id entries with this hash, found by binary search in the ids section's bytes.
pub fn find_ids(body: &[u8], hash: u64) -> Result<Vec<IdEntry>, FormatError> {
    let n = ids_count(body)?;
    let key = |i: usize| u64_at(body, 8 + i * ID_ENTRY_LEN);
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if key(mid) < hash {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let mut out = Vec::new();
    while lo < n && key(lo) == hash {
        if out.len() == MAX_SAME_HASH {
            return Err(FormatError::new(
                8 + lo * ID_ENTRY_LEN,
                format!("more than {MAX_SAME_HASH} sidecar id entries share a hash"),
            ));
        }
        out.push(id_entry(body, lo)?);
        lo += 1;
    }
    Ok(out)
}

/// The most id entries one hash may have: each stored id has one entry, and ids of one session
/// colliding on 64 bits are not expected, while a table crafted to pile entries on one hash
/// would make every lookup of it read each entry's event back.
pub const MAX_SAME_HASH: usize = 16;

/// Whether the ids section `body` keeps its bounds: no more than [`MAX_SAME_HASH`] entries
/// share a hash (it is sorted by hash, so they are consecutive), and every entry names a record
/// from 1 to `last_seq`, the last the covers vouch for (a lookup waits for the record it names
/// to be durable, and one past the log never would be).
pub fn ids_within_bounds(body: &[u8], last_seq: u64) -> bool {
    let Ok(n) = ids_count(body) else {
        return false;
    };
    let key = |i: usize| u64_at(body, 8 + i * ID_ENTRY_LEN);
    let record_seq = |i: usize| u64_at(body, 8 + i * ID_ENTRY_LEN + 8);
    (MAX_SAME_HASH..n).all(|i| key(i) != key(i - MAX_SAME_HASH))
        && (0..n).all(|i| (1..=last_seq).contains(&record_seq(i)))
}
