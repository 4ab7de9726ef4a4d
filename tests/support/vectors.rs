//! Golden vectors: the input each one is written from, and how it is written and dumped.
//! Shared by `tests/vectors.rs` (which checks both ways) and `examples/write_vectors.rs`
//! (which writes a new version's vectors once, and refuses to overwrite existing ones).

use makalog::format::{hex, RecordKind, FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use makalog::root::{Owner, RootMarker, MARKER_FILE, ROOT_KIND};
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::RealStorage;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// Every format version with vectors: each this build reads (and continues) as it was written.
pub const VERSIONS: std::ops::RangeInclusive<u16> = OLDEST_FORMAT_VERSION..=FORMAT_VERSION;

/// The vectors of format version `version` live in `format/vectors/v<version>/`; their roots'
/// markers name that version, so a writer continues them in it.
pub fn vectors_dir(version: u16) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("format/vectors")
        .join(format!("v{version}"))
}

/// `input.json` of one vector.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VectorInput {
    pub session_id: String,
    pub segment_size: u64,
    pub prealloc_step: u64,
    pub max_payload: u32,
    pub records: Vec<VectorRecord>,
    /// Left as a crash leaves it: the writer is never closed, so the zeros ahead stay.
    #[serde(default)]
    pub crash: bool,
}

/// One record of a vector's input: its kind's name and its payload as JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorRecord {
    pub kind: String,
    pub payload: serde_json::Value,
}

pub fn read_input(vector: &Path) -> VectorInput {
    let bytes = std::fs::read(vector.join("input.json")).expect("input.json");
    serde_json::from_slice(&bytes).expect("input.json parses")
}

/// Writes a vector's marker, whose rootId is the SHA-256 of the vector's name.
fn write_marker(dir: &Path, name: &str, version: u16) {
    let marker = RootMarker {
        schema_version: 1,
        kind: ROOT_KIND.into(),
        root_id: hex(&Sha256::digest(name.as_bytes())),
        format_version: version,
    };
    let mut bytes = serde_json::to_vec(&marker).expect("marker");
    bytes.push(b'\n');
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join(MARKER_FILE), bytes).expect("marker");
}

/// Writes the vector's root (marker and segments) in format `version` under `dir` from its input.
pub fn write_vector(dir: &Path, name: &str, version: u16, input: &VectorInput) {
    write_marker(dir, name, version);
    let storage = Arc::new(RealStorage::new(dir));
    let config = WriterConfig {
        segment_size: input.segment_size,
        prealloc_step: input.prealloc_step,
        max_payload: input.max_payload,
        ..WriterConfig::default()
    };
    let owner = Owner::try_acquire(storage)
        .expect("acquire")
        .expect("lease free");
    let (w, _) = SegmentWriter::open(&owner, &input.session_id, config).expect("writer");
    for r in &input.records {
        let kind = RecordKind::from_name(&r.kind).expect("known kind");
        let payload = serde_json::to_vec(&r.payload).expect("payload");
        w.append(kind, &payload, Durability::Durable)
            .expect("append");
    }
    if input.crash {
        // Every record is durable; what a crash leaves differs from a close only by the zeros.
        std::mem::forget(w);
    } else {
        w.close().expect("close");
    }
}

/// The dump of a vector's session: one JSON object per line, as `makalog dump` prints it.
pub fn dump(dir: &Path, session_id: &str) -> String {
    let storage = RealStorage::new(dir);
    let mut out = String::new();
    for r in SessionReader::open(&storage, session_id, 1).expect("reader") {
        out.push_str(&r.expect("record").to_json(session_id).to_string());
        out.push('\n');
    }
    out
}

/// `claims-input.json` of a claims-log vector: the operations, in order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsInput {
    pub ops: Vec<ClaimOp>,
}

/// One operation on the claims log; its outcome (created, stored, conflict) is part of the vector.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClaimOp {
    Graph {
        request: makalog::claims::AgentGraphIntentClaimRequest,
        #[serde(rename = "claimedAt")]
        claimed_at: u64,
        expect: String,
    },
    Status {
        #[serde(rename = "graphId")]
        graph_id: String,
        #[serde(rename = "intentId")]
        intent_id: String,
        status: makalog::claims::AdmissionStatus,
        reason: Option<String>,
    },
    Spawn {
        claim: makalog::claims::SubagentSpawnClaim,
        expect: String,
    },
    Session {
        #[serde(rename = "sessionId")]
        session_id: String,
        #[serde(rename = "createdAt")]
        created_at: u64,
        expect: String,
    },
}

pub fn read_claims_input(vector: &Path) -> ClaimsInput {
    let bytes = std::fs::read(vector.join("claims-input.json")).expect("claims-input.json");
    serde_json::from_slice(&bytes).expect("claims-input.json parses")
}

fn outcome<T>(r: makalog::Result<T>, created: impl Fn(&T) -> bool) -> String {
    match r {
        Ok(v) if created(&v) => "created".into(),
        Ok(_) => "stored".into(),
        Err(makalog::Error::ClaimConflict { .. }) => "conflict".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// Writes a claims-log vector's root in format `version` under `dir`, checking each operation's expected outcome.
pub fn write_claims_vector(dir: &Path, name: &str, version: u16, input: &ClaimsInput) {
    write_marker(dir, name, version);
    let storage = Arc::new(RealStorage::new(dir));
    let owner = Owner::try_acquire(storage)
        .expect("acquire")
        .expect("lease free");
    let (log, _) = makalog::claims::ClaimsLog::open(&owner).expect("claims");
    for (i, op) in input.ops.iter().enumerate() {
        match op {
            ClaimOp::Graph {
                request,
                claimed_at,
                expect,
            } => {
                let got = outcome(
                    log.claim_agent_graph_intent_at(request.clone(), *claimed_at),
                    |o| o.created,
                );
                assert_eq!(&got, expect, "op {i}");
            }
            ClaimOp::Status {
                graph_id,
                intent_id,
                status,
                reason,
            } => {
                log.set_agent_graph_intent_status(graph_id, intent_id, *status, reason.as_deref())
                    .unwrap_or_else(|e| panic!("op {i}: {e}"));
            }
            ClaimOp::Spawn { claim, expect } => {
                let got = outcome(log.claim_subagent_spawn(claim.clone()), |o| o.created);
                assert_eq!(&got, expect, "op {i}");
            }
            ClaimOp::Session {
                session_id,
                created_at,
                expect,
            } => {
                let got = outcome(log.claim_session_create_at(session_id, *created_at), |_| {
                    true
                });
                assert_eq!(&got, expect, "op {i}");
            }
        }
    }
}

/// The claims of a vector as `makalog claims --json` prints them.
pub fn claims_dump(dir: &Path) -> String {
    let storage = RealStorage::new(dir);
    let id = makalog::root::read_marker(&storage)
        .expect("marker")
        .root_id_bytes()
        .expect("id");
    let bytes = std::fs::read(dir.join(makalog::claims::CLAIMS_FILE)).expect("claims.log");
    let replay = makalog::claims::replay_claims(&bytes, &id);
    assert!(replay.problems.is_empty(), "{:?}", replay.problems);
    let mut out = String::new();
    for line in replay.tables.to_json_lines(None) {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// `events-input.json` of a runtime-event vector: events appended through the store, then
/// events appended raw (bypassing sealing, as an older writer could have left them).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsInput {
    pub session_id: String,
    /// Session records (a header, messages) appended through the store before the events.
    #[serde(default)]
    pub records: Vec<VectorRecord>,
    pub events: Vec<serde_json::Value>,
    pub raw: Vec<serde_json::Value>,
}

pub fn read_events_input(vector: &Path) -> EventsInput {
    let bytes = std::fs::read(vector.join("events-input.json")).expect("events-input.json");
    serde_json::from_slice(&bytes).expect("events-input.json parses")
}

/// Writes a runtime-event vector: the events through the store (which writes the sidecar on
/// close), the raw ones straight to the ledger, then the store once more to catch the sidecar up.
pub fn write_events_vector(dir: &Path, name: &str, version: u16, input: &EventsInput) {
    use makalog::event::RuntimeEvent;
    use makalog::store::RuntimeEventStore;
    write_marker(dir, name, version);
    let storage = Arc::new(RealStorage::new(dir));
    let owner = Owner::try_acquire(storage)
        .expect("acquire")
        .expect("lease free");
    let config = WriterConfig {
        prealloc_step: 0,
        ..WriterConfig::default()
    };
    let store = RuntimeEventStore::open(&owner, config.clone());
    for r in &input.records {
        let kind = RecordKind::from_name(&r.kind).expect("known kind");
        let payload = serde_json::to_vec(&r.payload).expect("payload");
        store
            .append_record(&input.session_id, kind, &payload)
            .expect("session record");
    }
    for v in &input.events {
        let e = RuntimeEvent::from_value(v.clone()).expect("vector event");
        store.append(&e, Durability::Durable).expect("append");
    }
    store.close().expect("close");
    let (w, _) = SegmentWriter::open(&owner, &input.session_id, config.clone()).expect("writer");
    for v in &input.raw {
        let e = RuntimeEvent::from_value(v.clone()).expect("vector event");
        w.append(
            RecordKind::RuntimeEvent,
            e.canonical_json().as_bytes(),
            Durability::Durable,
        )
        .expect("raw append");
    }
    w.close().expect("close");
    let store = RuntimeEventStore::open(&owner, config);
    store.open_session_now(&input.session_id).expect("catch up");
    store.close().expect("close");
}

/// The invocations of a vector's session as `makalog invocations --json` prints them.
pub fn invocations_dump(dir: &Path, session_id: &str) -> String {
    let storage = RealStorage::new(dir);
    let view = makalog::index::rebuild(&storage, session_id).expect("rebuild");
    let mut out = String::new();
    for inv in makalog::index::invocations_from_log(&storage, &view).expect("invocations") {
        out.push_str(&inv.to_canonical_json());
        out.push('\n');
    }
    out
}
