//! The segment writer's zeros ahead of its data: one block first, doubling with the data up to
//! the step, none for a large batch, none left after a clean close.

mod support;

use makalog::format::RecordKind;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::Storage;
use support::*;

const S: &str = "session-w";

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
