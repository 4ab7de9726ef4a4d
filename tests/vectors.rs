//! Golden vectors checked both ways: the reader produces what each vector expects, and the
//! writer reproduces each vector's files from its input. Their truncations are in
//! `truncation.rs`, their bit flips in `bitflip.rs`.

mod support;

use makalog::format::{hex, FrameDecode, FrameLayout, RecordKind};
use makalog::recovery::Problem;
use makalog::segment::{scan_segment, ScanResult, SegmentWriter, WriterConfig};
use makalog::storage::RealStorage;
use makalog::verify::verify_root;
use sha2::{Digest, Sha256};
use std::path::Path;
use support::vector_files::*;
use support::vectors;

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
fn a_turn_rejection_frame_is_an_unknown_kind_before_version_3() {
    let chain = makalog::format::genesis_chain("s");
    for layout in [FrameLayout::V1, FrameLayout::V2, FrameLayout::V3] {
        let mut out = Vec::new();
        makalog::format::encode_frame(
            &mut out,
            layout,
            1,
            RecordKind::TurnRejection,
            b"{}",
            &chain,
            0,
        );
        let decoded = makalog::format::decode_frame::<RecordKind>(&out, layout, 1024);
        if layout == FrameLayout::V3 {
            assert!(
                matches!(decoded, Ok(FrameDecode::Frame(f, _)) if f.kind == RecordKind::TurnRejection)
            );
        } else {
            let e = decoded.expect_err("an unknown kind in this version");
            assert_eq!((e.offset, e.what.as_str()), (16, "unknown record kind 8"));
        }
    }
}

#[test]
fn an_all_zero_frame_header_is_never_a_frame_and_an_all_zero_segment_header_never_decodes() {
    for layout in [FrameLayout::V1, FrameLayout::V2, FrameLayout::V3] {
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
        // The session records the input appends before its events are in the view.
        let state = makalog::index::decode_sidecar_state(&stored, &header).expect("state");
        assert_eq!(state.session, view.session, "{name}");
        assert_eq!(
            (view.session.header.is_some(), view.session.messages.len()),
            (
                !input.records.is_empty(),
                input.records.len().saturating_sub(1)
            ),
            "v{format} {name}: the header and every message"
        );
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
