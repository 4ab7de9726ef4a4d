//! A crash while recovery copies a torn tail aside: the quarantine file is complete or absent,
//! never a part of the bytes left under its final name beside a second copy.

mod support;

use makalog::segment::SegmentWriter;
use makalog::storage::{OpenMode, SimRng, SimStorage, Storage, Tear};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::{exact_config, owner, sim_root, write_n};

const S: &str = "quarantined";

fn segment() -> PathBuf {
    Path::new("sessions")
        .join(S)
        .join("00000000000000000001.seg")
}

/// A session of five durable records followed by `torn` (bytes no frame decodes), synced.
fn torn_session(torn: &[u8]) -> Arc<SimStorage> {
    let storage = sim_root();
    write_n(&storage, S, &exact_config(), 1, 5, 100);
    let seg = segment();
    let f = storage.open(&seg, OpenMode::ReadWrite).expect("open");
    let end = f.size().expect("size");
    f.write_all_at(torn, end).expect("write");
    f.sync_data().expect("sync");
    storage
}

fn quarantine_files(storage: &SimStorage) -> Vec<(PathBuf, Vec<u8>)> {
    storage
        .durable_files()
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains(".torn-"))
        .collect()
}

#[test]
fn a_crash_at_any_point_of_the_quarantine_leaves_one_whole_copy_after_the_next_open() {
    let torn: Vec<u8> = (0..9_000u32).map(|i| (i % 251) as u8 | 1).collect();
    let (mut crashed, mut tmps) = (0, 0);
    for point in 1..=12u64 {
        for seed in 0..8 {
            let storage = torn_session(&torn);
            storage.crash_before_point(storage.persistence_points() + point);
            if SegmentWriter::open(&owner(&storage), S, exact_config()).is_err() {
                crashed += 1;
            }
            storage.crash(Tear::Pages, &mut SimRng::new(seed));
            let before = makalog::verify::verify_root(&*storage).expect("verify");
            assert!(
                !before.findings.iter().any(|f| f.contains("unexpected")),
                "point {point}, seed {seed}: a left-over copy is no stray: {:?}",
                before.findings
            );
            let tmp_left = storage
                .durable_files()
                .keys()
                .any(|p| p.to_string_lossy().ends_with(".tmp"));
            tmps += usize::from(tmp_left);
            let (w, _) = SegmentWriter::open(&owner(&storage), S, exact_config())
                .unwrap_or_else(|e| panic!("point {point}, seed {seed}: {e}"));
            assert_eq!(w.next_seq(), 6, "point {point}, seed {seed}");
            drop(w);
            let kept = quarantine_files(&storage);
            assert_eq!(
                kept.len(),
                1,
                "point {point}, seed {seed}: one quarantine file, got {:?}",
                kept.iter().map(|(p, b)| (p, b.len())).collect::<Vec<_>>()
            );
            assert_eq!(kept[0].1, torn, "point {point}, seed {seed}");
            assert!(
                !kept[0].0.to_string_lossy().ends_with(".tmp"),
                "point {point}, seed {seed}: renamed"
            );
            let report = makalog::verify::verify_root(&*storage).expect("verify");
            assert!(
                report.is_clean(),
                "point {point}, seed {seed}: {:?}",
                report.findings
            );
        }
    }
    assert!(crashed > 0, "no crash point fell inside the recovery");
    assert!(tmps > 0, "no crash left a temporary copy behind");
}
