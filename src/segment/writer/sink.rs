//! How a session's queued frames reach its files: the flush leader writes each chunk (a header
//! rewritten in place first, when the payload bound grew), seals and rolls where a chunk ends
//! with a footer, syncs when asked, and marks the log failed when a write or sync fails.

use super::WriterConfig;
use crate::commit::{AppendFile, Sink};
use crate::error::Result;
use crate::format::{FrameBatch, SegmentHeader};
use crate::root::FailureMark;
use crate::storage::Storage;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes for one segment file, and the segment that follows if they end with a seal footer.
pub(super) struct Chunk {
    /// A new header for the segment, written (and synced) before `bytes`: an empty segment
    /// whose payload bound is too small for the next record gets a larger one in place.
    pub rewrite: Option<SegmentHeader>,
    pub bytes: FrameBatch,
    pub roll: Option<Roll>,
}

pub(super) struct Roll {
    pub path: PathBuf,
    pub header: SegmentHeader,
}

/// The segment being appended to; only the flush leader touches it.
pub(super) struct SegmentSink {
    pub storage: Arc<dyn Storage>,
    pub file: AppendFile,
    pub config: WriterConfig,
    /// Where a failed write or sync is told, so the session's next open writes it again.
    pub failures: FailureMark,
}

impl SegmentSink {
    fn write_chunks(&mut self, chunks: Vec<Chunk>, sync: bool, durable_seq: u64) -> Result<()> {
        for chunk in chunks {
            if let Some(header) = &chunk.rewrite {
                self.file.rewrite_header(&header.encode())?;
            }
            let bytes = chunk.bytes.stamped(durable_seq);
            let Some(roll) = chunk.roll else {
                self.file.append(&bytes)?;
                continue;
            };
            self.file.finish(&bytes)?;
            self.file = AppendFile::create(
                &*self.storage,
                &roll.path,
                &roll.header.encode(),
                self.config.prealloc(),
            )?;
        }
        if sync {
            self.file.sync()?;
        }
        Ok(())
    }

    /// Cuts the zeros after the data and syncs (a clean close).
    pub fn cut(&mut self) -> Result<()> {
        let result = self.file.cut();
        self.failed_if(result)
    }

    fn failed_if(&self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            self.failures
                .failed_in(self.file.path(), self.file.synced_end());
        }
        result
    }
}

impl Sink for SegmentSink {
    type Chunk = Chunk;

    fn write_out(&mut self, chunks: Vec<Chunk>, sync: bool, durable_seq: u64) -> Result<()> {
        let result = self.write_chunks(chunks, sync, durable_seq);
        self.failed_if(result)
    }

    fn current_path(&self) -> PathBuf {
        self.file.path().to_owned()
    }
}
