//! Where a session's segments live and how their files are named.
//!
//! `sessions/<session-id>/<first-seq, 20 digits>.seg`, plus quarantined torn tails named
//! `<segment>.torn-<offset>` beside them.

use crate::error::{Error, Result};
use crate::format::validate_session_id;
use crate::recovery::TORN_INFIX;
use crate::storage::{EntryKind, Storage};
use std::path::{Path, PathBuf};

/// The directory that holds every session, relative to the root.
pub const SESSIONS_DIR: &str = "sessions";

const SEGMENT_SUFFIX: &str = ".seg";

/// The index sidecar's file name inside a session directory (its bytes belong to the index).
pub const SIDECAR_FILE: &str = "index";

/// The directory of one session, relative to the root. The id must be valid.
pub fn session_dir(session_id: &str) -> PathBuf {
    Path::new(SESSIONS_DIR).join(session_id)
}

/// The file name of the segment whose first frame has sequence number `first_seq`.
pub fn segment_file_name(first_seq: u64) -> String {
    format!("{first_seq:020}{SEGMENT_SUFFIX}")
}

/// The first sequence number a segment file name announces, if it is a segment name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// True when `name` is a quarantined torn tail of a segment.
pub fn is_torn_name(name: &str) -> bool {
    torn_of(name).is_some_and(|file| parse_segment_name(file).is_some())
}

/// The file a quarantine file `<file>.torn-<offset>` or `<file>.torn-<offset>.<n>` (with `n`
/// from 1) holds a torn tail of (FORMAT.md, "Quarantine files"), if `name` is one.
pub fn torn_of(name: &str) -> Option<&str> {
    let (file, rest) = name.split_once(TORN_INFIX)?;
    let (off, n) = match rest.split_once('.') {
        Some((off, n)) => (off, decimal(n).filter(|&n| n >= 1)),
        None => (rest, Some(1)),
    };
    (decimal(off).is_some() && n.is_some()).then_some(file)
}

/// A number as a writer prints one: decimal digits, no sign, no leading zero (but `0`), within
/// 64 bits.
fn decimal(s: &str) -> Option<u64> {
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits && (s == "0" || !s.starts_with('0')))
        .then(|| s.parse().ok())
        .flatten()
}

/// True when `name` is a quarantine file's temporary sibling (`<quarantine>.tmp`).
pub fn is_torn_tmp_name(name: &str) -> bool {
    name.strip_suffix(".tmp").is_some_and(is_torn_name)
}

/// One segment file found in a session directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    /// Path relative to the root.
    pub path: PathBuf,
    /// File name.
    pub name: String,
    /// The first sequence number its name announces.
    pub first_seq: u64,
}

/// What a session directory holds: its segments in name order, quarantine files, and strays.
#[derive(Debug, Clone, Default)]
pub struct SessionListing {
    pub segments: Vec<SegmentFile>,
    pub torn: Vec<PathBuf>,
    /// The index sidecar, if present.
    pub sidecar: Option<PathBuf>,
    /// Entries that are neither segments, quarantine files nor the sidecar (reported, never
    /// touched).
    pub strays: Vec<PathBuf>,
}

/// Lists a session directory.
pub fn list_session(storage: &dyn Storage, session_id: &str) -> Result<SessionListing> {
    let dir = session_dir(session_id);
    let entries = storage
        .list_dir(&dir)
        .map_err(|e| Error::io(&dir, "list directory", e))?;
    let mut out = SessionListing::default();
    for entry in entries {
        let path = dir.join(&entry.name);
        match (entry.kind, parse_segment_name(&entry.name)) {
            (EntryKind::File, Some(first_seq)) => out.segments.push(SegmentFile {
                path,
                name: entry.name,
                first_seq,
            }),
            (EntryKind::File, None) if is_torn_name(&entry.name) => out.torn.push(path),
            (EntryKind::File, None) if entry.name == SIDECAR_FILE => out.sidecar = Some(path),
            // Left by a crash while the sidecar was rewritten, or while recovery copied a torn
            // tail aside: the next rewrite, or the recovery done again, replaces it.
            (EntryKind::File, None) if entry.name == concat!("index", ".tmp") => {}
            (EntryKind::File, None) if is_torn_tmp_name(&entry.name) => {}
            _ => out.strays.push(path),
        }
    }
    Ok(out)
}

/// Lists the session ids of a root, with entries of `sessions/` that are not valid session
/// directories returned apart.
pub fn list_sessions(storage: &dyn Storage) -> Result<(Vec<String>, Vec<PathBuf>)> {
    let dir = Path::new(SESSIONS_DIR);
    let entries = match storage.list_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(Error::io(dir, "list directory", e)),
    };
    let mut ids = Vec::new();
    let mut strays = Vec::new();
    for entry in entries {
        if entry.kind == EntryKind::Dir && validate_session_id(&entry.name).is_ok() {
            ids.push(entry.name);
        } else {
            strays.push(dir.join(entry.name));
        }
    }
    Ok((ids, strays))
}

/// The name a session's log is held and marked failed under, in the owner's lease.
pub(crate) fn session_log_name(session_id: &str) -> String {
    format!("session {session_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quarantine names as FORMAT.md writes them, `<segment>.torn-<offset>[.<n>]` with decimal
    /// numbers as a writer prints them (`n` from 1); any other spelling is a stray entry, which
    /// verify reports, not a note.
    #[test]
    fn quarantine_names_are_spelled_one_way() {
        let seg = segment_file_name(1);
        for ok in [
            "0",
            "5",
            "4096",
            "5.1",
            "5.12",
            "18446744073709551615",
            "7.4294967296",
        ] {
            assert!(is_torn_name(&format!("{seg}.torn-{ok}")), "{ok}");
        }
        for stray in [
            "",
            "+5",
            "05",
            "5.0",
            "5.01",
            "5.",
            ".1",
            "5.+1",
            "5a",
            "18446744073709551616",
        ] {
            assert!(!is_torn_name(&format!("{seg}.torn-{stray}")), "{stray:?}");
        }
        assert!(is_torn_tmp_name(&format!("{seg}.torn-5.tmp")));
        assert!(!is_torn_name("00000000000000000001.sag.torn-5"));
    }
}
