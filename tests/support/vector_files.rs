//! The golden vectors' files, read for the tests that check them both ways and that cut and
//! flip them: which vectors there are, their segments, what they should decode to.

use super::vectors;
use makalog::format::{FrameCursor, Tail};
use makalog::recovery::Problem;
use makalog::segment::layout::SegmentFile;
use makalog::segment::{check_session, scan_segment, ScanResult, ScannedSegment};
use makalog::storage::RealStorage;
use std::path::Path;
use std::sync::Arc;

/// The directories of every version's vectors that hold sessions (those with an `input.json`),
/// with their version and name.
pub fn session_vectors() -> Vec<(u16, String, std::path::PathBuf)> {
    let mut all = Vec::new();
    for version in vectors::VERSIONS {
        for name in vector_names(version) {
            all.push((
                version,
                name.clone(),
                vectors::vectors_dir(version).join(&name),
            ));
        }
    }
    all
}

/// Names of the vectors of `version` that hold sessions (those with an `input.json`).
pub fn vector_names(version: u16) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(vectors::vectors_dir(version))
        .expect("vectors")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("input.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "vectors: {names:?}");
    names
}

/// The segment files of a vector's session, in order, with their bytes.
pub fn segments(vector: &Path, session: &str) -> Vec<(SegmentFile, Vec<u8>)> {
    let rel_dir = Path::new("sessions").join(session);
    let mut names: Vec<String> = std::fs::read_dir(vector.join(&rel_dir))
        .expect("session dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(vector.join(&rel_dir).join(&name)).expect("read");
            let first_seq =
                makalog::segment::layout::parse_segment_name(&name).expect("segment name");
            (
                SegmentFile {
                    path: rel_dir.join(&name),
                    name,
                    first_seq,
                },
                bytes,
            )
        })
        .collect()
}

/// (seq, kind code, payload) of every record the expected dump lists.
pub fn expected_records(vector: &Path) -> Vec<(u64, String, serde_json::Value)> {
    std::fs::read_to_string(vector.join("expected.jsonl"))
        .expect("expected.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            (
                v["seq"].as_u64().expect("seq"),
                v["kind"].as_str().expect("kind").to_owned(),
                v["payload"].clone(),
            )
        })
        .collect()
}

/// Records decoded from segment bytes by the pure cursor, in order, stopping at the first
/// segment that does not end cleanly or sealed.
pub fn decode_all(segs: &[(SegmentFile, Vec<u8>)]) -> Vec<(u64, String, serde_json::Value)> {
    let mut out = Vec::new();
    for (_, bytes) in segs {
        let ScanResult::Scanned(scan) = scan_segment(bytes) else {
            break;
        };
        let mut cursor = FrameCursor::for_segment(&scan.header);
        while let Some((_, f)) = cursor.next_frame(bytes) {
            let payload = serde_json::from_slice(f.payload).unwrap_or(serde_json::Value::Null);
            out.push((f.seq, f.kind.name().to_owned(), payload));
        }
        if !matches!(cursor.end(), Some(Tail::Sealed { .. })) {
            break;
        }
    }
    out
}

pub fn check(session: &str, segs: &[(SegmentFile, Vec<u8>)]) -> Vec<Problem> {
    let scanned: Vec<ScannedSegment> = segs
        .iter()
        .map(|(file, bytes)| ScannedSegment {
            file: file.clone(),
            result: scan_segment(bytes),
        })
        .collect();
    check_session(session, &scanned, None).problems
}

/// True when `written` (by a writer that closed cleanly, cutting its zeros ahead) equals the
/// vector's file: byte for byte, except that the vector may keep zeros after the end of data.
/// How many zeros a writer keeps ahead is its preallocation policy, not the format: a reader
/// takes any number of zeros after the data as its end.
pub fn same_data(vector: &[u8], written: &[u8]) -> bool {
    vector.len() >= written.len()
        && vector[..written.len()] == *written
        && vector[written.len()..].iter().all(|&b| b == 0)
}

/// Copies a vector's session into a fresh root, with `file` replaced by `bytes`.
pub fn root_with(
    vector: &Path,
    session: &str,
    file: &Path,
    bytes: &[u8],
) -> (tempfile::TempDir, Arc<RealStorage>) {
    let (t, storage) = super::temp_root();
    let root = t.path().join("root");
    let dir = root.join("sessions").join(session);
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (seg, seg_bytes) in segments(vector, session) {
        let data = if seg.path == file {
            bytes
        } else {
            &seg_bytes[..]
        };
        std::fs::write(root.join(&seg.path), data).expect("write");
    }
    (t, storage)
}

/// The runtime-event vectors as (format version, name, sidecar version): in format 1, `events`
/// keeps the version 1 sidecar its writer left, `events-sidecar-v2` the version 2 one, over
/// the same segments; format 2's `events` has a version 3 sidecar, format 3's a version 4 one.
pub const EVENT_VECTORS: [(u16, &str, u16); 4] = [
    (1, "events", 1),
    (1, "events-sidecar-v2", 2),
    (2, "events", 3),
    (3, "events", 4),
];
