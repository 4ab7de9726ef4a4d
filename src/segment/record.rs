//! A record as the reader hands it out: borrowed from the bytes it was read from, or owned,
//! with where it lives; and how `makalog dump` prints one.

use crate::format::{hex, ChainValue, RecordKind};
use std::path::PathBuf;

/// One record as read back, with where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Ordinal of the segment holding it.
    pub ordinal: u64,
    /// The format version of that segment.
    pub format_version: u16,
    pub seq: u64,
    pub kind: RecordKind,
    pub payload: Vec<u8>,
    /// The chain value stored with the record.
    pub chain: ChainValue,
    /// The segment file, relative to the root.
    pub file: PathBuf,
    /// Byte offset of the frame in that file.
    pub offset: u64,
    /// Byte offset just past the frame.
    pub end: u64,
    /// How far the log was durable when the frame was written (version 2 frames).
    pub durable_seq: Option<u64>,
}

impl Record {
    /// The record as `makalog dump` prints it: where it lives, its sequence number, kind and
    /// chain value, in a version 2 segment how far the log was durable when it was written
    /// (`durableSeq`), and the payload as JSON when it is JSON (as `payloadHex` otherwise).
    pub fn to_json(&self, session_id: &str) -> serde_json::Value {
        let mut v = serde_json::json!({
            "session": session_id,
            "file": self.file.display().to_string(),
            "offset": self.offset,
            "seq": self.seq,
            "kind": self.kind.name(),
            "chain": hex(&self.chain),
        });
        if let Some(d) = self.durable_seq {
            v["durableSeq"] = serde_json::json!(d);
        }
        match serde_json::from_slice::<serde_json::Value>(&self.payload) {
            Ok(p) => v["payload"] = p,
            Err(_) => v["payloadHex"] = serde_json::Value::String(hex(&self.payload)),
        }
        v
    }
}

/// A record borrowed from the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub ordinal: u64,
    /// The format version of the segment holding it.
    pub format_version: u16,
    pub seq: u64,
    pub kind: RecordKind,
    pub chain: ChainValue,
    pub file: &'a std::path::Path,
    /// Offset of the record's frame in its segment.
    pub offset: u64,
    /// Offset just past the frame.
    pub end: u64,
    /// How far the log was durable when the frame was written (version 2 frames).
    pub durable_seq: Option<u64>,
    pub payload: &'a [u8],
}

impl RecordView<'_> {
    /// An owned copy.
    pub fn to_record(&self) -> Record {
        Record {
            ordinal: self.ordinal,
            format_version: self.format_version,
            seq: self.seq,
            kind: self.kind,
            payload: self.payload.to_vec(),
            chain: self.chain,
            file: self.file.to_owned(),
            offset: self.offset,
            end: self.end,
            durable_seq: self.durable_seq,
        }
    }
}
