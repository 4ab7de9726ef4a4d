//! The claims log of a root: every idempotency claim, appended and `fdatasync`ed before it is
//! acknowledged, concurrent claims sharing syncs (group commit), replayed at open.

mod queue;
mod reads;

use super::replay::{replay_claims, CLAIMS_FILE};
use super::request::{
    validate_graph_request, validate_session_claim, validate_spawn_claim, AdmissionStatus,
    AdmissionStatusChange, AgentGraphIntentClaim, AgentGraphIntentClaimRequest, SessionCreateClaim,
    SubagentSpawnClaim,
};
use super::table::{ClaimRecord, ClaimTables, StoredGraphIntentClaim, StoredSpawnClaim};
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
        let existing = match storage.read_file(path) {
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

    /// Claims an agent-graph intent now (§9). The same work again returns the stored claim with
    /// `created: false`; different work for the same intent, or targets another intent holds,
    /// is a [`Error::ClaimConflict`] and writes nothing.
    pub fn claim_agent_graph_intent(
        &self,
        request: AgentGraphIntentClaimRequest,
    ) -> Result<GraphClaimOutcome> {
        self.claim_agent_graph_intent_at(request, now_ms())
    }

    /// [`ClaimsLog::claim_agent_graph_intent`] with the claim time given.
    pub fn claim_agent_graph_intent_at(
        &self,
        request: AgentGraphIntentClaimRequest,
        claimed_at: u64,
    ) -> Result<GraphClaimOutcome> {
        validate_graph_request(&request)?;
        let claim = AgentGraphIntentClaim::new(request, claimed_at);
        let (graph_id, intent_id) = (claim.graph_id.clone(), claim.intent_id.clone());
        let (st, created) = self.commit_record(ClaimRecord::Graph(claim))?;
        let stored = st
            .log
            .tables
            .graph_claim(&graph_id, &intent_id)
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(GraphClaimOutcome {
            claim: stored,
            created,
        })
    }

    /// Moves a claimed intent's admission status forward; repeating the current status is a
    /// no-op. Returns the stored claim with its status.
    pub fn set_agent_graph_intent_status(
        &self,
        graph_id: &str,
        intent_id: &str,
        status: AdmissionStatus,
        reason: Option<&str>,
    ) -> Result<StoredGraphIntentClaim> {
        let change = AdmissionStatusChange {
            graph_id: graph_id.to_owned(),
            intent_id: intent_id.to_owned(),
            status,
            reason: reason.map(str::to_owned),
        };
        let (st, _) = self.commit_record(ClaimRecord::Status(change))?;
        st.log
            .tables
            .graph_claim(graph_id, intent_id)
            .cloned()
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))
    }

    /// Claims a subagent spawn (§5): the same key and fingerprint return the stored claim
    /// (`created: false`); another fingerprint, or a child already spawned elsewhere, conflicts.
    pub fn claim_subagent_spawn(&self, claim: SubagentSpawnClaim) -> Result<SpawnClaimOutcome> {
        validate_spawn_claim(&claim)?;
        let key = claim.key();
        let (st, created) = self.commit_record(ClaimRecord::Spawn(claim))?;
        let stored: Option<&StoredSpawnClaim> = st.log.tables.spawn_claim(&key);
        let claim = stored
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(SpawnClaimOutcome { claim, created })
    }

    /// Takes a subagent's session id for good and claims its spawn, in one sync: the id claim
    /// first, so a crash keeps neither, the id alone (burned: a retry uses a fresh id), or both.
    /// An id already taken is a conflict, with nothing queued.
    pub fn claim_session_and_spawn(&self, claim: SubagentSpawnClaim) -> Result<SpawnClaimOutcome> {
        self.claim_session_and_spawn_at(claim, now_ms())
    }

    /// [`ClaimsLog::claim_session_and_spawn`] with the id claim's time given (an import keeps
    /// the original's claim time).
    pub fn claim_session_and_spawn_at(
        &self,
        claim: SubagentSpawnClaim,
        created_at: u64,
    ) -> Result<SpawnClaimOutcome> {
        validate_spawn_claim(&claim)?;
        let session = SessionCreateClaim {
            session_id: claim.child_session_id.clone(),
            created_at,
        };
        validate_session_claim(&session)?;
        let key = claim.key();
        let records = vec![ClaimRecord::Session(session), ClaimRecord::Spawn(claim)];
        let (st, appended) = self.commit_records(records)?;
        let stored: Option<&StoredSpawnClaim> = st.log.tables.spawn_claim(&key);
        let claim = stored
            .map(|s| s.claim.clone())
            .ok_or_else(|| Error::InvalidInput("claim vanished".into()))?;
        Ok(SpawnClaimOutcome {
            claim,
            created: appended.get(1).copied().unwrap_or(false),
        })
    }

    /// Takes a session id for good; an id already taken is a conflict.
    pub fn claim_session_create(&self, session_id: &str) -> Result<SessionCreateClaim> {
        self.claim_session_create_at(session_id, now_ms())
    }

    /// [`ClaimsLog::claim_session_create`] with the creation time given.
    pub fn claim_session_create_at(
        &self,
        session_id: &str,
        created_at: u64,
    ) -> Result<SessionCreateClaim> {
        let claim = SessionCreateClaim {
            session_id: session_id.to_owned(),
            created_at,
        };
        validate_session_claim(&claim)?;
        drop(self.commit_record(ClaimRecord::Session(claim.clone()))?);
        Ok(claim)
    }
}

/// Creates the claims log by the write protocol (header, sync, directory sync).
impl Drop for ClaimsLog {
    /// A dropped log closes as [`ClaimsLog::close`] does, unless it failed.
    fn drop(&mut self) {
        if self.commit.is_healthy() {
            let _ = self.commit.finish(ClaimsSink::cut);
        }
    }
}

fn create(storage: &dyn Storage, root_id: &[u8; 32], version: u16) -> Result<AppendFile> {
    let header = ClaimsHeader {
        version,
        max_payload: DEFAULT_MAX_PAYLOAD,
        root_id: *root_id,
    };
    AppendFile::create(storage, Path::new(CLAIMS_FILE), &header.encode(), PREALLOC)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
