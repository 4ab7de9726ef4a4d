//! Frames queued for one write. They are encoded when appended (sequence number, kind, payload,
//! chain) and stamped when written: only the flush that writes them knows how far the log is
//! durable, which version 2 frames record, and the CRC covers that too.

use super::frame::{encode_unstamped, stamp_frame};
use super::{ChainValue, FrameKind, FrameLayout};

/// Encoded frames (and any other bytes of the file, such as a seal footer) in file order.
#[derive(Debug)]
pub(crate) struct FrameBatch {
    layout: FrameLayout,
    bytes: Vec<u8>,
    /// Where each frame starts in `bytes`.
    frames: Vec<usize>,
}

impl FrameBatch {
    pub fn new(layout: FrameLayout) -> Self {
        FrameBatch {
            layout,
            bytes: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// Appends a frame, to be stamped by [`FrameBatch::stamped`].
    pub fn push<K: FrameKind>(&mut self, seq: u64, kind: K, payload: &[u8], chain: &ChainValue) {
        self.frames.push(self.bytes.len());
        encode_unstamped(&mut self.bytes, self.layout, seq, kind, payload, chain);
    }

    /// Appends bytes that are not a frame.
    pub fn extend_raw(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// The bytes to write, every frame stamped with `durable_seq`: the highest sequence
    /// number of the log that is durable now, as these bytes are written.
    pub fn stamped(mut self, durable_seq: u64) -> Vec<u8> {
        for &at in &self.frames {
            stamp_frame(&mut self.bytes[at..], self.layout, durable_seq);
        }
        self.bytes
    }
}
