//! The segment writer and reader resumed after a trusted point (as a sidecar vouches for it):
//! only what follows is read, the answer agrees with a full scan, and a point off the chain or a
//! frame after it whose durable sequence number falls is refused.

mod support;

use makalog::format::RecordKind;
use makalog::segment::{Durability, Resume, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::Storage;
use makalog::Error;
use std::sync::Arc;
use support::*;

const S: &str = "session-w";

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
