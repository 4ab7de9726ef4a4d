//! The segment writer of one session: durable and buffered appends, group commit, roll and seal.
//!
//! Appenders encode their frame under a short lock and then either return (buffered) or wait
//! until a sync covers their sequence number (durable). Whoever finds no flush in progress
//! becomes the leader: it takes every pending frame, writes them in one call and syncs once,
//! so concurrent appends to one session share one write and one `fdatasync`. Segments are
//! preallocated with zeros ahead of use, so most syncs change no file size and cost less.

use super::check::check_session;
use super::layout::{segment_file_name, session_dir, SESSIONS_DIR};
use super::load::scan_session_files;
use super::recovery::{apply, plan, RecoveryReport};
use super::scan::{ScanResult, SegmentEnd};
use crate::error::{Error, Result};
use crate::format::{
    encode_frame, next_chain, validate_session_id, ChainValue, RecordKind, SealFooter,
    SegmentHeader, DEFAULT_MAX_PAYLOAD, FOOTER_LEN, FORMAT_VERSION, FRAME_OVERHEAD, HEADER_LEN,
    MAX_PAYLOAD_LIMIT,
};
use crate::storage::{EntryKind, OpenMode, Storage, StorageFile};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// How a writer lays out its segments.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Roll to a new segment before one would grow past this many bytes.
    pub segment_size: u64,
    /// The payload bound new segments declare (at most [`MAX_PAYLOAD_LIMIT`]).
    pub max_payload: u32,
    /// How far ahead of the data a segment is filled with zeros.
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

/// Whether an append waits for `fdatasync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Acknowledged only once its bytes are synced.
    Durable,
    /// Acknowledged at once; durable with the session's next durable write or flush.
    Buffered,
}

/// What an acknowledged append was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The record's sequence number in its session.
    pub seq: u64,
    /// The chain value after the record.
    pub chain: ChainValue,
}

/// The one writer of a session's segments.
pub struct SegmentWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    config: WriterConfig,
    state: Mutex<State>,
    flushed: Condvar,
    io: Mutex<Io>,
}

/// Logical state: what has been assigned, what is pending, what is durable.
struct State {
    next_seq: u64,
    chain: ChainValue,
    seg_ordinal: u64,
    seg_frames: u64,
    /// Length of the current segment counting pending bytes.
    seg_len: u64,
    pending: Vec<Chunk>,
    pending_bytes: usize,
    flushing: bool,
    synced_seq: u64,
    poisoned: Option<PathBuf>,
}

/// Bytes for one segment file, and the roll that follows them if they end with a seal footer.
struct Chunk {
    bytes: Vec<u8>,
    roll: Option<Roll>,
}

struct Roll {
    path: PathBuf,
    header: SegmentHeader,
}

/// The file being appended to; only the leader touches it.
struct Io {
    file: Box<dyn StorageFile>,
    path: PathBuf,
    pos: u64,
    allocated: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SegmentWriter {
    /// Opens a session for writing: creates it if absent, otherwise recovers it by the decision
    /// table (truncating a torn tail, removing a torn create, or refusing with nothing written).
    pub fn open(
        storage: Arc<dyn Storage>,
        session_id: &str,
        config: WriterConfig,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        validate_session_id(session_id).map_err(Error::InvalidInput)?;
        if config.max_payload == 0 || config.max_payload > MAX_PAYLOAD_LIMIT {
            return Err(Error::InvalidInput(format!(
                "max_payload must be 1..={MAX_PAYLOAD_LIMIT}"
            )));
        }
        let dir = session_dir(session_id);
        ensure_dir(&*storage, Path::new(SESSIONS_DIR), Path::new(""))?;
        ensure_dir(&*storage, &dir, Path::new(SESSIONS_DIR))?;

        let (_, scanned) = scan_session_files(&*storage, session_id)?;
        let check = check_session(session_id, &scanned);
        let repairs = plan(&check)?;
        let report = apply(&*storage, &dir, repairs)?;
        let (head_seq, head_chain) = check.head;

        let last = scanned.iter().rev().find_map(|s| match &s.result {
            ScanResult::Scanned(scan) => Some((s.file.path.clone(), scan.clone())),
            ScanResult::BadHeader { .. } => None,
        });
        let (io, ordinal, frames) = match last {
            Some((path, scan)) if !matches!(scan.end, SegmentEnd::Sealed { .. }) => {
                let file = storage
                    .open(&path, OpenMode::ReadWrite)
                    .map_err(|e| Error::io(&path, "open", e))?;
                let allocated = file.size().map_err(|e| Error::io(&path, "stat", e))?;
                let io = Io {
                    file,
                    path,
                    pos: scan.data_end,
                    allocated,
                };
                (io, scan.header.ordinal, scan.frame_count)
            }
            sealed_or_none => {
                let ordinal = sealed_or_none.map_or(0, |(_, s)| s.header.ordinal + 1);
                let header = SegmentHeader {
                    version: FORMAT_VERSION,
                    max_payload: config.max_payload,
                    ordinal,
                    first_seq: head_seq + 1,
                    prev_chain: head_chain,
                    session_id: session_id.to_owned(),
                };
                let path = dir.join(segment_file_name(header.first_seq));
                let io = create_segment(&*storage, &dir, &path, &header, &config)?;
                (io, ordinal, 0)
            }
        };
        let state = State {
            next_seq: head_seq + 1,
            chain: head_chain,
            seg_ordinal: ordinal,
            seg_frames: frames,
            seg_len: io.pos,
            pending: Vec::new(),
            pending_bytes: 0,
            flushing: false,
            synced_seq: head_seq,
            poisoned: None,
        };
        Ok((
            SegmentWriter {
                storage,
                dir,
                config,
                state: Mutex::new(state),
                flushed: Condvar::new(),
                io: Mutex::new(io),
            },
            report,
        ))
    }

    /// Appends one record. A durable append returns once its bytes are synced; a buffered one
    /// returns at once. Payloads above the segment bound are refused with nothing written.
    pub fn append(
        &self,
        kind: RecordKind,
        payload: &[u8],
        durability: Durability,
    ) -> Result<Appended> {
        if payload.len() > self.config.max_payload as usize {
            return Err(Error::InvalidInput(format!(
                "record of {} bytes exceeds the bound of {} bytes",
                payload.len(),
                self.config.max_payload
            )));
        }
        let mut st = lock(&self.state);
        if let Some(file) = &st.poisoned {
            return Err(Error::Poisoned { file: file.clone() });
        }
        let frame_len = (FRAME_OVERHEAD + payload.len()) as u64;
        if st.seg_frames > 0
            && st.seg_len + frame_len + FOOTER_LEN as u64 > self.config.segment_size
        {
            self.roll(&mut st);
        }
        let seq = st.next_seq;
        let chain = next_chain(&st.chain, seq, kind as u8, payload);
        let chunk = current_chunk(&mut st.pending);
        encode_frame(&mut chunk.bytes, seq, kind, payload, &chain);
        st.next_seq += 1;
        st.chain = chain;
        st.seg_frames += 1;
        st.seg_len += frame_len;
        st.pending_bytes += frame_len as usize;
        let ack = Appended { seq, chain };
        match durability {
            Durability::Durable => self.wait_synced(st, seq).map(|_| ack),
            Durability::Buffered => {
                if st.pending_bytes >= self.config.buffered_limit && !st.flushing {
                    let (_st, result) = self.lead(st, false);
                    result?;
                }
                Ok(ack)
            }
        }
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> Result<()> {
        let st = lock(&self.state);
        let target = st.next_seq - 1;
        self.wait_synced(st, target)
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        lock(&self.state).next_seq
    }

    /// The chain value after the last record appended (durable or not).
    pub fn head_chain(&self) -> ChainValue {
        lock(&self.state).chain
    }

    /// Syncs everything pending and closes the writer, reporting any failure.
    pub fn close(self) -> Result<()> {
        self.sync()
    }

    /// Seals the current segment with a footer and starts the next one, all in pending bytes.
    fn roll(&self, st: &mut State) {
        let footer = SealFooter {
            footer_offset: st.seg_len,
            last_seq: st.next_seq - 1,
            frame_count: st.seg_frames,
            chain: st.chain,
        };
        let header = SegmentHeader {
            version: FORMAT_VERSION,
            max_payload: self.config.max_payload,
            ordinal: st.seg_ordinal + 1,
            first_seq: st.next_seq,
            prev_chain: st.chain,
            session_id: self.session_id(),
        };
        let chunk = current_chunk(&mut st.pending);
        chunk.bytes.extend_from_slice(&footer.encode());
        chunk.roll = Some(Roll {
            path: self.dir.join(segment_file_name(header.first_seq)),
            header,
        });
        st.pending_bytes += FOOTER_LEN;
        st.seg_ordinal += 1;
        st.seg_frames = 0;
        st.seg_len = HEADER_LEN as u64;
    }

    fn session_id(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Waits until `seq` is durable, leading a flush whenever none is in progress.
    fn wait_synced<'a>(&'a self, mut st: MutexGuard<'a, State>, seq: u64) -> Result<()> {
        loop {
            if let Some(file) = &st.poisoned {
                return Err(Error::Poisoned { file: file.clone() });
            }
            if st.synced_seq >= seq {
                return Ok(());
            }
            if st.flushing {
                st = self.flushed.wait(st).unwrap_or_else(|e| e.into_inner());
            } else {
                let (next, result) = self.lead(st, true);
                result?;
                st = next;
            }
        }
    }

    /// Takes every pending chunk, writes it (and syncs when `sync`), and publishes the outcome.
    /// An error poisons the writer: nothing later is acknowledged.
    fn lead<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        sync: bool,
    ) -> (MutexGuard<'a, State>, Result<()>) {
        st.flushing = true;
        let chunks = std::mem::take(&mut st.pending);
        st.pending_bytes = 0;
        let target = st.next_seq - 1;
        drop(st);
        let result = {
            let mut io = lock(&self.io);
            self.write_out(&mut io, chunks, sync)
                .map_err(|e| (io.path.clone(), e))
        };
        let mut st = lock(&self.state);
        st.flushing = false;
        let result = match result {
            Ok(()) => {
                if sync {
                    st.synced_seq = st.synced_seq.max(target);
                }
                Ok(())
            }
            Err((path, e)) => {
                st.poisoned = Some(path);
                Err(e)
            }
        };
        self.flushed.notify_all();
        (st, result)
    }

    fn write_out(&self, io: &mut Io, chunks: Vec<Chunk>, sync: bool) -> Result<()> {
        for chunk in chunks {
            if !chunk.bytes.is_empty() {
                let end = io.pos + chunk.bytes.len() as u64;
                io.file
                    .write_all_at(&chunk.bytes, io.pos)
                    .map_err(|e| Error::io(&io.path, "write", e))?;
                io.pos = end;
                if end > io.allocated {
                    io.allocated = if chunk.bytes.len() < ZERO_FILL_BELOW {
                        let target = (end + self.config.prealloc_step)
                            .min(self.config.segment_size.max(end));
                        zero_fill(&*io.file, &io.path, end, target)?;
                        target.max(end)
                    } else {
                        end
                    };
                }
            }
            if let Some(roll) = chunk.roll {
                io.file
                    .set_len(io.pos)
                    .map_err(|e| Error::io(&io.path, "truncate", e))?;
                io.file
                    .sync_data()
                    .map_err(|e| Error::io(&io.path, "fdatasync", e))?;
                *io = create_segment(
                    &*self.storage,
                    &self.dir,
                    &roll.path,
                    &roll.header,
                    &self.config,
                )?;
            }
        }
        if sync {
            io.file
                .sync_data()
                .map_err(|e| Error::io(&io.path, "fdatasync", e))?;
        }
        Ok(())
    }
}

impl Drop for SegmentWriter {
    /// Buffered records still pending are synced on drop; call [`SegmentWriter::close`] to see
    /// whether that worked.
    fn drop(&mut self) {
        let pending = {
            let st = lock(&self.state);
            st.poisoned.is_none() && st.synced_seq + 1 < st.next_seq
        };
        if pending {
            let _ = self.sync();
        }
    }
}

/// The chunk new frames go into: the last one, unless it ends with a roll.
fn current_chunk(pending: &mut Vec<Chunk>) -> &mut Chunk {
    if pending.last().is_none_or(|c| c.roll.is_some()) {
        pending.push(Chunk {
            bytes: Vec::new(),
            roll: None,
        });
    }
    let last = pending.len() - 1;
    &mut pending[last]
}

/// Batches smaller than this grow the segment with zeros ahead of the data, so the syncs of
/// later batches change no file size (on ext4 a size change costs a journal commit, measured
/// here at about 145 µs a sync, about what writing 64 KiB costs). A larger batch pays for its
/// own size change once; zero-filling ahead of it would only write every byte twice.
const ZERO_FILL_BELOW: usize = 64 << 10;

static ZEROS: [u8; 64 << 10] = [0u8; 64 << 10];

fn zero_fill(file: &dyn StorageFile, path: &Path, from: u64, to: u64) -> Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(ZEROS.len() as u64) as usize;
        file.write_all_at(&ZEROS[..n], at)
            .map_err(|e| Error::io(path, "preallocate", e))?;
        at += n as u64;
    }
    Ok(())
}

/// Creates a segment by the write protocol: exclusive create, header and preallocated zeros,
/// `fdatasync`, then `fsync` of the directory, before anything is appended to it.
fn create_segment(
    storage: &dyn Storage,
    dir: &Path,
    path: &Path,
    header: &SegmentHeader,
    config: &WriterConfig,
) -> Result<Io> {
    let file = storage
        .open(path, OpenMode::CreateNew)
        .map_err(|e| Error::io(path, "create", e))?;
    file.write_all_at(&header.encode(), 0)
        .map_err(|e| Error::io(path, "write header", e))?;
    let allocated =
        (HEADER_LEN as u64 + config.prealloc_step).min(config.segment_size.max(HEADER_LEN as u64));
    zero_fill(&*file, path, HEADER_LEN as u64, allocated)?;
    file.sync_data()
        .map_err(|e| Error::io(path, "fdatasync", e))?;
    storage
        .sync_dir(dir)
        .map_err(|e| Error::io(dir, "fsync directory", e))?;
    Ok(Io {
        file,
        path: path.to_owned(),
        pos: HEADER_LEN as u64,
        allocated: allocated.max(HEADER_LEN as u64),
    })
}

/// Creates `dir` if absent and makes its entry durable by syncing `parent`.
fn ensure_dir(storage: &dyn Storage, dir: &Path, parent: &Path) -> Result<()> {
    match storage
        .entry_kind(dir)
        .map_err(|e| Error::io(dir, "stat", e))?
    {
        Some(EntryKind::Dir) => Ok(()),
        Some(_) => Err(Error::corrupt(dir, 0, "expected a directory")),
        None => {
            storage
                .create_dir(dir)
                .map_err(|e| Error::io(dir, "create directory", e))?;
            storage
                .sync_dir(parent)
                .map_err(|e| Error::io(parent, "fsync directory", e))
        }
    }
}
