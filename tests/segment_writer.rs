//! The segment writer: durable and buffered appends, group commit, roll, poisoning, refusals,
//! reading back. Its zeros ahead: `segment_zeros.rs`; resuming after a trusted point:
//! `segment_resume.rs`; raising a segment's payload bound: `segment_bounds.rs`.

mod support;

use makalog::format::Tail;
use makalog::format::{RecordKind, MAX_PAYLOAD_LIMIT};
use makalog::segment::{Durability, ScanResult, SegmentWriter, SessionReader, WriterConfig};
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
    // Without group commit every append syncs; with it about four share a sync, and the bound
    // leaves twice that margin for a loaded machine's scheduling.
    assert!(
        used * 2 <= total,
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
    // Another session's, where its header names it (as verify reports it).
    assert!(matches!(
        reader.next(),
        Some(Err(Error::Corrupt { offset: 66, .. }))
    ));
    assert!(!makalog::verify::verify_root(&*storage)
        .expect("verify")
        .is_clean());
}
