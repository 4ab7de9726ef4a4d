//! The claims log of a root: every idempotency claim, appended and `fdatasync`ed before it is
//! acknowledged, concurrent claims sharing syncs (group commit), replayed at open.

mod claiming;
mod queue;
mod reads;

use super::replay::{replay_claims, CLAIMS_FILE};
use super::request::{AgentGraphIntentClaim, SubagentSpawnClaim};
use super::table::ClaimTables;
use crate::commit::{AppendFile, GroupCommit, Pending, Prealloc, Sink};
use crate::error::{Error, Result};
use crate::format::{ChainValue, ClaimsHeader, FrameBatch, FrameLayout, DEFAULT_MAX_PAYLOAD};
use crate::recovery::{apply, plan, RecoveryReport, Repair};
use crate::root::{FailureMark, LogHold, Owner};
use crate::storage::Storage;
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

const PREALLOC: Prealloc = Prealloc {
    step: 64 << 10,
    block: 4 << 10,
    cap: u64::MAX,
};

/// What claiming an agent-graph intent returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphClaimOutcome {
    /// The stored claim: this request's, or the earlier one for the same work.
    pub claim: AgentGraphIntentClaim,
    /// True when this call took the claim; false when it was already stored.
    pub created: bool,
}

/// What claiming a subagent spawn returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnClaimOutcome {
    pub claim: SubagentSpawnClaim,
    pub created: bool,
}

/// What claiming a spawn together with its child's id came to, for a caller holding the claim
/// it asked for: the claim this call stored is that one, so only a stored one is handed back.
#[derive(Debug)]
pub(crate) enum OwnSpawn {
    /// This call took the id and the spawn.
    Created,
    /// The key was taken first: the claim stored for it.
    Existing(SubagentSpawnClaim),
}

/// The claims log, open for writing under the owner's lease.
pub struct ClaimsLog {
    commit: GroupCommit<ClaimsState, ClaimsSink>,
    max_payload: u32,
    /// How the log's frames are laid out (its header's version).
    layout: FrameLayout,
    _hold: LogHold,
}

struct ClaimsState {
    tables: ClaimTables,
    chain: ChainValue,
}

struct ClaimsSink {
    file: AppendFile,
    /// Where a failed write or sync is told, so the log's next open writes it again.
    failures: FailureMark,
}

impl ClaimsSink {
    fn failed_if(&self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            self.failures
                .failed_in(self.file.path(), self.file.synced_end());
        }
        result
    }

    fn cut(&mut self) -> Result<()> {
        let result = self.file.cut();
        self.failed_if(result)
    }
}

impl Sink for ClaimsSink {
    type Chunk = FrameBatch;

    fn write_out(&mut self, chunks: Vec<FrameBatch>, sync: bool, durable_seq: u64) -> Result<()> {
        let write = || {
            for chunk in chunks {
                self.file.append(&chunk.stamped(durable_seq))?;
            }
            if sync {
                self.file.sync()?;
            }
            Ok(())
        };
        let result = write();
        self.failed_if(result)
    }

    fn current_path(&self) -> PathBuf {
        self.file.path().to_owned()
    }
}

type Guard<'a> = MutexGuard<'a, Pending<ClaimsState, FrameBatch>>;

impl ClaimsLog {
    /// Opens the root's claims log, creating it if absent, replaying it otherwise. A torn tail
    /// is quarantined and cut; a contradicting or damaged record refuses with nothing written.
    pub fn open(owner: &Owner) -> Result<(ClaimsLog, RecoveryReport)> {
        let hold = owner.hold_log("the claims log")?;
        let path = Path::new(CLAIMS_FILE);
        let failures = hold.failures();
        if let Some(failed) = hold.take_failed() {
            crate::commit::rewrite_and_sync(
                &**owner.storage(),
                &[(failed.file.clone(), failed.offset)],
            )
            .inspect_err(|_| failures.failed_in(&failed.file, failed.offset))?;
        }
        ClaimsLog::open_held(owner, hold).inspect_err(|e| {
            if matches!(e, Error::Io { .. }) {
                failures.failed_in(path, 0);
            }
        })
    }

    fn open_held(owner: &Owner, hold: LogHold) -> Result<(ClaimsLog, RecoveryReport)> {
        let storage = owner.storage().clone();
        let root_id = owner.marker().root_id_bytes()?;
        let path = Path::new(CLAIMS_FILE);
        let existing = match crate::storage::data_end::read_data(&*storage, path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(path, "read", e)),
        };
        let mut report = RecoveryReport::default();
        let root_version = owner.marker().format_version;
        let (file, tables, head, max_payload, version) = match existing {
            None => (
                create(&*storage, &root_id, root_version)?,
                ClaimTables::default(),
                None,
                DEFAULT_MAX_PAYLOAD,
                root_version,
            ),
            Some(bytes) => {
                let replay = replay_claims(&bytes, &root_id);
                report = apply(&*storage, plan(&replay.problems)?)?;
                let removed = report
                    .repairs
                    .iter()
                    .any(|r| matches!(r, Repair::RemoveTornCreate { .. }));
                let (file, max_payload, version) = if removed {
                    let file = create(&*storage, &root_id, root_version)?;
                    (file, DEFAULT_MAX_PAYLOAD, root_version)
                } else {
                    // A process that died after a failed sync may have left claims only the
                    // page cache holds (its last write, which no later record proves was
                    // synced): written back before one is answered from them.
                    let (from, to) = (replay.proven_end, replay.data_end);
                    crate::commit::write_back_unpersisted(&*storage, path, from, to)?;
                    let mut file = AppendFile::open(&*storage, path, replay.data_end, PREALLOC)?;
                    // Claims a dead process wrote may still sit in the page cache: make them
                    // durable before one is answered from them.
                    file.sync()?;
                    storage
                        .sync_dir(Path::new(""))
                        .map_err(|e| Error::io("", "fsync directory", e))?;
                    // New claims obey the bound and the layout the log's header declares.
                    (file, replay.max_payload, replay.version)
                };
                (file, replay.tables, Some(replay.head), max_payload, version)
            }
        };
        let (head_seq, chain) = head.unwrap_or((0, crate::format::claims_genesis(&root_id)));
        let state = ClaimsState { tables, chain };
        Ok((
            ClaimsLog {
                commit: GroupCommit::new(
                    state,
                    ClaimsSink {
                        file,
                        failures: hold.failures(),
                    },
                    head_seq,
                ),
                max_payload,
                layout: crate::format::layout_of(version),
                _hold: hold,
            },
            report,
        ))
    }

    /// Syncs what is queued, cuts the zeros after the last claim and makes that durable.
    pub fn close(self) -> Result<()> {
        self.commit.finish(ClaimsSink::cut)
    }
}

impl Drop for ClaimsLog {
    /// A dropped log closes as [`ClaimsLog::close`] does, unless it failed.
    fn drop(&mut self) {
        if self.commit.is_healthy() {
            let _ = self.commit.finish(ClaimsSink::cut);
        }
    }
}

/// Creates the claims log by the write protocol (header, sync, directory sync).
fn create(storage: &dyn Storage, root_id: &[u8; 32], version: u16) -> Result<AppendFile> {
    let header = ClaimsHeader {
        version,
        max_payload: DEFAULT_MAX_PAYLOAD,
        root_id: *root_id,
    };
    AppendFile::create(storage, Path::new(CLAIMS_FILE), &header.encode(), PREALLOC)
}
