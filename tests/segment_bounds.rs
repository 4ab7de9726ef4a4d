//! A record above the open segment's payload bound: a new segment with the new bound, an empty
//! segment's header rewritten in place, and a crash anywhere around that recovering what was
//! acknowledged.

mod support;

use makalog::format::RecordKind;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::Storage;
use std::sync::Arc;
use support::*;

const S: &str = "session-w";

#[test]
fn a_record_above_the_open_segments_bound_starts_a_segment_with_the_new_bound() {
    let (_t, storage) = temp_root();
    let small = WriterConfig {
        max_payload: 1000,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &small, 1, 3, 500);
    let large = WriterConfig {
        max_payload: 5000,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &large, 4, 1, 4000);
    write_n(&storage, S, &large, 5, 1, 500);
    let recs = read_all(&*storage, S).expect("read");
    assert_eq!(recs.len(), 5);
    assert_eq!(recs[3].payload, payload(4, 4000));
    assert_eq!(segment_paths(&storage.describe_root(), S).len(), 2);
}

#[test]
fn a_larger_record_on_an_empty_segment_rewrites_its_header_instead_of_rolling_onto_its_name() {
    let (_t, storage) = temp_root();
    let small = WriterConfig {
        max_payload: 1024,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, small).expect("open");
    w.close().expect("close with no record");
    let large = WriterConfig {
        max_payload: 1 << 20,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, large.clone()).expect("reopen");
    w.append(RecordKind::RunSeal, &payload(1, 4096), Durability::Durable)
        .expect("a record above the empty segment's bound");
    w.append(RecordKind::RunSeal, &payload(2, 100), Durability::Durable)
        .expect("and one after it");
    drop(w);
    let (w, _) = SegmentWriter::open(&owner(&storage), S, large).expect("open again");
    assert_eq!(w.next_seq(), 3);
    drop(w);
    let recs = read_all(&*storage, S).expect("read");
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].payload, payload(1, 4096));
    let segs = segment_paths(&storage.describe_root(), S);
    assert_eq!(
        segs.len(),
        1,
        "the empty segment was rewritten, not sealed: {segs:?}"
    );
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
}

#[test]
fn a_crash_anywhere_around_raising_an_empty_segments_bound_recovers_what_was_acknowledged() {
    use makalog::root::Owner;
    use makalog::storage::{SimRng, SimStorage, Tear};
    let run = |storage: &Arc<SimStorage>| -> usize {
        let mut acked = 0;
        let Ok(owner) = makalog::root::create_or_open_root(&**storage)
            .and_then(|_| Owner::try_acquire(storage.clone()))
        else {
            return acked;
        };
        let Some(owner) = owner else { return acked };
        let small = WriterConfig {
            max_payload: 1024,
            prealloc_step: 512,
            ..WriterConfig::default()
        };
        if let Ok((w, _)) = SegmentWriter::open(&owner, S, small) {
            let _ = w.close();
        }
        let large = WriterConfig {
            max_payload: 1 << 16,
            prealloc_step: 512,
            ..WriterConfig::default()
        };
        if let Ok((w, _)) = SegmentWriter::open(&owner, S, large) {
            for i in 1..=3 {
                if w.append(RecordKind::Message, &payload(i, 2000), Durability::Durable)
                    .is_err()
                {
                    break;
                }
                acked += 1;
            }
        }
        acked
    };
    let points = {
        let s = Arc::new(SimStorage::new());
        assert_eq!(run(&s), 3);
        s.persistence_points()
    };
    for point in 1..=points + 1 {
        for tear in Tear::ALL {
            let storage = Arc::new(SimStorage::new());
            storage.crash_before_point(point);
            let acked = run(&storage);
            storage.crash(tear, &mut SimRng::new(point));
            makalog::root::create_or_open_root(&*storage).expect("root");
            let owner = Owner::try_acquire(storage.clone())
                .expect("lease")
                .expect("free");
            let opened = SegmentWriter::open(&owner, S, WriterConfig::default());
            let (w, _) = opened.unwrap_or_else(|e| panic!("point {point} {tear:?}: {e}"));
            drop(w);
            let recs = read_all(&*storage, S).unwrap_or_else(|e| panic!("point {point}: {e}"));
            assert!(
                recs.len() >= acked,
                "point {point} {tear:?}: {} of {acked}",
                recs.len()
            );
            for (i, r) in recs.iter().enumerate() {
                assert_eq!(
                    r.payload,
                    payload(i as u64 + 1, 2000),
                    "point {point} {tear:?}"
                );
            }
        }
    }
}
