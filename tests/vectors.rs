//! Golden vectors checked both ways, and every truncation and single-bit flip of them.

mod support;
#[path = "support/vectors.rs"]
mod vectors;

use makalog::format::{hex, FrameDecode, FrameLayout};
use makalog::format::{FrameCursor, RecordKind, Tail};
use makalog::recovery::Problem;
use makalog::segment::layout::SegmentFile;
use makalog::segment::{
    check_session, scan_segment, ScanResult, ScannedSegment, SegmentWriter, WriterConfig,
};
use makalog::storage::RealStorage;
use makalog::verify::verify_root;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// The directories of every version's vectors that hold sessions (those with an `input.json`),
/// with their version and name.
fn session_vectors() -> Vec<(u16, String, std::path::PathBuf)> {
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
fn vector_names(version: u16) -> Vec<String> {
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
fn segments(vector: &Path, session: &str) -> Vec<(SegmentFile, Vec<u8>)> {
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
fn expected_records(vector: &Path) -> Vec<(u64, String, serde_json::Value)> {
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
fn decode_all(segs: &[(SegmentFile, Vec<u8>)]) -> Vec<(u64, String, serde_json::Value)> {
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

fn check(session: &str, segs: &[(SegmentFile, Vec<u8>)]) -> Vec<Problem> {
    let scanned: Vec<ScannedSegment> = segs
        .iter()
        .map(|(file, bytes)| ScannedSegment {
            file: file.clone(),
            result: scan_segment(bytes),
        })
        .collect();
    check_session(session, &scanned, None).problems
}

#[test]
fn the_manifest_lists_every_vector_file_with_its_sha256() {
    for version in vectors::VERSIONS {
        manifest_lists_every_file(version);
    }
}

fn manifest_lists_every_file(version: u16) {
    let base = vectors::vectors_dir(version);
    let manifest = std::fs::read_to_string(base.join("MANIFEST.sha256")).expect("manifest");
    let mut listed = Vec::new();
    for line in manifest.lines() {
        let (sum, rel) = line.split_once("  ").expect("manifest line");
        let bytes = std::fs::read(base.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(
            hex(&Sha256::digest(&bytes)),
            sum,
            "{rel} changed: vectors are never regenerated, bump the format version"
        );
        listed.push(rel.to_owned());
    }
    let mut present = Vec::new();
    let mut stack = vec![base.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "MANIFEST.sha256") {
                present.push(p.strip_prefix(&base).expect("prefix").display().to_string());
            }
        }
    }
    listed.sort();
    present.sort();
    assert_eq!(
        listed, present,
        "every vector file is in the manifest and nothing else"
    );
}

#[test]
fn the_reader_produces_each_expected_dump_and_verify_is_clean() {
    for (_, name, dir) in session_vectors() {
        let input = vectors::read_input(&dir);
        let expected = std::fs::read_to_string(dir.join("expected.jsonl")).expect("expected");
        assert_eq!(vectors::dump(&dir, &input.session_id), expected, "{name}");
        assert_eq!(expected.lines().count(), input.records.len(), "{name}");
        let report = verify_root(&RealStorage::new(&dir)).expect("verify");
        assert!(report.is_clean(), "{name}: {:?}", report.findings);
    }
}

#[test]
fn the_writer_reproduces_each_vector_byte_for_byte() {
    for (version, name, dir) in session_vectors() {
        let input = vectors::read_input(&dir);
        let tmp = tempfile::tempdir().expect("tmp");
        vectors::write_vector(tmp.path(), &name, version, &input);
        let want = support::snapshot(&dir.join("sessions"));
        let got = support::snapshot(&tmp.path().join("sessions"));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>(),
            "{name}"
        );
        for (path, bytes) in &want {
            assert!(
                same_data(bytes, &got[path]),
                "v{version} {name}: {} differs",
                path.display()
            );
        }
    }
}

/// True when `written` (by a writer that closed cleanly, cutting its zeros ahead) equals the
/// vector's file: byte for byte, except that the vector may keep zeros after the end of data.
/// How many zeros a writer keeps ahead is its preallocation policy, not the format: a reader
/// takes any number of zeros after the data as its end.
fn same_data(vector: &[u8], written: &[u8]) -> bool {
    vector.len() >= written.len()
        && vector[..written.len()] == *written
        && vector[written.len()..].iter().all(|&b| b == 0)
}

/// Copies a vector's session into a fresh root, with `file` replaced by `bytes`.
fn root_with(
    vector: &Path,
    session: &str,
    file: &Path,
    bytes: &[u8],
) -> (tempfile::TempDir, Arc<RealStorage>) {
    let (t, storage) = support::temp_root();
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

#[test]
fn every_truncation_of_the_last_segment_recovers_a_valid_prefix() {
    for (_, name, dir) in session_vectors() {
        let input = vectors::read_input(&dir);
        let expected = expected_records(&dir);
        let segs = segments(&dir, &input.session_id);
        let (last, bytes) = segs.last().expect("segments").clone();
        let sealed = decode_all(&segs[..segs.len() - 1]).len();
        for len in 0..bytes.len() {
            let (_t, storage) = root_with(&dir, &input.session_id, &last.path, &bytes[..len]);
            let (w, _) = SegmentWriter::open(
                &support::owner(&storage),
                &input.session_id,
                WriterConfig::default(),
            )
            .unwrap_or_else(|e| panic!("{name} cut at {len}: {e}"));
            drop(w);
            let got: Vec<_> = support::read_all(&*storage, &input.session_id)
                .unwrap_or_else(|e| panic!("{name} cut at {len}: {e}"))
                .into_iter()
                .map(|r| {
                    (
                        r.seq,
                        r.kind.name().to_owned(),
                        serde_json::from_slice(&r.payload).expect("json"),
                    )
                })
                .collect();
            assert!(
                got.len() <= expected.len() && got[..] == expected[..got.len()],
                "{name} cut at {len}"
            );
            assert!(
                got.len() >= sealed,
                "{name} cut at {len}: records of sealed segments lost"
            );
        }
    }
}

#[test]
fn every_truncation_of_a_sealed_segment_is_found_and_a_valid_prefix_still_reads() {
    for version in vectors::VERSIONS {
        truncations_of_sealed_segments(&vectors::vectors_dir(version).join("rolled"));
    }
}

fn truncations_of_sealed_segments(dir: &Path) {
    let input = vectors::read_input(dir);
    let expected = expected_records(dir);
    let segs = segments(dir, &input.session_id);
    assert!(segs.len() >= 3);
    for i in 0..segs.len() - 1 {
        for len in 0..segs[i].1.len() {
            let mut cut = segs.clone();
            cut[i].1.truncate(len);
            assert!(
                !check(&input.session_id, &cut).is_empty(),
                "segment {i} cut at {len} not found"
            );
            let got = decode_all(&cut);
            assert!(
                got.len() < expected.len() && got[..] == expected[..got.len()],
                "segment {i} cut at {len}"
            );
        }
    }
}

#[test]
fn every_single_bit_flip_is_detected_and_never_decodes_a_different_record() {
    let mut flips = 0u64;
    for (_, name, dir) in session_vectors() {
        let input = vectors::read_input(&dir);
        let expected = expected_records(&dir);
        let segs = segments(&dir, &input.session_id);
        assert!(
            check(&input.session_id, &segs).is_empty(),
            "{name} is clean"
        );
        for i in 0..segs.len() {
            for bit in 0..segs[i].1.len() * 8 {
                let mut flipped = segs.clone();
                flipped[i].1[bit / 8] ^= 1 << (bit % 8);
                assert!(
                    !check(&input.session_id, &flipped).is_empty(),
                    "{name}: flip of bit {bit} in segment {i} not detected"
                );
                let got = decode_all(&flipped);
                assert!(
                    got.len() <= expected.len() && got[..] == expected[..got.len()],
                    "{name}: flip of bit {bit} in segment {i} decoded a different record"
                );
                flips += 1;
            }
        }
    }
    assert!(flips > 10_000, "{flips} flips");
}

#[test]
fn a_zero_filled_tail_is_the_end_of_data_and_garbage_in_it_is_a_torn_tail() {
    for version in vectors::VERSIONS {
        zero_tail_and_garbage(&vectors::vectors_dir(version).join("single-segment"));
    }
}

fn zero_tail_and_garbage(dir: &Path) {
    let input = vectors::read_input(dir);
    let segs = segments(dir, &input.session_id);
    let (file, bytes) = segs[0].clone();
    let mut zeroed = bytes.clone();
    zeroed.extend(std::iter::repeat_n(0u8, 8192));
    let mut s = segs.clone();
    s[0].1 = zeroed.clone();
    assert!(check(&input.session_id, &s).is_empty());
    assert_eq!(decode_all(&s), expected_records(dir));

    let (_t, storage) = root_with(dir, &input.session_id, &file.path, &zeroed);
    let (w, report) = SegmentWriter::open(
        &support::owner(&storage),
        &input.session_id,
        WriterConfig::default(),
    )
    .expect("open");
    assert!(report.repairs.is_empty());
    assert_eq!(w.next_seq() as usize, expected_records(dir).len() + 1);
    drop(w);

    zeroed[bytes.len() + 5000] = 7;
    s[0].1 = zeroed;
    assert!(
        matches!(check(&input.session_id, &s).as_slice(), [Problem::TornTail { offset, len, .. }] if *offset == bytes.len() as u64 && *len == 5001)
    );
}

#[test]
fn an_all_zero_frame_header_is_never_a_frame_and_an_all_zero_segment_header_never_decodes() {
    for layout in [FrameLayout::V1, FrameLayout::V2] {
        for len in [layout.header_len(), 300] {
            assert_eq!(
                makalog::format::decode_frame::<RecordKind>(&vec![0u8; len], layout, 1024),
                Ok(FrameDecode::EndOfData)
            );
        }
    }
    assert!(makalog::format::SegmentHeader::decode(&[0u8; 256]).is_err());
    assert!(matches!(
        scan_segment(&[0u8; 4096]),
        ScanResult::BadHeader {
            body_empty: true,
            ..
        }
    ));
}

#[test]
fn the_claims_vector_replays_to_its_expected_dump_and_the_writer_reproduces_it() {
    for version in vectors::VERSIONS {
        claims_vector_both_ways(version);
    }
}

fn claims_vector_both_ways(version: u16) {
    let dir = vectors::vectors_dir(version).join("claims");
    let expected = std::fs::read_to_string(dir.join("expected.jsonl")).expect("expected");
    assert_eq!(vectors::claims_dump(&dir), expected);
    assert_eq!(
        expected.lines().count(),
        5,
        "two graph claims, one spawn, two sessions; no conflict is stored"
    );
    let tmp = tempfile::tempdir().expect("tmp");
    vectors::write_claims_vector(
        tmp.path(),
        "claims",
        version,
        &vectors::read_claims_input(&dir),
    );
    let want = std::fs::read(dir.join("claims.log")).expect("claims.log");
    let got = std::fs::read(tmp.path().join("claims.log")).expect("written");
    assert!(
        same_data(&want, &got),
        "the writer reproduces claims.log byte for byte, up to the zeros ahead"
    );
    if version == 1 {
        assert!(
            want.len() > got.len(),
            "the version 1 vector keeps the zeros a crash leaves"
        );
    }
    let report = verify_root(&RealStorage::new(&dir)).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    assert_eq!(
        report.claims.map(|c| c.record_count),
        Some(7),
        "five claims and two status changes"
    );
}

#[test]
fn every_truncation_of_the_claims_vector_replays_to_a_valid_prefix() {
    for version in vectors::VERSIONS {
        claims_truncations(&vectors::vectors_dir(version).join("claims"));
    }
}

fn claims_truncations(dir: &Path) {
    let bytes = std::fs::read(dir.join("claims.log")).expect("claims.log");
    let id = makalog::root::read_marker(&RealStorage::new(dir))
        .expect("marker")
        .root_id_bytes()
        .expect("id");
    let full = makalog::claims::replay_claims(&bytes, &id);
    let end = full.data_end as usize;
    let mut last = 0;
    for len in 0..=(end + 128).min(bytes.len()) {
        let r = makalog::claims::replay_claims(&bytes[..len], &id);
        assert!(
            r.problems
                .iter()
                .all(|p| matches!(p, Problem::TornTail { .. } | Problem::TornCreate { .. })),
            "cut at {len}: {:?}",
            r.problems
        );
        assert!(r.record_count >= last, "cut at {len}");
        last = r.record_count;
        // The prefix's records are the full log's first records: replaying them again from the
        // full log's bytes up to the prefix's end gives the same head.
        let again = makalog::claims::replay_claims(&bytes[..r.data_end.max(128) as usize], &id);
        assert_eq!(again.head, r.head, "cut at {len}");
    }
    assert_eq!(last, full.record_count);
}

/// The runtime-event vectors as (format version, name, sidecar version): in format 1, `events`
/// keeps the version 1 sidecar its writer left, `events-sidecar-v2` the version 2 one, over
/// the same segments; format 2's `events` has a version 2 sidecar.
const EVENT_VECTORS: [(u16, &str, u16); 3] = [
    (1, "events", 1),
    (1, "events-sidecar-v2", 2),
    (2, "events", 2),
];

#[test]
fn the_events_vectors_read_and_write_both_ways() {
    for (format, name, version) in EVENT_VECTORS {
        let dir = vectors::vectors_dir(format).join(name);
        let input = vectors::read_events_input(&dir);
        let storage = RealStorage::new(&dir);
        let view = makalog::index::rebuild(&storage, &input.session_id).expect("rebuild");
        let rebuilt = makalog::index::encode_sidecar(&view, &[]).expect("encode");
        let stored = std::fs::read(dir.join("sessions").join(&input.session_id).join("index"))
            .expect("index");
        let header = makalog::index::decode_sidecar_header(&stored).expect("header");
        assert_eq!(header.version, version, "{name}");
        if version == makalog::index::SIDECAR_VERSION {
            assert!(
                rebuilt == stored,
                "{name}: the sidecar equals a rebuild byte for byte"
            );
        } else {
            // The old reader: the version 1 sidecar reads into the view a rebuild makes, which
            // this build encodes exactly as it encodes the rebuild.
            let state = makalog::index::decode_sidecar_state(&stored, &header).expect("state");
            let ids = makalog::index::section(&stored, &header, 2)
                .and_then(makalog::index::id_entries)
                .expect("ids");
            assert!(
                makalog::index::encode_sidecar(&state, &ids).expect("encode") == rebuilt,
                "{name}: the version 1 sidecar reads as a rebuild"
            );
        }
        assert_eq!(
            vectors::invocations_dump(&dir, &input.session_id),
            std::fs::read_to_string(dir.join("expected-invocations.jsonl")).expect("expected"),
            "{name}"
        );
        assert_eq!(
            vectors::dump(&dir, &input.session_id),
            std::fs::read_to_string(dir.join("expected.jsonl")).expect("expected"),
            "{name}"
        );
        let listed: Vec<serde_json::Value> =
            std::fs::read_to_string(dir.join("expected-invocations.jsonl"))
                .expect("expected")
                .lines()
                .map(|l| serde_json::from_str(l).expect("json"))
                .collect();
        let outcomes: Vec<&str> = listed
            .iter()
            .map(|l| l["terminalEvent"]["status"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            outcomes,
            ["completed", "failed", "aborted"],
            "the late cancellation never replaces the first terminal"
        );
        // The writer reproduces the segments byte for byte, and the sidecar of this version.
        let tmp = tempfile::tempdir().expect("tmp");
        vectors::write_events_vector(tmp.path(), name, format, &input);
        let want = support::snapshot(&dir.join("sessions"));
        let got = support::snapshot(&tmp.path().join("sessions"));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>()
        );
        for (path, bytes) in &want {
            if path.ends_with("index") {
                assert!(
                    got[path] == rebuilt,
                    "{name}: the writer's sidecar is a rebuild's"
                );
            } else {
                assert!(got[path] == *bytes, "{name}: {} differs", path.display());
            }
        }
        assert!(verify_root(&storage).expect("verify").is_clean());
        // Both stores answer from either sidecar as from a rebuild.
        let store_dir = tempfile::tempdir().expect("tmp");
        copy_tree(&dir, store_dir.path());
        let copy = std::sync::Arc::new(RealStorage::new(store_dir.path()));
        let owner = makalog::root::Owner::try_acquire(copy.clone())
            .expect("acquire")
            .expect("free");
        let store = makalog::store::RuntimeEventStore::open(&owner, Default::default());
        let read_only = store
            .list_session_invocations(&input.session_id)
            .expect("read-only listing");
        store.open_session_now(&input.session_id).expect("open");
        assert_eq!(
            store
                .list_session_invocations(&input.session_id)
                .expect("listing"),
            read_only,
            "{name}"
        );
        let lines: Vec<String> = read_only.iter().map(|i| i.to_canonical_json()).collect();
        assert_eq!(
            lines.join("\n") + "\n",
            std::fs::read_to_string(dir.join("expected-invocations.jsonl")).expect("expected"),
            "{name}"
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

#[test]
fn every_single_bit_flip_of_the_vector_sidecars_is_caught_and_never_panics() {
    for (format, name, _) in EVENT_VECTORS {
        bit_flips_of_the_sidecar(&vectors::vectors_dir(format).join(name));
    }
}

fn bit_flips_of_the_sidecar(dir: &Path) {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state, find_ids, section};
    let input = vectors::read_events_input(dir);
    let good =
        std::fs::read(dir.join("sessions").join(&input.session_id).join("index")).expect("index");
    let mut refused = 0;
    for bit in 0..good.len() * 8 {
        let mut bad = good.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let Ok(header) = decode_sidecar_header(&bad) else {
            refused += 1;
            continue;
        };
        let state = decode_sidecar_state(&bad, &header);
        let ids = section(&bad, &header, 2).map(|body| find_ids(body, 42));
        assert!(
            state.is_err() || ids.is_err(),
            "flip of bit {bit} went unnoticed"
        );
        refused += 1;
    }
    assert_eq!(
        refused,
        good.len() * 8,
        "every flip is caught by the header's or a section's CRC"
    );
}
