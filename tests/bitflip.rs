//! Every single-bit flip of every vector: of its segments (always found, never decoded as
//! another record) and of its index sidecars (always caught by a CRC, never a panic). Flips of
//! acknowledged records that the recovery table must refuse rather than cut are in
//! `recovery_table.rs` and `torn_pages.rs`.

mod support;

use std::path::Path;
use support::vector_files::*;
use support::vectors;

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
