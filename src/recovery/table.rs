//! The recovery decision table of DESIGN.md, once, as one `match`. Segments and the claims log
//! follow the same rules. A refusal is decided before anything is written, so it leaves every
//! file as it was.

use super::Problem;
use crate::error::{Error, Result};
use std::path::PathBuf;

/// A repair recovery may make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Quarantine the bytes `[offset, offset + len)` of the last segment, then cut it at `offset`.
    TruncateTornTail {
        file: PathBuf,
        offset: u64,
        len: u64,
    },
    /// Quarantine and remove a last segment whose header never became valid and holds no frame.
    RemoveTornCreate { file: PathBuf },
}

/// What recovery did to a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The repairs made, in order.
    pub repairs: Vec<Repair>,
    /// The quarantine files written (`<segment>.torn-<offset>`).
    pub quarantined: Vec<PathBuf>,
}

impl RecoveryReport {
    /// Bytes cut from torn tails.
    pub fn bytes_dropped(&self) -> u64 {
        self.repairs
            .iter()
            .map(|r| match r {
                Repair::TruncateTornTail { len, .. } => *len,
                Repair::RemoveTornCreate { .. } => 0,
            })
            .sum()
    }
}

/// The decision for one problem: the rows of the recovery table that find something.
/// (A clean end, or only zeros after the last frame, is no problem and needs nothing.)
pub fn decide(problem: &Problem) -> Result<Repair> {
    match problem {
        Problem::TornTail {
            file, offset, len, ..
        } => Ok(Repair::TruncateTornTail {
            file: file.clone(),
            offset: *offset,
            len: *len,
        }),
        Problem::TornCreate { file, .. } => Ok(Repair::RemoveTornCreate { file: file.clone() }),
        Problem::Damage { file, offset, what } => Err(Error::Corrupt {
            file: file.clone(),
            offset: *offset,
            what: format!("{what}; refusing to open for writing"),
        }),
        Problem::Mismatch {
            first,
            second,
            what,
        } => Err(Error::Inconsistent {
            first: first.clone(),
            second: second.clone(),
            what: format!("{what}; refusing to open for writing"),
        }),
    }
}

/// Decides every problem; the first refusal wins and nothing is repaired.
pub fn plan(problems: &[Problem]) -> Result<Vec<Repair>> {
    problems.iter().map(decide).collect()
}
