//! What a check of a log's files can find wrong.

use std::path::PathBuf;

/// One thing wrong with a log's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Non-zero bytes with no valid frame after the last valid frame of the last file.
    TornTail {
        file: PathBuf,
        offset: u64,
        len: u64,
        what: String,
    },
    /// The last file's header does not decode and the file holds no frame.
    TornCreate { file: PathBuf, what: String },
    /// Damage no interrupted write explains, inside one file.
    Damage {
        file: PathBuf,
        offset: u64,
        what: String,
    },
    /// Two files disagree: a gap or repeat in ordinals or sequence numbers, or a broken chain.
    Mismatch {
        first: PathBuf,
        second: PathBuf,
        what: String,
    },
}

impl Problem {
    /// Whether this is no damage: a torn tail or torn create at the end of a log a live owner
    /// may be writing (a write or create in flight), or a torn create that is a session's
    /// `only_segment` (a creation a crash cut before its first record: it holds nothing).
    pub fn is_harmless(&self, live: bool, only_segment: bool) -> bool {
        match self {
            Problem::TornTail { .. } => live,
            Problem::TornCreate { .. } => live || only_segment,
            Problem::Damage { .. } | Problem::Mismatch { .. } => false,
        }
    }

    /// The problem as the error a reader stops with.
    pub fn into_error(self) -> crate::error::Error {
        use crate::error::Error;
        match self {
            Problem::TornTail {
                file, offset, what, ..
            } => Error::Corrupt { file, offset, what },
            Problem::TornCreate { file, what } => Error::Corrupt {
                file,
                offset: 0,
                what,
            },
            Problem::Damage { file, offset, what } => Error::Corrupt { file, offset, what },
            Problem::Mismatch {
                first,
                second,
                what,
            } => Error::Inconsistent {
                first,
                second,
                what,
            },
        }
    }

    /// One line for a person: the file (relative to the root), the byte offset and what is wrong.
    pub fn describe(&self) -> String {
        match self {
            Problem::TornTail {
                file,
                offset,
                len,
                what,
            } => format!(
                "{} at byte {offset}: torn tail of {len} bytes ({what})",
                file.display()
            ),
            Problem::TornCreate { file, what } => format!(
                "{} at byte 0: torn create, header does not decode ({what})",
                file.display()
            ),
            Problem::Damage { file, offset, what } => {
                format!("{} at byte {offset}: {what}", file.display())
            }
            Problem::Mismatch {
                first,
                second,
                what,
            } => format!("{} / {}: {what}", first.display(), second.display()),
        }
    }
}
