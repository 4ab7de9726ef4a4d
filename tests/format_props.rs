//! Property tests of the pure format: encoders and decoders are exact inverses, and decoding
//! arbitrary bytes never panics and never reads past what is present.

use makalog::format::{
    decode_frame, encode_frame, genesis_chain, next_chain, FrameDecode, FrameLayout, RecordKind,
    SealFooter, SegmentHeader, FORMAT_VERSION, MAX_PAYLOAD_LIMIT, OLDEST_FORMAT_VERSION,
};
use makalog::segment::scan_segment;
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = RecordKind> {
    prop::sample::select(RecordKind::ALL.to_vec())
}

/// A format version this build reads.
fn version() -> impl Strategy<Value = u16> {
    OLDEST_FORMAT_VERSION..=FORMAT_VERSION
}

fn layout(version: u16) -> FrameLayout {
    FrameLayout::for_version(version).expect("a version this build reads")
}

fn session_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,128}"
}

proptest! {
    #[test]
    fn header_round_trips(ordinal in any::<u64>(), first_seq in 1u64.., prev in any::<[u8; 32]>(),
                          max_payload in 1u32..=MAX_PAYLOAD_LIMIT, id in session_id(), version in version()) {
        let h = SegmentHeader { version, max_payload, ordinal, first_seq, prev_chain: prev, session_id: id };
        let bytes = h.encode();
        prop_assert_eq!(SegmentHeader::decode(&bytes), Ok((h, bytes.len())));
    }

    #[test]
    fn frame_round_trips(seq in 1u64.., k in kind(), payload in prop::collection::vec(any::<u8>(), 0..2048),
                         prev in any::<[u8; 32]>(), version in version(), durable in any::<u64>()) {
        // A kind is a frame's only in the versions that have it (`turn_rejection` from 3).
        prop_assume!(version >= 3 || k != RecordKind::TurnRejection);
        let (layout, durable) = (layout(version), durable % seq);
        let chain = next_chain(&prev, seq, k as u8, &payload);
        let mut out = Vec::new();
        encode_frame(&mut out, layout, seq, k, &payload, &chain, durable);
        prop_assert_eq!(out.len(), layout.overhead() + payload.len());
        match decode_frame::<RecordKind>(&out, layout, 4096) {
            Ok(FrameDecode::Frame(f, used)) => {
                prop_assert_eq!(used, out.len());
                prop_assert_eq!(f.seq, seq);
                prop_assert_eq!(f.kind, k);
                prop_assert_eq!(f.durable_seq, layout.records_durable().then_some(durable));
                prop_assert_eq!(f.payload, &payload[..]);
                prop_assert_eq!(f.chain, chain);
            }
            other => prop_assert!(false, "decoded {:?}", other),
        }
        // Every strict prefix is incomplete, never a different frame.
        for cut in 1..out.len() {
            prop_assert!(!matches!(decode_frame::<RecordKind>(&out[..cut], layout, 4096), Ok(FrameDecode::Frame(..))));
        }
        // Read with the other layout, the frame never decodes.
        let other = if layout == FrameLayout::V1 { FrameLayout::V2 } else { FrameLayout::V1 };
        prop_assert!(!matches!(decode_frame::<RecordKind>(&out, other, 4096), Ok(FrameDecode::Frame(..))));
    }

    /// A version 2 frame that says it was durable before it was written is a bad frame, even
    /// with its CRC recomputed.
    #[test]
    fn a_frame_recording_itself_durable_is_refused(seq in 1u64..u64::MAX, ahead in 0u64..1000) {
        let chain = next_chain(&[0; 32], seq, RecordKind::Message as u8, b"x");
        let mut out = Vec::new();
        encode_frame(&mut out, FrameLayout::V2, seq, RecordKind::Message, b"x", &chain, 0);
        out[17..25].copy_from_slice(&seq.saturating_add(ahead).to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&out[0..4]);
        h.update(&out[8..]);
        out[4..8].copy_from_slice(&h.finalize().to_le_bytes());
        match decode_frame::<RecordKind>(&out, FrameLayout::V2, 4096) {
            Err(e) => prop_assert_eq!(e.offset, 17),
            other => prop_assert!(false, "decoded {:?}", other),
        }
    }

    #[test]
    fn footer_round_trips(off in any::<u64>(), last in any::<u64>(), count in any::<u64>(), chain in any::<[u8; 32]>()) {
        let f = SealFooter { footer_offset: off, last_seq: last, frame_count: count, chain };
        let bytes = f.encode();
        prop_assert_eq!(SealFooter::decode(&bytes), Ok((f, bytes.len())));
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..1024), max in 0u32..=MAX_PAYLOAD_LIMIT) {
        let _ = decode_frame::<RecordKind>(&bytes, FrameLayout::V1, max);
        let _ = decode_frame::<RecordKind>(&bytes, FrameLayout::V2, max);
        let _ = SegmentHeader::decode(&bytes);
        let _ = SealFooter::decode(&bytes);
        let _ = scan_segment(&bytes);
    }

    /// A valid header, some valid frames, then arbitrary bytes: the scan reads exactly the
    /// valid frames, never a frame from the arbitrary bytes that does not continue the chain,
    /// and always reaches a verdict on what follows.
    #[test]
    fn a_valid_segment_followed_by_arbitrary_bytes_reads_its_frames_and_classifies_the_rest(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..8),
        garbage in prop::collection::vec(any::<u8>(), 0..600),
        version in version(),
    ) {
        let mut bytes = SegmentHeader {
            version, max_payload: 4096, ordinal: 0, first_seq: 1,
            prev_chain: genesis_chain("s"), session_id: "s".into(),
        }.encode().to_vec();
        let mut chain = genesis_chain("s");
        for (i, p) in payloads.iter().enumerate() {
            let seq = i as u64 + 1;
            chain = next_chain(&chain, seq, RecordKind::Message as u8, p);
            encode_frame(&mut bytes, layout(version), seq, RecordKind::Message, p, &chain, seq - 1);
        }
        let data_end = bytes.len() as u64;
        bytes.extend_from_slice(&garbage);
        match scan_segment(&bytes) {
            makalog::segment::ScanResult::Scanned(scan) => {
                prop_assert!(scan.frame_count >= payloads.len() as u64);
                if scan.frame_count == payloads.len() as u64 {
                    prop_assert_eq!(scan.data_end, data_end);
                    prop_assert_eq!(scan.chain, chain);
                } else {
                    // Arbitrary bytes that happen to hold the next frame of the chain.
                    prop_assert!(scan.data_end > data_end);
                }
                let zeros = garbage.iter().all(|&b| b == 0);
                match &scan.end {
                    makalog::format::Tail::Eof => prop_assert!(garbage.is_empty() || scan.data_end == bytes.len() as u64),
                    makalog::format::Tail::Zeros { .. } => prop_assert!(zeros || scan.frame_count > payloads.len() as u64),
                    _ => prop_assert!(!zeros),
                }
            }
            other => prop_assert!(false, "the header is valid: {:?}", other),
        }
    }

    #[test]
    fn a_declared_length_beyond_the_bytes_present_is_incomplete(len in 0u32..=MAX_PAYLOAD_LIMIT, rest in prop::collection::vec(any::<u8>(), 21..64), version in version()) {
        let layout = layout(version);
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend_from_slice(&rest);
        if (len as usize) + layout.overhead() > bytes.len() {
            prop_assert!(decode_frame::<RecordKind>(&bytes, layout, MAX_PAYLOAD_LIMIT).is_err());
        }
    }

    #[test]
    fn the_chain_binds_order_and_content(id in session_id(), a in prop::collection::vec(any::<u8>(), 0..64), b in prop::collection::vec(any::<u8>(), 0..64)) {
        let g = genesis_chain(&id);
        let ab = next_chain(&next_chain(&g, 1, 6, &a), 2, 6, &b);
        let ba = next_chain(&next_chain(&g, 1, 6, &b), 2, 6, &a);
        prop_assert_eq!(ab == ba, a == b);
    }
}

#[test]
fn genesis_differs_per_session() {
    assert_ne!(genesis_chain("a"), genesis_chain("b"));
}

fn header_at(version: u16, first_seq: u64, max_payload: u32) -> Vec<u8> {
    SegmentHeader {
        version,
        max_payload,
        ordinal: u64::MAX,
        first_seq,
        prev_chain: [0; 32],
        session_id: "s".into(),
    }
    .encode()
    .to_vec()
}

#[test]
fn sequence_numbers_at_the_end_of_their_range_are_damage_not_a_panic() {
    let mut bytes = header_at(FORMAT_VERSION, u64::MAX, 1024);
    let chain = next_chain(&[0; 32], u64::MAX, RecordKind::Message as u8, b"x");
    encode_frame(
        &mut bytes,
        FrameLayout::V2,
        u64::MAX,
        RecordKind::Message,
        b"x",
        &chain,
        0,
    );
    match scan_segment(&bytes) {
        makalog::segment::ScanResult::Scanned(scan) => {
            assert!(
                matches!(scan.end, makalog::format::Tail::Damaged { .. }),
                "{:?}",
                scan.end
            );
            assert_eq!(scan.frame_count, 0);
        }
        other => panic!("the header is valid: {other:?}"),
    }
}

#[test]
fn garbage_crafted_to_look_like_frame_lengths_is_classified_without_a_crc_at_every_offset() {
    // Every fourth byte starts a "frame" of about 4 MiB: checking each CRC would take hours.
    let mut bytes = header_at(FORMAT_VERSION, 1, 16 << 20);
    for _ in 0..(1 << 18) {
        bytes.extend_from_slice(&[0x00, 0x00, 0x3f, 0x00]);
    }
    bytes[256] = 1;
    match scan_segment(&bytes) {
        makalog::segment::ScanResult::Scanned(scan) => {
            assert!(
                matches!(scan.end, makalog::format::Tail::Torn { .. }),
                "{:?}",
                scan.end
            );
        }
        other => panic!("the header is valid: {other:?}"),
    }
}

/// A segment with one record, then `garbage` bytes of fake frame headers, one every 17 bytes,
/// each with the next sequence number, a valid kind and a length that fits the bytes left: each
/// candidate passes every check but its CRC, and its CRC covers the rest of the segment.
fn fake_headers_after_one_record(version: u16, garbage: usize) -> Vec<u8> {
    let layout = layout(version);
    let mut bytes = header_at(version, 1, MAX_PAYLOAD_LIMIT);
    let chain = next_chain(&genesis_chain("s"), 1, RecordKind::Message as u8, b"x");
    encode_frame(&mut bytes, layout, 1, RecordKind::Message, b"x", &chain, 0);
    let start = bytes.len();
    let end = start + garbage;
    while bytes.len() + 17 <= end {
        let left = end - bytes.len();
        let len = (left.saturating_sub(layout.overhead())) as u32;
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.push(RecordKind::Message as u8);
    }
    bytes.resize(end, 0x5a);
    bytes
}

#[test]
fn fake_frame_headers_after_damage_cost_a_search_linear_in_their_bytes() {
    for (version, garbage) in [(1, 64 << 10), (1, 2 << 20), (2, 64 << 10), (2, 2 << 20)] {
        let overhead = layout(version).overhead() as u64;
        let mut bytes = fake_headers_after_one_record(version, garbage);
        // The segment's header is for session "s" at ordinal u64::MAX; its chain starts at 0.
        let mut h = SegmentHeader::decode(&bytes).expect("header").0;
        h.prev_chain = genesis_chain("s");
        bytes[..256].copy_from_slice(&h.encode());
        match scan_segment(&bytes) {
            makalog::segment::ScanResult::Scanned(scan) => {
                assert_eq!(scan.frame_count, 1, "the record before the garbage is read");
                match &scan.end {
                    makalog::format::Tail::Damaged { offset, what } => {
                        assert_eq!(*offset, 256 + overhead + 1);
                        assert!(what.contains("gave up"), "{what}");
                    }
                    other => panic!("{garbage} bytes of fake headers: {other:?}"),
                }
            }
            other => panic!("the header is valid: {other:?}"),
        }
    }
}
