//! Scanning one segment file: its header, then its frames with the format's cursor. Pure.

use crate::format::{ChainValue, FormatError, FrameCursor, SegmentHeader, Tail, HEADER_LEN};

/// The summary of one segment whose header decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentScan {
    pub header: SegmentHeader,
    /// Valid frames before the end.
    pub frame_count: u64,
    /// Sequence number of the last valid frame (first_seq − 1 when none).
    pub last_seq: u64,
    /// Chain value after the last valid frame.
    pub chain: ChainValue,
    /// Offset just past the last valid frame.
    pub data_end: u64,
    /// What follows.
    pub end: Tail,
}

/// What scanning a segment file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanResult {
    /// The header decoded; the body was walked.
    Scanned(SegmentScan),
    /// The header did not decode. `body_empty` is true when nothing but zeros follows where the
    /// header should end, so the file can hold no frame (a create torn before its first sync).
    BadHeader {
        error: FormatError,
        body_empty: bool,
    },
}

/// Scans a whole segment file.
pub fn scan_segment(bytes: &[u8]) -> ScanResult {
    let header = match SegmentHeader::decode(bytes) {
        Ok((h, _)) => h,
        Err(error) => {
            let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
            return ScanResult::BadHeader {
                error,
                body_empty: body.iter().all(|&b| b == 0),
            };
        }
    };
    let mut cursor = FrameCursor::for_segment(&header);
    while cursor.next_frame(bytes).is_some() {}
    let end = cursor.end().cloned().unwrap_or(Tail::Eof);
    ScanResult::Scanned(SegmentScan {
        frame_count: cursor.count(),
        last_seq: cursor.next_seq() - 1,
        chain: cursor.chain(),
        data_end: cursor.data_end(),
        end,
        header,
    })
}

/// Where a trusted prefix of a session's log ends (as its index sidecar records it): scanning
/// resumes there instead of reading the covered bytes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// Ordinal of the segment the trusted prefix ends in.
    pub ordinal: u64,
    /// Offset in that segment of the last trusted frame.
    pub last_frame_offset: u64,
    /// Offset just past it.
    pub data_end: u64,
    /// Sequence number of the last trusted frame (a resume point always names one).
    pub last_seq: u64,
    /// Chain value after it.
    pub chain: ChainValue,
}

impl Resume {
    /// A cursor over `bytes`, a segment's bytes from the last trusted frame on.
    pub fn cursor(&self, header: &SegmentHeader, bytes: &[u8]) -> FrameCursor {
        let at = (self.last_frame_offset, self.data_end);
        FrameCursor::resuming(header, self.last_seq, self.chain, at, bytes)
    }
}

/// Scans a segment from a resume point: `header` is the file's first [`HEADER_LEN`] bytes (or
/// fewer, if the file is shorter), `tail` its bytes from `resume.last_frame_offset` on: the
/// last trusted frame is read again for the durable sequence number it records.
pub fn scan_segment_tail(header: &[u8], tail: &[u8], resume: &Resume) -> ScanResult {
    let header = match SegmentHeader::decode(header) {
        Ok((h, _)) => h,
        Err(error) => {
            return ScanResult::BadHeader {
                error,
                body_empty: false,
            }
        }
    };
    let mut cursor = resume.cursor(&header, tail);
    while cursor.next_frame(tail).is_some() {}
    ScanResult::Scanned(SegmentScan {
        frame_count: cursor.count(),
        last_seq: cursor.next_seq() - 1,
        chain: cursor.chain(),
        data_end: cursor.data_end(),
        end: cursor.end().cloned().unwrap_or(Tail::Eof),
        header,
    })
}
