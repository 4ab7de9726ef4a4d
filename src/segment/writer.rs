//! The segment writer of one session: durable and buffered appends, group commit, roll and seal.
//!
//! Appends go through [`GroupCommit`]: concurrent appends to one session share one write and one
//! `fdatasync`. A segment rolls before it would grow past the configured size: the old one gets
//! its seal footer and is cut and synced, the new one is created by the write protocol, all in
//! the flush that carries the frames, so rolls need no lock of their own.

mod config;
mod durable_point;
mod open;
mod sink;

pub use config::WriterConfig;
pub(crate) use durable_point::refuse_losing_durable;
use sink::{Chunk, Roll, SegmentSink};

use super::layout::segment_file_name;
use crate::commit::{GroupCommit, Pending};
use crate::error::{Error, Result};
use crate::format::{
    next_chain, ChainValue, FrameBatch, FrameKind, FrameLayout, RecordKind, SealFooter,
    SegmentHeader, FOOTER_LEN, HEADER_LEN,
};
use crate::root::LogHold;
use std::path::PathBuf;

/// Whether an append waits for `fdatasync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Acknowledged only once its bytes are synced.
    Durable,
    /// Acknowledged at once; durable with the session's next durable write or sync.
    Buffered,
}

/// What an acknowledged append was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The record's sequence number in its session.
    pub seq: u64,
    /// The chain value after the record.
    pub chain: ChainValue,
    /// Ordinal of the segment that holds it.
    pub ordinal: u64,
    /// Offset of its frame in that segment.
    pub offset: u64,
    /// Offset just past its frame.
    pub end: u64,
    /// The format version of that segment.
    pub format_version: u16,
}

/// The one writer of a session's segments. It holds a share of the owner's lease.
pub struct SegmentWriter {
    commit: GroupCommit<Head, SegmentSink>,
    config: WriterConfig,
    session_id: String,
    dir: PathBuf,
    /// The format version of the root: what new segment headers say.
    version: u16,
    _hold: LogHold,
}

/// Where the session's log stands, counting queued frames.
struct Head {
    chain: ChainValue,
    ordinal: u64,
    frames: u64,
    /// Length of the current segment counting queued bytes.
    len: u64,
    /// The payload bound the current segment's header declares.
    max_payload: u32,
    /// How the current segment's frames are laid out.
    layout: FrameLayout,
}

impl SegmentWriter {
    /// Appends one record. A durable append returns once its bytes are synced; a buffered one
    /// returns at once. Payloads above the configured bound are refused with nothing written.
    pub fn append(
        &self,
        kind: RecordKind,
        payload: &[u8],
        durability: Durability,
    ) -> Result<Appended> {
        let ack = self.enqueue(kind, payload)?;
        match durability {
            Durability::Durable => self.wait_durable(ack.seq)?,
            Durability::Buffered => self.spill()?,
        }
        Ok(ack)
    }

    /// Writes the queue out, without a sync, once it holds `buffered_limit` bytes: what keeps
    /// buffered records from piling up in memory. Callers that [`SegmentWriter::enqueue`]
    /// buffered records call it after.
    pub fn spill(&self) -> Result<()> {
        let st = self.commit.lock()?;
        drop(self.commit.spill(st, self.config.buffered_limit)?);
        Ok(())
    }

    /// Queues one record without waiting: it is written with the next flush and durable once
    /// [`SegmentWriter::wait_durable`] for its sequence number returns. Callers that must order
    /// records with state of their own enqueue under their own lock and wait outside it.
    pub fn enqueue(&self, kind: RecordKind, payload: &[u8]) -> Result<Appended> {
        if payload.len() > self.config.max_payload as usize {
            return Err(Error::InvalidInput(format!(
                "record of {} bytes exceeds the bound of {} bytes",
                payload.len(),
                self.config.max_payload
            )));
        }
        let mut st = self.commit.lock()?;
        if kind.first_version() > st.log.layout.version() {
            return Err(Error::InvalidInput(format!(
                "a {} record needs format version {}; this session's segment is version {}",
                kind.name(),
                kind.first_version(),
                st.log.layout.version()
            )));
        }
        let full = st.log.len + self.frame_len(st.log.layout, payload) + FOOTER_LEN as u64
            > self.config.segment_size;
        let too_big = payload.len() > st.log.max_payload as usize;
        if st.log.frames > 0 && (full || too_big) {
            self.roll(&mut st);
        } else if too_big {
            self.raise_bound(&mut st);
        }
        let layout = st.log.layout;
        let frame_len = self.frame_len(layout, payload);
        let seq = st.next_seq();
        if seq == u64::MAX {
            return Err(Error::InvalidInput(
                "the session has used every sequence number".into(),
            ));
        }
        let chain = next_chain(&st.log.chain, seq, kind as u8, payload);
        current_chunk(&mut st.chunks, layout)
            .bytes
            .push(seq, kind, payload, &chain);
        st.queued(frame_len as usize);
        let ack = Appended {
            seq,
            chain,
            ordinal: st.log.ordinal,
            offset: st.log.len,
            end: st.log.len + frame_len,
            format_version: layout.version(),
        };
        st.log.chain = chain;
        st.log.frames += 1;
        st.log.len += frame_len;
        debug_assert!(
            st.log.frames == 1 || st.log.len + FOOTER_LEN as u64 <= self.config.segment_size,
            "a segment rolls before its frames and footer pass the size, unless one frame does"
        );
        Ok(ack)
    }

    fn frame_len(&self, layout: FrameLayout, payload: &[u8]) -> u64 {
        (layout.overhead() + payload.len()) as u64
    }

    /// Waits until record `seq` is durable, leading a flush if none is running.
    pub fn wait_durable(&self, seq: u64) -> Result<()> {
        let st = self.commit.lock()?;
        self.commit.wait_durable(st, seq).map(|_| ())
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> Result<()> {
        self.commit.sync_all()
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.commit.next_seq()
    }

    /// False once a write or sync failed: the writer acknowledges nothing more, and the
    /// session's next open (in this process too) writes back and syncs what it had written.
    pub fn is_healthy(&self) -> bool {
        self.commit.is_healthy()
    }

    /// The highest sequence number known durable.
    pub fn durable_seq(&self) -> u64 {
        self.commit.durable_seq()
    }

    /// Syncs everything pending, cuts the zeros after the data and makes that durable, and
    /// closes the writer, reporting any failure: a cleanly closed session holds no preallocated
    /// space.
    pub fn close(self) -> Result<()> {
        self.finish()
    }

    fn finish(&self) -> Result<()> {
        self.commit.finish(SegmentSink::cut)
    }

    /// Gives the current segment, which holds no record, this writer's payload bound: its header
    /// is rewritten in place before the next record (or, if the segment is still to be created,
    /// created with it). Sealing an empty segment would name the next one as it is named.
    fn raise_bound(&self, st: &mut Pending<Head, Chunk>) {
        debug_assert_eq!(st.log.frames, 0);
        st.log.max_payload = self.config.max_payload;
        if let Some(roll) = st.chunks.last_mut().and_then(|c| c.roll.as_mut()) {
            roll.header.max_payload = self.config.max_payload;
            return;
        }
        let header = self.header(st.log.ordinal, st.next_seq(), st.log.chain);
        st.log.layout = header.layout();
        st.chunks.push(Chunk {
            rewrite: Some(header),
            bytes: FrameBatch::new(st.log.layout),
            roll: None,
        });
    }

    /// The header of a new segment of this writer.
    fn header(&self, ordinal: u64, first_seq: u64, prev_chain: ChainValue) -> SegmentHeader {
        SegmentHeader {
            version: self.version,
            max_payload: self.config.max_payload,
            ordinal,
            first_seq,
            prev_chain,
            session_id: self.session_id.clone(),
        }
    }

    /// Queues the seal footer of the current segment and the header of the next.
    fn roll(&self, st: &mut Pending<Head, Chunk>) {
        let next_seq = st.next_seq();
        let footer = SealFooter {
            footer_offset: st.log.len,
            last_seq: next_seq - 1,
            frame_count: st.log.frames,
            chain: st.log.chain,
        };
        let header = self.header(st.log.ordinal.saturating_add(1), next_seq, st.log.chain);
        let layout = header.layout();
        let chunk = current_chunk(&mut st.chunks, st.log.layout);
        chunk.bytes.extend_raw(&footer.encode());
        chunk.roll = Some(Roll {
            path: self.dir.join(segment_file_name(next_seq)),
            header,
        });
        st.log.ordinal = st.log.ordinal.saturating_add(1);
        st.log.frames = 0;
        st.log.len = HEADER_LEN as u64;
        st.log.max_payload = self.config.max_payload;
        st.log.layout = layout;
    }
}

impl Drop for SegmentWriter {
    /// A dropped writer closes as [`SegmentWriter::close`] does (syncing what is queued and
    /// cutting the zeros), unless it failed; call `close` to see whether that worked.
    fn drop(&mut self) {
        if self.commit.is_healthy() {
            let _ = self.finish();
        }
    }
}

/// The chunk new frames go into: the last one, unless it ends with a roll. `layout` is the
/// current segment's.
fn current_chunk(chunks: &mut Vec<Chunk>, layout: FrameLayout) -> &mut Chunk {
    if chunks.last().is_none_or(|c| c.roll.is_some()) {
        chunks.push(Chunk {
            rewrite: None,
            bytes: FrameBatch::new(layout),
            roll: None,
        });
    }
    let last = chunks.len() - 1;
    &mut chunks[last]
}
