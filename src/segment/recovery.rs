//! Recovery at open: the decision table of DESIGN.md, once, as one `match`, and the repairs it
//! allows. A refusal is decided before anything is written, so it leaves every file as it was.

use super::check::{Problem, SessionCheck};
use super::layout::torn_file_name;
use crate::error::{Error, Result};
use crate::storage::{OpenMode, Storage};
use std::path::{Path, PathBuf};

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
            what: format!("{what}; refusing to open the session for writing"),
        }),
        Problem::Mismatch {
            first,
            second,
            what,
        } => Err(Error::Inconsistent {
            first: first.clone(),
            second: second.clone(),
            what: format!("{what}; refusing to open the session for writing"),
        }),
    }
}

/// Decides every problem; the first refusal wins and nothing is repaired.
pub fn plan(check: &SessionCheck) -> Result<Vec<Repair>> {
    check.problems.iter().map(decide).collect()
}

/// Carries out repairs: each torn byte range is first copied to a fsynced quarantine file.
pub fn apply(storage: &dyn Storage, dir: &Path, repairs: Vec<Repair>) -> Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    for repair in repairs {
        match &repair {
            Repair::TruncateTornTail { file, offset, len } => {
                let f = storage
                    .open(file, OpenMode::ReadWrite)
                    .map_err(|e| Error::io(file, "open", e))?;
                let mut torn = vec![0u8; *len as usize];
                read_exact(&*f, file, &mut torn, *offset)?;
                report
                    .quarantined
                    .push(quarantine(storage, dir, file, *offset, &torn)?);
                f.set_len(*offset)
                    .map_err(|e| Error::io(file, "truncate", e))?;
                f.sync_data().map_err(|e| Error::io(file, "fdatasync", e))?;
            }
            Repair::RemoveTornCreate { file } => {
                let bytes = storage
                    .read_file(file)
                    .map_err(|e| Error::io(file, "read", e))?;
                report
                    .quarantined
                    .push(quarantine(storage, dir, file, 0, &bytes)?);
                storage
                    .remove_file(file)
                    .map_err(|e| Error::io(file, "remove", e))?;
                storage
                    .sync_dir(dir)
                    .map_err(|e| Error::io(dir, "fsync directory", e))?;
            }
        }
        report.repairs.push(repair);
    }
    Ok(report)
}

fn read_exact(
    f: &dyn crate::storage::StorageFile,
    file: &Path,
    buf: &mut [u8],
    offset: u64,
) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = f
            .read_at(&mut buf[done..], offset + done as u64)
            .map_err(|e| Error::io(file, "read", e))?;
        if n == 0 {
            return Err(Error::corrupt(
                file,
                offset + done as u64,
                "file shorter than its scan",
            ));
        }
        done += n;
    }
    Ok(())
}

/// Writes `bytes` to `<segment>.torn-<offset>` beside the segment and makes it durable. A file
/// left by an interrupted earlier recovery is overwritten: it held a prefix of the same bytes.
fn quarantine(
    storage: &dyn Storage,
    dir: &Path,
    segment: &Path,
    offset: u64,
    bytes: &[u8],
) -> Result<PathBuf> {
    let name = segment
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = dir.join(torn_file_name(&name, offset));
    let f = match storage.open(&path, OpenMode::CreateNew) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let f = storage
                .open(&path, OpenMode::ReadWrite)
                .map_err(|e| Error::io(&path, "open", e))?;
            f.set_len(0).map_err(|e| Error::io(&path, "truncate", e))?;
            f
        }
        Err(e) => return Err(Error::io(&path, "create", e)),
    };
    f.write_all_at(bytes, 0)
        .map_err(|e| Error::io(&path, "write", e))?;
    f.sync_data()
        .map_err(|e| Error::io(&path, "fdatasync", e))?;
    storage
        .sync_dir(dir)
        .map_err(|e| Error::io(dir, "fsync directory", e))?;
    Ok(path)
}
