//! The segment writer: durable and buffered appends, group commit, roll, poisoning, reading back.

mod support;

use makalog::format::Tail;
use makalog::format::{RecordKind, MAX_PAYLOAD_LIMIT};
use makalog::segment::{
    Durability, Resume, ScanResult, SegmentWriter, SessionReader, WriterConfig,
};
use makalog::storage::Storage;
use makalog::Error;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use support::counting::counting;
use support::*;

const S: &str = "session-w";

#[test]
fn durable_appends_read_back_in_order_with_their_chain() {
    let (_t, storage) = temp_root();
    let (w, _) = SegmentWriter::open(&owner(&storage), S, WriterConfig::default()).expect("open");
    let mut acks = Vec::new();
    for i in 1..=50 {
        acks.push(
            w.append(RecordKind::Message, &payload(i, 64), Durability::Durable)
                .expect("append"),
        );
    }
    let recs = read_all(&*storage, S).expect("read");
    assert_eq!(recs.len(), 50);
    for (i, (r, a)) in recs.iter().zip(&acks).enumerate() {
        assert_eq!(r.seq, i as u64 + 1);
        assert_eq!(r.seq, a.seq);
        assert_eq!(r.chain, a.chain);
        assert_eq!(r.payload, payload(i as u64 + 1, 64));
        assert_eq!(r.kind, RecordKind::Message);
    }
}

#[test]
fn concurrent_durable_appends_share_syncs_and_get_consecutive_sequence_numbers() {
    let (t, _) = temp_root();
    let (storage, syncs) = counting(t.path().join("root"), u64::MAX);
    let (w, _) = SegmentWriter::open(&owner(&storage), S, WriterConfig::default()).expect("open");
    let w = Arc::new(w);
    // Each sync takes a while, so the other appenders queue behind it and share the next.
    *storage.meter.slow_sync.lock().expect("meter") = Some(std::time::Duration::from_millis(2));
    let base = syncs.load(Ordering::SeqCst);
    let threads = 8;
    let per = 200;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let w = w.clone();
            std::thread::spawn(move || {
                (0..per)
                    .map(|i| {
                        w.append(
                            RecordKind::RuntimeEvent,
                            &payload(t * 1000 + i, 100),
                            Durability::Durable,
                        )
                        .expect("append")
                        .seq
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("join"))
        .collect();
    seqs.sort_unstable();
    let total = threads * per;
    assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
    let used = syncs.load(Ordering::SeqCst) - base;
    assert!(
        used * 3 <= total,
        "group commit: {used} syncs for {total} appends from {threads} threads"
    );
    let recs = read_all(&*storage, S).expect("read");
    assert_eq!(recs.len() as u64, total);
}

#[test]
fn a_segment_rolls_at_its_size_and_is_sealed_with_a_footer() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 2048,
        prealloc_step: 512,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &config, 1, 40, 150);
    let root = storage.describe_root();
    let segs = segment_paths(&root, S);
    assert!(segs.len() >= 4, "{} segments", segs.len());
    for (i, seg) in segs.iter().enumerate() {
        let bytes = std::fs::read(seg).expect("read");
        assert!(
            bytes.len() as u64 <= 2048,
            "segment {i} is {} bytes",
            bytes.len()
        );
        let ScanResult::Scanned(scan) = makalog::segment::scan_segment(&bytes) else {
            panic!("segment {i} header")
        };
        assert_eq!(scan.header.ordinal, i as u64);
        if i + 1 < segs.len() {
            assert!(
                matches!(
                    scan.end,
                    Tail::Sealed {
                        trailing_zeros: 0,
                        ..
                    }
                ),
                "segment {i}: {:?}",
                scan.end
            );
        }
    }
    // Reopening continues the chain in the last segment.
    write_n(&storage, S, &config, 41, 10, 150);
    let recs = read_all(&*storage, S).expect("read");
    assert_eq!(recs.len(), 50);
    assert!(recs
        .iter()
        .enumerate()
        .all(|(i, r)| r.payload == payload(i as u64 + 1, 150)));
}

#[test]
fn buffered_appends_become_durable_with_the_next_durable_append() {
    let (_t, storage) = temp_root();
    let (w, _) = SegmentWriter::open(&owner(&storage), S, WriterConfig::default()).expect("open");
    for i in 1..=10 {
        w.append(
            RecordKind::RuntimeEvent,
            &payload(i, 80),
            Durability::Buffered,
        )
        .expect("append");
    }
    assert_eq!(
        read_all(&*storage, S).expect("read").len(),
        0,
        "buffered records stay in memory"
    );
    w.append(
        RecordKind::RuntimeEvent,
        &payload(11, 80),
        Durability::Durable,
    )
    .expect("append");
    assert_eq!(read_all(&*storage, S).expect("read").len(), 11);
}

#[test]
fn buffered_appends_past_the_limit_are_written_out() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        buffered_limit: 1000,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, config).expect("open");
    // Each frame is 249 bytes: the 5th and the 10th append cross the 1000-byte limit.
    for i in 1..=12 {
        w.append(
            RecordKind::RuntimeEvent,
            &payload(i, 249 - support::OVERHEAD as usize),
            Durability::Buffered,
        )
        .expect("append");
    }
    assert_eq!(read_all(&*storage, S).expect("read").len(), 10);
}

#[test]
fn a_failed_sync_poisons_the_writer_and_reopening_recovers() {
    let (t, _) = temp_root();
    let root = t.path().join("root");
    let (good, _) = counting(root.clone(), u64::MAX);
    let (w, _) = SegmentWriter::open(&owner(&good), S, WriterConfig::default()).expect("open");
    for i in 1..=5 {
        w.append(RecordKind::Message, &payload(i, 50), Durability::Durable)
            .expect("append");
    }
    drop(w);
    // The second sync after opening fails: one append is acknowledged, the next is not.
    let (bad, syncs) = counting(root.clone(), u64::MAX);
    let (w, _) = SegmentWriter::open(&owner(&bad), S, WriterConfig::default()).expect("open");
    let opened = syncs.load(Ordering::SeqCst);
    drop(w);
    let (bad, _) = counting(root.clone(), opened + 2);
    let (w, _) = SegmentWriter::open(&owner(&bad), S, WriterConfig::default()).expect("open");
    w.append(RecordKind::Message, &payload(6, 50), Durability::Durable)
        .expect("first sync works");
    let err = w
        .append(RecordKind::Message, &payload(7, 50), Durability::Durable)
        .expect_err("sync fails");
    assert!(
        matches!(
            err,
            Error::Io {
                op: "fdatasync",
                ..
            }
        ),
        "{err}"
    );
    let err = w
        .append(RecordKind::Message, &payload(8, 50), Durability::Durable)
        .expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned { .. }), "{err}");
    assert!(matches!(w.sync(), Err(Error::Poisoned { .. })));
    drop(w);
    let (good, _) = counting(root, u64::MAX);
    let (w, _) = SegmentWriter::open(&owner(&good), S, WriterConfig::default()).expect("reopen");
    let recs = read_all(&*good, S).expect("read");
    assert!(
        recs.len() == 6 || recs.len() == 7,
        "acknowledged records survive: {}",
        recs.len()
    );
    assert_eq!(w.next_seq(), recs.len() as u64 + 1);
}

#[test]
fn an_oversized_record_is_refused_and_nothing_is_written() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        max_payload: 1000,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, config).expect("open");
    let before = snapshot(&storage.describe_root());
    let err = w
        .append(RecordKind::Message, &vec![b'x'; 1001], Durability::Durable)
        .expect_err("too big");
    assert!(matches!(err, Error::InvalidInput(_)));
    assert_eq!(before, snapshot(&storage.describe_root()));
    assert_eq!(w.next_seq(), 1);
    w.append(RecordKind::Message, &vec![b'x'; 1000], Durability::Durable)
        .expect("at the bound");
}

#[test]
fn a_payload_bound_above_the_format_limit_is_refused() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        max_payload: MAX_PAYLOAD_LIMIT + 1,
        ..WriterConfig::default()
    };
    assert!(matches!(
        SegmentWriter::open(&owner(&storage), S, config),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn session_ids_that_are_not_safe_path_components_are_refused() {
    let (_t, storage) = temp_root();
    for bad in ["", "..", "a/b", "a b", &"x".repeat(129), "ü"] {
        assert!(
            matches!(
                SegmentWriter::open(&owner(&storage), bad, WriterConfig::default()),
                Err(Error::InvalidInput(_))
            ),
            "{bad:?}"
        );
    }
    assert!(!storage
        .describe_root()
        .join("sessions")
        .join("..")
        .join("x")
        .exists());
}

#[test]
fn a_reader_starts_at_any_sequence_number() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 1024,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &config, 1, 30, 120);
    for from in 1..=31u64 {
        let seqs: Vec<u64> = SessionReader::open(&*storage, S, from)
            .expect("reader")
            .map(|r| r.expect("record").seq)
            .collect();
        assert_eq!(seqs, (from..=30).collect::<Vec<_>>(), "from {from}");
    }
}

#[test]
fn zeros_ahead_start_at_one_block_and_double_with_the_data_up_to_the_step() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        prealloc_step: 64 << 10,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, config.clone()).expect("open");
    let seg = segment_paths(&storage.describe_root(), S)[0].clone();
    let len = || std::fs::metadata(&seg).expect("stat").len();
    assert_eq!(len(), 4096, "a new segment fills its first block, no more");
    let mut data_end = 256u64;
    let mut lengths = vec![len()];
    for i in 0..1500 {
        w.append(
            RecordKind::RuntimeEvent,
            &payload(i, 300),
            Durability::Durable,
        )
        .expect("append");
        data_end += 300 + support::OVERHEAD;
        let l = len();
        assert!(l >= data_end, "the file holds its data");
        assert!(
            l - data_end <= config.max_zeros_ahead(data_end),
            "at most the policy's zeros ahead of the data"
        );
        if l != *lengths.last().expect("one") {
            lengths.push(l);
        }
    }
    // Each growth at least doubles the file, until the step is reached.
    for pair in lengths.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(b >= (2 * a).min(a + (64 << 10)), "{a} grew to {b}");
        assert_eq!(b % 4096, 0, "grown to a whole block");
    }
    let steps_at_full = lengths
        .windows(2)
        .filter(|p| p[1] - p[0] >= 64 << 10)
        .count();
    assert!(
        steps_at_full >= 3,
        "a busy segment reaches the full step: {lengths:?}"
    );
    assert!(lengths.len() < 20, "few size changes: {lengths:?}");
    w.close().expect("close");
    assert_eq!(len(), data_end, "a clean close cuts the zeros");
}

#[test]
fn a_large_batch_is_not_zero_filled_ahead_and_a_small_one_is() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        prealloc_step: 1024,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner(&storage), S, config).expect("open");
    let seg = segment_paths(&storage.describe_root(), S)[0].clone();
    let len = || std::fs::metadata(&seg).expect("stat").len();
    assert_eq!(
        len(),
        1024,
        "the first block is the step when the step is smaller"
    );
    w.append(
        RecordKind::RuntimeEvent,
        &vec![b'x'; 100_000],
        Durability::Durable,
    )
    .expect("append");
    let data_end = 256 + support::OVERHEAD + 100_000;
    assert_eq!(len(), data_end, "a large batch is not zero-filled ahead");
    w.append(
        RecordKind::RuntimeEvent,
        &payload(2, 100),
        Durability::Durable,
    )
    .expect("append");
    let end = data_end + 100 + support::OVERHEAD;
    assert_eq!(
        len(),
        (end + 1024).div_ceil(1024) * 1024,
        "a small batch grows the file with zeros ahead"
    );
    drop(w);
    assert_eq!(len(), end, "a dropped writer closes cleanly too");
}

#[test]
fn a_closed_session_reopened_and_closed_holds_no_zeros() {
    let (_t, storage) = temp_root();
    let config = WriterConfig::default();
    for round in 0..3u64 {
        let (w, _) = SegmentWriter::open(&owner(&storage), S, config.clone()).expect("open");
        w.append(
            RecordKind::Message,
            &payload(round, 200),
            Durability::Durable,
        )
        .expect("append");
        w.close().expect("close");
        let seg = &segment_paths(&storage.describe_root(), S)[0];
        assert_eq!(
            std::fs::metadata(seg).expect("stat").len(),
            256 + (round + 1) * (200 + support::OVERHEAD),
            "round {round}"
        );
    }
    assert_eq!(read_all(&*storage, S).expect("read").len(), 3);
}

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

/// The resume point just after record `k` (1-based) of `recs`.
fn resume_after(
    storage: &Arc<makalog::storage::RealStorage>,
    recs: &[makalog::segment::Record],
    k: usize,
) -> Resume {
    let r = &recs[k - 1];
    let segs = segment_paths(&storage.describe_root(), S);
    let ordinal = segs
        .iter()
        .position(|p| p.ends_with(&r.file))
        .expect("segment") as u64;
    Resume {
        ordinal,
        last_frame_offset: r.offset,
        data_end: r.end,
        last_seq: r.seq,
        chain: r.chain,
    }
}

#[test]
fn resuming_after_a_trusted_prefix_reads_only_what_follows_and_agrees_with_a_full_scan() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        segment_size: 1024,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &config, 1, 20, 150);
    let recs = read_all(&*storage, S).expect("read");
    for k in [1, 5, 12, 19, 20] {
        let resume = resume_after(&storage, &recs, k);
        let tail: Vec<u64> = SessionReader::resume(&*storage, S, resume)
            .expect("resume")
            .map(|r| r.expect("record").seq)
            .collect();
        assert_eq!(tail, (k as u64 + 1..=20).collect::<Vec<_>>(), "after {k}");
        let (w, report) =
            SegmentWriter::open_resumed(&owner(&storage), S, config.clone(), Some(resume))
                .expect("open");
        assert!(report.repairs.is_empty());
        assert_eq!(w.next_seq(), 21);
        drop(w);
    }
    let resume = resume_after(&storage, &recs, 7);
    let (w, _) = SegmentWriter::open_resumed(&owner(&storage), S, config.clone(), Some(resume))
        .expect("open");
    w.append(RecordKind::Message, &payload(21, 150), Durability::Durable)
        .expect("append");
    drop(w);
    assert_eq!(read_all(&*storage, S).expect("read").len(), 21);
}

/// The frame a resume point vouches for is read again: one that is not there (here, the chain
/// value differs) is damage at the frame's offset.
#[test]
fn a_resume_point_off_the_chain_is_refused() {
    let (_t, storage) = temp_root();
    write_n(&storage, S, &WriterConfig::default(), 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let mut resume = resume_after(&storage, &recs, 2);
    resume.chain[0] ^= 1;
    let err =
        SegmentWriter::open_resumed(&owner(&storage), S, WriterConfig::default(), Some(resume));
    assert!(
        matches!(err, Err(Error::Corrupt { offset, .. }) if offset == resume.last_frame_offset)
    );
}

#[test]
fn a_reader_refuses_segments_copied_from_another_session() {
    let (_t, storage) = temp_root();
    write_n(&storage, S, &WriterConfig::default(), 1, 3, 80);
    let root = storage.describe_root();
    let other = root.join("sessions").join("copied");
    std::fs::create_dir_all(&other).expect("mkdir");
    for seg in segment_paths(&root, S) {
        std::fs::copy(&seg, other.join(seg.file_name().expect("name"))).expect("copy");
    }
    let mut reader = SessionReader::open(&*storage, "copied", 1).expect("reader");
    assert!(matches!(
        reader.next(),
        Some(Err(Error::Corrupt { offset: 0, .. }))
    ));
    assert!(!makalog::verify::verify_root(&*storage)
        .expect("verify")
        .is_clean());
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

/// A frame after a resume point must not record a durable sequence number below the one the
/// last trusted frame recorded: a full scan calls that damage, so a scan, a reader and an open
/// for writing that resume there (from a sidecar) must call it damage at the same byte.
#[test]
fn a_frame_after_a_resume_point_whose_durable_seq_falls_is_damage_as_in_a_full_scan() {
    let (_t, storage) = temp_root();
    write_n(&storage, S, &WriterConfig::default(), 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let last = &recs[4];
    assert!(last.durable_seq.is_some(), "the writer's layout records d");
    let body = payload(6, 100);
    let at = append_frame_after(&storage, S, last, (RecordKind::Message, &body), 0);

    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(!report.is_clean(), "a full scan calls it damage");
    let resume = resume_after(&storage, &recs, 5);
    let read: Vec<_> = SessionReader::resume(&*storage, S, resume)
        .expect("resume")
        .collect();
    assert!(
        matches!(read.as_slice(), [Err(Error::Corrupt { offset, .. })] if *offset == at),
        "a resumed reader: {read:?}"
    );
    let opened =
        SegmentWriter::open_resumed(&owner(&storage), S, WriterConfig::default(), Some(resume));
    assert!(
        matches!(&opened, Err(Error::Corrupt { offset, .. }) if *offset == at),
        "an open resumed from a sidecar: {:?}",
        opened.as_ref().map(|(w, _)| w.next_seq())
    );
    let full = SegmentWriter::open(&owner(&storage), S, WriterConfig::default());
    assert!(
        matches!(&full, Err(Error::Corrupt { offset, .. }) if *offset == at),
        "an open that scans every frame: {:?}",
        full.as_ref().map(|(w, _)| w.next_seq())
    );
}
