//! Targets for the decoders of the binary files: segment header, frame stream and recovery
//! scan, seal footer, claims log, index sidecar, root marker and the open-runs file.

use crate::sim_root::with_files;
use makalog::claims::{replay_claims, CLAIMS_FILE};
use makalog::format::{FrameCursor, SealFooter, SegmentHeader, Tail, FOOTER_LEN, HEADER_LEN};
use makalog::index::{
    decode_sidecar_header, decode_sidecar_state, encode_sidecar, id_entries, section,
};
use makalog::root::{read_marker, MARKER_FILE};
use makalog::runtime::{read_open_runs, Listing, OPEN_RUNS_FILE, SLOT_LEN};
use makalog::segment::{scan_segment, scan_segment_tail, Resume, ScanResult, SegmentScan};
use std::path::PathBuf;

/// A segment header that decodes re-encodes to the bytes it came from.
pub fn segment_header(data: &[u8]) {
    if let Ok((header, len)) = SegmentHeader::decode(data) {
        assert_eq!(len, HEADER_LEN);
        assert_eq!(
            &header.encode()[..],
            &data[..HEADER_LEN],
            "re-encoded header"
        );
    }
}

/// A seal footer that decodes re-encodes to the bytes it came from.
pub fn seal_footer(data: &[u8]) {
    if let Ok((footer, len)) = SealFooter::decode(data) {
        assert_eq!(len, FOOTER_LEN);
        assert_eq!(
            &footer.encode()[..],
            &data[..FOOTER_LEN],
            "re-encoded footer"
        );
    }
}

/// A segment file scanned whole, as recovery and `verify` scan it, agrees with a scan that
/// resumes after any of its frames (as a session whose sidecar vouches for a prefix scans),
/// and its valid prefix alone scans to the same frames with nothing after them.
pub fn frame_stream(data: &[u8]) {
    let ScanResult::Scanned(whole) = scan_segment(data) else {
        return;
    };
    assert!(
        whole.data_end as usize <= data.len(),
        "valid prefix inside the file"
    );
    let mut cursor = FrameCursor::for_segment(&whole.header);
    let mut points = Vec::new();
    while let Some((offset, _)) = cursor.next_frame(data) {
        points.push(Resume {
            ordinal: whole.header.ordinal,
            last_frame_offset: offset,
            data_end: cursor.data_end(),
            last_seq: cursor.next_seq() - 1,
            chain: cursor.chain(),
        });
    }
    assert_eq!(points.len() as u64, whole.frame_count, "frames counted");
    let pick = data.last().map_or(0, |&b| usize::from(b)) % (points.len() + 1);
    if let Some(at) = points.get(pick) {
        let from = at.last_frame_offset as usize;
        let resumed = scan_segment_tail(&data[..HEADER_LEN], &data[from..], at);
        let ScanResult::Scanned(resumed) = resumed else {
            panic!("the header decoded once and not when resuming");
        };
        assert_eq!(ends(&resumed), ends(&whole), "resumed after frame {pick}");
    }
    let ScanResult::Scanned(prefix) = scan_segment(&data[..whole.data_end as usize]) else {
        panic!("the valid prefix lost its header");
    };
    assert_eq!(
        prefix.frame_count, whole.frame_count,
        "frames of the valid prefix"
    );
    assert_eq!(
        (prefix.last_seq, prefix.chain),
        (whole.last_seq, whole.chain)
    );
    assert_eq!(prefix.end, Tail::Eof, "nothing after the valid prefix");
}

fn ends(s: &SegmentScan) -> (u64, [u8; 32], u64, &Tail) {
    (s.last_seq, s.chain, s.data_end, &s.end)
}

/// The claims log replayed, with the root id its own header names, and its valid prefix
/// replayed alone, reach the same records and head.
pub fn claims_log(data: &[u8]) {
    let mut root_id = [0u8; 32];
    if let Some(id) = data.get(16..48) {
        root_id.copy_from_slice(id);
    }
    let whole = replay_claims(data, &root_id);
    assert!(
        whole.data_end as usize <= data.len(),
        "valid prefix inside the file"
    );
    if whole.data_end == 0 {
        return;
    }
    let prefix = replay_claims(&data[..whole.data_end as usize], &root_id);
    assert_eq!(
        prefix.record_count, whole.record_count,
        "records of the valid prefix"
    );
    assert_eq!(prefix.head, whole.head, "head of the valid prefix");
    assert_eq!(prefix.tables, whole.tables, "tables of the valid prefix");
    // The file name the problems cite is the log's.
    for p in &whole.problems {
        let said = p.describe();
        assert!(said.contains(CLAIMS_FILE), "problem names the file: {said}");
    }
}

/// A sidecar whose header and sections decode is encoded again, and the encoding decodes to
/// the same view.
pub fn sidecar(data: &[u8]) {
    let Ok(header) = decode_sidecar_header(data) else {
        return;
    };
    for s in &header.sections {
        assert!(
            s.offset + s.len <= data.len() as u64,
            "section inside the file"
        );
    }
    let ids = section(data, &header, 2).and_then(id_entries);
    let Ok(view) = decode_sidecar_state(data, &header) else {
        return;
    };
    let Ok(ids) = ids else { return };
    let Ok(again) = encode_sidecar(&view, &ids) else {
        return;
    };
    let header2 = decode_sidecar_header(&again).expect("an encoded sidecar's header decodes");
    let view2 = decode_sidecar_state(&again, &header2).expect("an encoded sidecar decodes");
    assert_eq!(format!("{view:?}"), format!("{view2:?}"), "view re-encoded");
    let ids2 = section(&again, &header2, 2)
        .and_then(id_entries)
        .expect("ids decode");
    assert_eq!(ids.len(), ids2.len(), "ids re-encoded");
}

/// A root marker read from a root holding these bytes as its marker: read or refused, and
/// nothing written.
pub fn root_marker(data: &[u8]) {
    let storage = with_files(&[(PathBuf::from(MARKER_FILE), data)]);
    let before = storage.live_files();
    if let Ok(marker) = read_marker(&*storage) {
        let _ = marker.root_id_bytes();
    }
    assert_eq!(storage.live_files(), before, "reading the marker wrote");
}

/// The open-runs file read from these bytes: at most one run a slot, nothing written.
pub fn open_runs(data: &[u8]) {
    let storage = with_files(&[(PathBuf::from(OPEN_RUNS_FILE), data)]);
    let before = storage.live_files();
    match read_open_runs(&*storage) {
        Ok(Listing::Open(runs)) => assert!(runs.len() <= data.len().div_ceil(SLOT_LEN)),
        Ok(Listing::Damaged { offset }) => assert!(offset < data.len() as u64),
        Ok(Listing::Missing) => panic!("the file is there"),
        Err(_) => {}
    }
    assert_eq!(
        storage.live_files(),
        before,
        "reading the open-runs file wrote"
    );
}
