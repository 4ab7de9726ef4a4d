//! Golden vectors: the input each one is written from, and how it is written and dumped.
//! Shared by `tests/vectors.rs` (which checks both ways) and `examples/write_vectors.rs`
//! (which writes a new version's vectors once, and refuses to overwrite existing ones).

use makalog::format::{hex, RecordKind, FORMAT_VERSION};
use makalog::root::{Owner, RootMarker, MARKER_FILE, ROOT_KIND};
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::RealStorage;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// The vectors of the current format version live in `format/vectors/v<version>/`.
pub fn vectors_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("format/vectors")
        .join(format!("v{FORMAT_VERSION}"))
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

/// Writes the vector's root (marker and segments) under `dir` from its input.
pub fn write_vector(dir: &Path, name: &str, input: &VectorInput) {
    let marker = RootMarker {
        schema_version: 1,
        kind: ROOT_KIND.into(),
        root_id: hex(&Sha256::digest(name.as_bytes())),
        format_version: FORMAT_VERSION,
    };
    let mut bytes = serde_json::to_vec(&marker).expect("marker");
    bytes.push(b'\n');
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join(MARKER_FILE), bytes).expect("marker");
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
    w.close().expect("close");
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
