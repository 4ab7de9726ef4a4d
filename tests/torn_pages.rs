//! Pages of an unsynced batch reach the disk in any order: after a power loss a later page may
//! hold valid frames while an earlier one reads as zeros. In a version 2 root, every frame
//! records how far the log was durable when it was written, so recovery cuts such a tail as
//! torn (quarantined, reported) and never takes damage to synced records for one.

mod support;

use makalog::error::Error;
use makalog::format::RecordKind;
use makalog::recovery::Repair;
use makalog::root::{Owner, RootMarker, MARKER_FILE, ROOT_KIND};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::storage::{write_atomically, SimRng, SimStorage, Tear};
use std::path::Path;
use std::sync::Arc;
use support::{payload, read_all};

const S: &str = "pages";

/// A simulated root whose marker names format `version`.
fn root(version: u16) -> Arc<SimStorage> {
    let storage = Arc::new(SimStorage::new());
    let marker = RootMarker {
        schema_version: 1,
        kind: ROOT_KIND.into(),
        root_id: "ab".repeat(32),
        format_version: version,
    };
    let mut bytes = serde_json::to_vec(&marker).expect("marker");
    bytes.push(b'\n');
    write_atomically(&*storage, Path::new(MARKER_FILE), &bytes).expect("marker");
    storage
}

fn owner(storage: &Arc<SimStorage>) -> Owner {
    Owner::try_acquire(storage.clone())
        .expect("lease")
        .expect("free")
}

const ACKED: u64 = 3;

fn config() -> WriterConfig {
    WriterConfig {
        prealloc_step: 0,
        buffered_limit: 1 << 20,
        ..WriterConfig::default()
    }
}

/// Three acknowledged records, then a batch of eight 700-byte records written in one go and
/// not yet synced when the power fails; returns the segment's bytes as written.
fn write_then_lose_power(storage: &Arc<SimStorage>, seed: u64) -> Vec<u8> {
    let (w, _) = SegmentWriter::open(&owner(storage), S, config()).expect("open");
    for i in 1..=ACKED {
        w.append(RecordKind::Message, &payload(i, 100), Durability::Durable)
            .expect("durable append");
    }
    for i in ACKED + 1..=ACKED + 8 {
        w.append(RecordKind::Message, &payload(i, 700), Durability::Buffered)
            .expect("buffered append");
    }
    // Once durable appends are in the queue too, the flush leader writes the whole batch; the
    // crash comes before its sync.
    storage.crash_before_point(storage.persistence_points() + 2);
    assert!(w.sync().is_err(), "the sync never happens");
    let written = storage
        .live_files()
        .into_iter()
        .find(|(p, _)| p.extension().is_some_and(|e| e == "seg"))
        .expect("segment")
        .1;
    std::mem::forget(w);
    storage.crash(Tear::Pages, &mut SimRng::new(seed));
    written
}

/// True when the crash image lost a block of the batch but kept a later one.
fn kept_a_later_block(written: &[u8], image: &[u8]) -> bool {
    let first_lost = written
        .chunks(512)
        .zip(image.chunks(512))
        .position(|(w, i)| w != i);
    first_lost.is_some_and(|lost| {
        written
            .chunks(512)
            .zip(image.chunks(512))
            .skip(lost + 1)
            .any(|(w, i)| w == i && w.iter().any(|&b| b != 0))
    })
}

fn segment_image(storage: &SimStorage) -> Vec<u8> {
    storage
        .durable_files()
        .into_iter()
        .find(|(p, _)| p.extension().is_some_and(|e| e == "seg"))
        .expect("segment")
        .1
}

#[test]
fn a_batch_whose_later_pages_survive_an_earlier_one_is_cut_as_torn_keeping_every_acknowledged_record(
) {
    let mut gaps = 0;
    for seed in 0..200 {
        let storage = root(2);
        let written = write_then_lose_power(&storage, seed);
        let image = segment_image(&storage);
        let gap = kept_a_later_block(&written, &image);
        let (w, report) = SegmentWriter::open(&owner(&storage), S, config())
            .unwrap_or_else(|e| panic!("seed {seed}: an ordinary power loss refused: {e}"));
        drop(w);
        let recs = read_all(&*storage, S).expect("read");
        assert!(
            recs.len() as u64 >= ACKED,
            "seed {seed}: lost acknowledged records"
        );
        for (i, r) in recs.iter().enumerate() {
            let len = if i < ACKED as usize { 100 } else { 700 };
            assert_eq!(r.payload, payload(i as u64 + 1, len), "seed {seed}");
        }
        if gap {
            gaps += 1;
            assert!(
                matches!(report.repairs.as_slice(), [Repair::TruncateTornTail { .. }]),
                "seed {seed}: the torn batch is quarantined and cut: {:?}",
                report.repairs
            );
            assert!(
                storage
                    .durable_files()
                    .keys()
                    .any(|p| p.to_string_lossy().contains(".torn-")),
                "seed {seed}: the cut bytes are kept"
            );
        }
    }
    assert!(gaps > 20, "only {gaps} of 200 crashes kept a later block");
}

/// Version 1 frames cannot tell an unsynced batch from damage: the same power losses leave
/// sessions that refuse to open. This is what version 2 fixed; the old reader keeps its rule.
#[test]
fn a_version_1_root_refuses_the_same_tail() {
    let mut refused = 0;
    for seed in 0..200 {
        let storage = root(1);
        let written = write_then_lose_power(&storage, seed);
        let gap = kept_a_later_block(&written, &segment_image(&storage));
        match SegmentWriter::open(&owner(&storage), S, config()) {
            Ok(_) => {}
            Err(Error::Corrupt { .. }) if gap => refused += 1,
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    assert!(refused > 0, "no power loss left a tail version 1 refuses");
}

/// Damage to a synced record is never cut as torn: the records after it were written when it
/// was durable, and say so.
#[test]
fn damage_to_a_synced_record_with_records_after_it_is_refused() {
    let storage = root(2);
    let (w, _) = SegmentWriter::open(&owner(&storage), S, config()).expect("open");
    let mut acks = Vec::new();
    for i in 1..=6 {
        acks.push(
            w.append(RecordKind::Message, &payload(i, 300), Durability::Durable)
                .expect("append"),
        );
    }
    drop(w);
    let seg = Path::new("sessions")
        .join(S)
        .join("00000000000000000001.seg");
    storage
        .corrupt(&seg, acks[2].offset + 40, b"\xff")
        .expect("corrupt");
    match SegmentWriter::open(&owner(&storage), S, config()) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert_eq!(file, seg);
            assert_eq!(offset, acks[2].offset);
        }
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    }
    assert_eq!(read_all(&*storage, S).map(|r| r.len()).ok(), None);
}

/// A roll writes a segment's last frames and its seal footer in one write, before their sync:
/// the footer may survive while the frames before it read as zeros. In version 2 that is a
/// torn tail (the frames' durable numbers are what tell); version 1 refuses it.
#[test]
fn a_seal_footer_that_outlived_the_frames_before_it_is_a_torn_tail_from_version_2() {
    use makalog::format::{
        encode_frame, genesis_chain, next_chain, FrameLayout, SealFooter, SegmentHeader, Tail,
    };
    use makalog::segment::{scan_segment, ScanResult};
    for (version, layout) in [
        (1u16, FrameLayout::V1),
        (2, FrameLayout::V2),
        (3, FrameLayout::V3),
    ] {
        let mut bytes = SegmentHeader {
            version,
            max_payload: 4096,
            ordinal: 0,
            first_seq: 1,
            prev_chain: genesis_chain(S),
            session_id: S.into(),
        }
        .encode()
        .to_vec();
        let mut chain = genesis_chain(S);
        for seq in 1..=2 {
            chain = next_chain(&chain, seq, RecordKind::Message as u8, &payload(seq, 300));
            encode_frame(
                &mut bytes,
                layout,
                seq,
                RecordKind::Message,
                &payload(seq, 300),
                &chain,
                seq - 1,
            );
        }
        let footer_at = bytes.len() as u64;
        bytes.extend_from_slice(
            &SealFooter {
                footer_offset: footer_at,
                last_seq: 2,
                frame_count: 2,
                chain,
            }
            .encode(),
        );
        // Record 2's first sector never reached the disk.
        let second = 256 + layout.overhead() + 300;
        bytes[second..second + 64].fill(0);
        let ScanResult::Scanned(scan) = scan_segment(&bytes) else {
            panic!("the header is valid");
        };
        assert_eq!(scan.frame_count, 1, "v{version}");
        match (version, &scan.end) {
            (1, Tail::Damaged { offset, .. }) => assert_eq!(*offset, second as u64 + 64),
            (2 | 3, Tail::Torn { .. }) => {}
            (_, other) => panic!("v{version}: {other:?}"),
        }
    }
}
