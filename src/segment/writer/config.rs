//! How a writer lays out its segments: their size, payload bound, zeros kept ahead and bytes
//! buffered.

use crate::commit::Prealloc;
use crate::format::DEFAULT_MAX_PAYLOAD;

/// How a writer lays out its segments.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Roll to a new segment before one would grow past this many bytes. Past
    /// [`HOLES_HELD`](crate::storage::data_end::HOLES_HELD) (the default is equal to it), a
    /// crash that lost more than that of unsynced writes inside a segment can leave more
    /// holes than a reader holds, and a reader then refuses the segment.
    pub segment_size: u64,
    /// The payload bound new segments declare (at most
    /// [`MAX_PAYLOAD_LIMIT`](crate::format::MAX_PAYLOAD_LIMIT)).
    pub max_payload: u32,
    /// The most bytes of zeros kept ahead of a segment's data (0: none). A new segment fills
    /// only its first block (4 KiB, or this step if smaller); each time the data reaches the
    /// zeros, the file is zero-filled to about twice its length, until this many are ahead.
    /// A clean close cuts them.
    pub prealloc_step: u64,
    /// Buffered bytes kept in memory before they are written out (without a sync).
    pub buffered_limit: usize,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            segment_size: 64 << 20,
            max_payload: DEFAULT_MAX_PAYLOAD,
            prealloc_step: 1 << 20,
            buffered_limit: 1 << 20,
        }
    }
}

/// The block a new segment's zero-filled space rounds up to.
const PREALLOC_BLOCK: u64 = 4 << 10;

impl WriterConfig {
    /// The most zeros a writer with this configuration leaves after data ending at `data_end`:
    /// what opening a segment after a crash may read beyond its data.
    pub fn max_zeros_ahead(&self, data_end: u64) -> u64 {
        self.prealloc().max_ahead(data_end)
    }

    pub(super) fn prealloc(&self) -> Prealloc {
        Prealloc {
            step: self.prealloc_step,
            block: self.prealloc_step.min(PREALLOC_BLOCK),
            cap: self.segment_size,
        }
    }
}
