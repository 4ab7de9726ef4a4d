//! Truncation at every byte: of the last segment of every vector (recovery keeps a valid
//! prefix and loses no sealed record), of every sealed segment (always found), and of the claims
//! log (replays to a valid prefix).

mod support;

use makalog::recovery::Problem;
use makalog::segment::{SegmentWriter, WriterConfig};
use makalog::storage::RealStorage;
use std::path::Path;
use support::vector_files::*;
use support::vectors;

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
