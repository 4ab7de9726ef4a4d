//! The recovery decision table of DESIGN.md, one test per row, on real files.

mod support;

use makalog::format::{SegmentHeader, HEADER_LEN};
use makalog::recovery::{RecoveryReport, Repair};
use makalog::segment::{SegmentWriter, WriterConfig};
use makalog::storage::Storage;
use makalog::Error;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use support::*;

const S: &str = "session-1";

fn open(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    config: &WriterConfig,
) -> makalog::Result<(SegmentWriter, RecoveryReport)> {
    SegmentWriter::open(&owner(storage), S, config.clone())
}

fn write_at(path: &std::path::Path, offset: u64, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).expect("open");
    f.write_all_at(bytes, offset).expect("write");
}

fn set_len(path: &std::path::Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(len)
        .expect("set_len");
}

/// Asserts that opening for writing is refused and that no byte of the root changed.
fn assert_refused_untouched(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    config: &WriterConfig,
) -> Error {
    let root = storage.describe_root();
    let before = snapshot(&root);
    let err = match open(storage, config) {
        Ok(_) => panic!("open must refuse"),
        Err(e) => e,
    };
    assert_eq!(
        before,
        snapshot(&root),
        "a refusal must leave every file byte-identical"
    );
    err
}

#[test]
fn clean_end_of_last_segment_needs_nothing() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 5, 100);
    let root = storage.describe_root();
    let before = snapshot(&root);
    let (w, report) = open(&storage, &config).expect("open");
    assert!(report.repairs.is_empty());
    assert_eq!(before, snapshot(&root), "a clean open writes nothing");
    assert_eq!(w.next_seq(), 6);
}

#[test]
fn incomplete_last_frame_is_a_torn_tail_truncated_and_quarantined() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    let last_off = recs[4].offset;
    let full = std::fs::metadata(seg).expect("stat").len();
    set_len(seg, last_off + 30);
    let torn_bytes = std::fs::read(seg).expect("read")[last_off as usize..].to_vec();

    let (w, report) = open(&storage, &config).expect("open");
    assert_eq!(
        report.repairs,
        vec![Repair::TruncateTornTail {
            file: recs[4].file.clone(),
            offset: last_off,
            len: 30
        }]
    );
    assert_eq!(report.bytes_dropped(), 30);
    assert!(full > last_off + 30);
    assert_eq!(std::fs::metadata(seg).expect("stat").len(), last_off);
    let q = storage.describe_root().join(&report.quarantined[0]);
    assert_eq!(std::fs::read(q).expect("quarantine"), torn_bytes);
    assert_eq!(w.next_seq(), 5);
    drop(w);
    assert_eq!(read_all(&*storage, S).expect("read").len(), 4);
}

#[test]
fn bad_checksum_last_frame_is_a_torn_tail() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    write_at(seg, recs[4].offset + 40, b"X");
    let (w, report) = open(&storage, &config).expect("open");
    assert!(
        matches!(report.repairs.as_slice(), [Repair::TruncateTornTail { offset, .. }] if *offset == recs[4].offset)
    );
    assert_eq!(w.next_seq(), 5);
}

#[test]
fn zeros_after_the_last_frame_are_the_end_of_data() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        prealloc_step: 4096,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &config, 1, 3, 100);
    let root = storage.describe_root();
    let seg = &segment_paths(&root, S)[0];
    let recs = read_all(&*storage, S).expect("read");
    let data_end = recs[2].offset + 100 + support::OVERHEAD;
    assert_eq!(
        std::fs::metadata(seg).expect("stat").len(),
        data_end,
        "a clean close cuts the zeros ahead"
    );
    // A crash leaves them: the preallocated space a writer kept ahead of its data.
    std::fs::OpenOptions::new()
        .write(true)
        .open(seg)
        .and_then(|f| f.set_len(data_end + config.max_zeros_ahead(data_end)))
        .expect("zero-extend");
    let before = snapshot(&root);
    let (w, report) = open(&storage, &config).expect("open");
    assert!(report.repairs.is_empty());
    assert_eq!(before, snapshot(&root));
    assert_eq!(w.next_seq(), 4);
}

#[test]
fn nonzero_bytes_after_the_end_of_data_with_no_valid_frame_are_a_torn_tail() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        prealloc_step: 4096,
        ..WriterConfig::default()
    };
    write_n(&storage, S, &config, 1, 3, 100);
    let root = storage.describe_root();
    let seg = &segment_paths(&root, S)[0];
    let recs = read_all(&*storage, S).expect("read");
    let data_end = recs[2].offset + 100 + support::OVERHEAD;
    write_at(seg, data_end + 100, b"\xde\xad\xbe\xef");
    let (w, report) = open(&storage, &config).expect("open");
    assert_eq!(
        report.repairs,
        vec![Repair::TruncateTornTail {
            file: recs[0].file.clone(),
            offset: data_end,
            len: 104
        }]
    );
    assert_eq!(w.next_seq(), 4);
    drop(w);
    assert_eq!(read_all(&*storage, S).expect("read").len(), 3);
}

#[test]
fn bad_frame_followed_by_valid_frames_refuses_naming_file_and_offset() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    write_at(seg, recs[1].offset + 40, b"X");
    match assert_refused_untouched(&storage, &config) {
        Error::Corrupt { file, offset, .. } => {
            assert_eq!(file, recs[1].file);
            assert_eq!(offset, recs[1].offset);
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    // Read-only readers still read the valid prefix, then report the damage.
    let mut reader = makalog::segment::SessionReader::open(&*storage, S, 1).expect("reader");
    assert_eq!(reader.next().expect("first").expect("ok").seq, 1);
    assert!(
        matches!(reader.next(), Some(Err(Error::Corrupt { offset, .. })) if offset == recs[1].offset)
    );
    assert!(reader.next().is_none());
}

fn three_segments(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
) -> (WriterConfig, Vec<std::path::PathBuf>) {
    let config = WriterConfig {
        segment_size: 1024,
        prealloc_step: 0,
        ..WriterConfig::default()
    };
    write_n(storage, S, &config, 1, 12, 200);
    let segs = segment_paths(&storage.describe_root(), S);
    assert!(
        segs.len() >= 3,
        "expected at least three segments, got {}",
        segs.len()
    );
    (config, segs)
}

#[test]
fn damage_in_a_sealed_segment_refuses() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    let recs = read_all(&*storage, S).expect("read");
    let last_of_first = recs
        .iter()
        .rfind(|r| storage.describe_root().join(&r.file) == segs[0])
        .expect("a record in the first segment")
        .clone();
    write_at(&segs[0], last_of_first.offset + 30, b"X");
    match assert_refused_untouched(&storage, &config) {
        Error::Corrupt { file, offset, .. } => {
            assert_eq!(file, last_of_first.file);
            assert_eq!(offset, last_of_first.offset);
        }
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[test]
fn a_missing_middle_segment_is_a_gap_that_refuses_naming_both_files() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    std::fs::remove_file(&segs[1]).expect("remove");
    let err = assert_refused_untouched(&storage, &config);
    assert_inconsistent(err, &segs[0], &segs[2], "gap");
}

/// Asserts an `Inconsistent` refusal naming `first` then `second`, its reason mentioning `word`.
fn assert_inconsistent(
    err: Error,
    first_file: &std::path::Path,
    second_file: &std::path::Path,
    word: &str,
) {
    match err {
        Error::Inconsistent {
            first,
            second,
            what,
        } => {
            assert!(first_file.ends_with(&first), "{}", first.display());
            assert!(second_file.ends_with(&second), "{}", second.display());
            assert!(what.contains(word), "{what}");
        }
        other => panic!("expected Inconsistent, got {other}"),
    }
}

fn rewrite_header(path: &std::path::Path, change: impl FnOnce(&mut SegmentHeader)) {
    let bytes = std::fs::read(path).expect("read");
    let (mut h, _) = SegmentHeader::decode(&bytes).expect("header");
    change(&mut h);
    write_at(path, 0, &h.encode());
}

#[test]
fn a_repeated_ordinal_refuses_naming_both_files() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    rewrite_header(&segs[1], |h| h.ordinal = 0);
    let err = assert_refused_untouched(&storage, &config);
    assert_inconsistent(err, &segs[0], &segs[1], "ordinal");
}

#[test]
fn a_broken_chain_between_segments_refuses_even_with_valid_checksums() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    rewrite_header(&segs[2], |h| h.prev_chain[0] ^= 1);
    let err = assert_refused_untouched(&storage, &config);
    assert_inconsistent(err, &segs[1], &segs[2], "chain");
}

#[test]
fn an_undecodable_header_of_a_segment_with_frames_refuses() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 3, 100);
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    write_at(seg, 20, b"\xff");
    match assert_refused_untouched(&storage, &config) {
        Error::Corrupt { offset, what, .. } => {
            assert_eq!(
                offset as usize,
                HEADER_LEN - 4,
                "the header CRC is what fails: {what}"
            );
        }
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[test]
fn an_undecodable_header_of_an_empty_last_segment_is_a_torn_create_and_is_removed() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    let recs_before = read_all(&*storage, S).expect("read");
    // Drop the last segment and leave in its place a create torn before its first sync.
    let last = segs.last().expect("last");
    let in_last = recs_before
        .iter()
        .filter(|r| storage.describe_root().join(&r.file) == *last)
        .count();
    std::fs::write(last, [0x4d, 0x4b, 0x4c, 0x47, 0, 0, 0]).expect("write torn create");
    let (w, report) = open(&storage, &config).expect("open");
    assert!(matches!(
        report.repairs.as_slice(),
        [Repair::RemoveTornCreate { .. }]
    ));
    assert_eq!(report.quarantined.len(), 1);
    let expected_next = recs_before.len() - in_last + 1;
    assert_eq!(w.next_seq() as usize, expected_next);
    drop(w);
    let after = read_all(&*storage, S).expect("read");
    assert_eq!(after, recs_before[..expected_next - 1].to_vec());
}

#[test]
fn an_empty_file_as_the_only_segment_is_a_torn_create() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 1, 50);
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    set_len(seg, 0);
    let (w, report) = open(&storage, &config).expect("open");
    assert!(matches!(
        report.repairs.as_slice(),
        [Repair::RemoveTornCreate { .. }]
    ));
    assert_eq!(w.next_seq(), 1, "the session starts again from genesis");
}

/// Found by the fuzz model: a session whose creation a crash cut short (its id claimed, its
/// only file empty) is opened by no one again, so verify must not call it damage forever.
#[test]
fn verify_notes_a_session_whose_only_segment_is_a_torn_create_and_finds_a_later_one() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 1, 50);
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    set_len(seg, 0);
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    assert!(
        report.notes.iter().any(|n| n.contains("never written")),
        "{:?}",
        report.notes
    );
    let (_t, storage) = temp_root();
    let (_, segs) = three_segments(&storage);
    set_len(segs.last().expect("last"), 0);
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(
        report.findings.iter().any(|f| f.contains("torn create")),
        "a torn create after records is a finding: {:?}",
        report.findings
    );
}

#[test]
fn a_sealed_last_segment_continues_in_a_new_segment() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    let recs = read_all(&*storage, S).expect("read");
    let last = segs.last().expect("last");
    let kept = recs
        .iter()
        .filter(|r| storage.describe_root().join(&r.file) != *last)
        .count();
    std::fs::remove_file(last).expect("remove");
    let (w, report) = open(&storage, &config).expect("open");
    assert!(report.repairs.is_empty());
    assert_eq!(w.next_seq() as usize, kept + 1);
    w.append(
        makalog::format::RecordKind::Message,
        b"{}",
        makalog::segment::Durability::Durable,
    )
    .expect("append");
    drop(w);
    assert_eq!(read_all(&*storage, S).expect("read").len(), kept + 1);
}

#[test]
fn a_torn_seal_footer_in_the_last_segment_is_a_torn_tail() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    let last = segs.last().expect("last").clone();
    let kept: Vec<u64> = read_all(&*storage, S)
        .expect("read")
        .iter()
        .filter(|r| storage.describe_root().join(&r.file) != last)
        .map(|r| r.seq)
        .collect();
    std::fs::remove_file(&last).expect("remove the segment the roll created");
    let sealed = &segs[segs.len() - 2];
    let len = std::fs::metadata(sealed).expect("stat").len();
    // The footer's magic made it to disk, the rest of it did not.
    write_at(sealed, len - 60, &[0u8; 60]);
    let (w, report) = open(&storage, &config).expect("open");
    assert!(
        matches!(report.repairs.as_slice(), [Repair::TruncateTornTail { offset, len: 8, .. }] if *offset == len - 68)
    );
    drop(w);
    let seqs: Vec<u64> = read_all(&*storage, S)
        .expect("read")
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(
        seqs, kept,
        "every record before the torn footer is read, nothing else"
    );
}

#[test]
fn garbage_after_a_seal_footer_in_the_last_segment_is_a_torn_tail() {
    let (_t, storage) = temp_root();
    let (config, segs) = three_segments(&storage);
    let kept = read_all(&*storage, S)
        .expect("read")
        .iter()
        .filter(|r| storage.describe_root().join(&r.file) != *segs.last().expect("last"))
        .count();
    std::fs::remove_file(segs.last().expect("last")).expect("remove");
    let sealed = &segs[segs.len() - 2];
    let len = std::fs::metadata(sealed).expect("stat").len();
    write_at(sealed, len + 10, b"\x07\x07");
    let (w, report) = open(&storage, &config).expect("open");
    assert!(matches!(
        report.repairs.as_slice(),
        [Repair::TruncateTornTail { .. }]
    ));
    assert_eq!(
        w.next_seq() as usize,
        kept + 1,
        "the records before the footer are kept"
    );
}

#[test]
fn a_second_tear_at_the_same_offset_is_quarantined_beside_the_first() {
    let (_t, storage) = temp_root();
    let config = exact_config();
    write_n(&storage, S, &config, 1, 5, 100);
    let recs = read_all(&*storage, S).expect("read");
    let seg = &segment_paths(&storage.describe_root(), S)[0];
    let at = recs[4].offset;
    set_len(seg, at + 30);
    let (w, first) = open(&storage, &config).expect("open");
    drop(w);
    write_n(&storage, S, &config, 50, 1, 100);
    set_len(seg, at + 40);
    let (w, second) = open(&storage, &config).expect("open");
    drop(w);
    let root = storage.describe_root();
    assert_ne!(
        first.quarantined, second.quarantined,
        "the first quarantine is kept"
    );
    let a = std::fs::read(root.join(&first.quarantined[0])).expect("first");
    let b = std::fs::read(root.join(&second.quarantined[0])).expect("second");
    assert_eq!((a.len(), b.len()), (30, 40));
    assert_ne!(a[..30], b[..30], "different bytes were torn");
    let report = makalog::verify::verify_root(&*storage).expect("verify");
    assert!(report.is_clean(), "{:?}", report.findings);
    assert_eq!(report.quarantined.len(), 2);
}
