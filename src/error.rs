//! The one error type of the library: variants a caller can act on, never strings to parse.

use std::path::PathBuf;

/// Every failure makalog reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes on disk are not what the format allows. `file` is relative to the root when known.
    #[error("{file}: corrupt at byte {offset}: {what}", file = file.display())]
    Corrupt {
        file: PathBuf,
        offset: u64,
        what: String,
    },
    /// Two files disagree (a gap or repeat in ordinals or sequence numbers, or a broken chain).
    #[error("{first} / {second}: {what}", first = first.display(), second = second.display())]
    Inconsistent {
        first: PathBuf,
        second: PathBuf,
        what: String,
    },
    /// An operating-system I/O call failed.
    #[error("{file}: {op} failed: {source}", file = file.display())]
    Io {
        file: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// An earlier write or sync of this writer failed; nothing more is acknowledged until the
    /// session is reopened and recovered from disk.
    #[error("{file}: writer poisoned by an earlier failed write or sync; reopen to recover", file = file.display())]
    Poisoned { file: PathBuf },
    /// A claim contradicts one already stored; nothing was written.
    #[error("claim conflict: {what}")]
    ClaimConflict { what: String },
    /// A call for a claim joined one in flight for the same claim and prompt, which failed:
    /// its failure is this call's, and nothing more was run. A later call may run the claim.
    #[error("claim {claim_id}: the call this one joined failed: {what}")]
    JoinedCallFailed { claim_id: String, what: String },
    /// A call's abort signal fired before it did what it would have (started a run, waited for
    /// one): nothing more was written, and a run already going on goes on.
    #[error("aborted: {what}")]
    Aborted { what: String },
    /// An import's target already holds other data under the import's ids; nothing was
    /// imported.
    #[error("import refused: {what}")]
    ImportConflict { what: String },
    /// The run already has a terminal event: nothing more may be appended to it.
    #[error("run {run_id} of session {session_id} is sealed: it already has a terminal event")]
    RunSealed { session_id: String, run_id: String },
    /// Ids that must agree do not: an event id with other content, or an event whose
    /// invocation, run and turn contradict the stored ones.
    #[error("{what}")]
    IdentityConflict { what: String },
    /// The log already has its one writer in this process.
    #[error("{what} is already open for writing")]
    AlreadyOpen { what: String },
    /// Another process or handle owns the root for writing.
    #[error("{path}: root is busy: another process owns it for writing", path = path.display())]
    RootBusy { path: PathBuf },
    /// Input the caller supplied breaks a rule (bad id, oversized record, …). Nothing was written.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// What was asked for does not exist (a run, a session).
    #[error("not found: {what}")]
    NotFound { what: String },
    /// A record (a session header, a stored message, …) breaks a rule of MAKA-MODEL; `field` is
    /// its JSON path (`subagentParent.spawnedBy.toolCallId`), `<record>` the record itself.
    #[error("invalid {record}: {field}: {why}")]
    InvalidRecord {
        record: &'static str,
        field: String,
        why: String,
    },
    /// The path is not a makalog root (no marker, or a marker of another kind).
    #[error("{path}: not a makalog root: {why}", path = path.display())]
    NotARoot { path: PathBuf, why: String },
    /// More than one failure, each reported (a journey's and the close after it).
    #[error("{what}: {}", errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Several { what: String, errors: Vec<Error> },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the file and the operation that failed.
    pub fn io(file: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        Error::Io {
            file: file.into(),
            op,
            source,
        }
    }

    /// A corruption finding at `offset` of `file`.
    pub fn corrupt(file: impl Into<PathBuf>, offset: u64, what: impl Into<String>) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset,
            what: what.into(),
        }
    }

    /// The failures of `results`, each tried: none, the one, or all of them as
    /// [`Error::Several`] (`what` says what was being done).
    pub fn all(what: &str, results: impl IntoIterator<Item = Result<()>>) -> Result<()> {
        let mut errors: Vec<Error> = results.into_iter().filter_map(Result::err).collect();
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(Error::Several {
                what: what.to_owned(),
                errors,
            }),
        }
    }
}
