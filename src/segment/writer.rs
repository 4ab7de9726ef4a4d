//! The segment writer of one session: durable and buffered appends, group commit, roll and seal.
//!
//! Appends go through [`GroupCommit`]: concurrent appends to one session share one write and one
//! `fdatasync`. A segment rolls before it would grow past the configured size: the old one gets
//! its seal footer and is cut and synced, the new one is created by the write protocol, all in
//! the flush that carries the frames, so rolls need no lock of their own.

use super::check::check_session;
use super::layout::{segment_file_name, session_dir, SESSIONS_DIR};
use super::load::scan_session_files;
use super::scan::{Resume, ScanResult, SegmentScan};
use crate::commit::{AppendFile, GroupCommit, Pending, Prealloc, Sink};
use crate::error::{Error, Result};
use crate::format::{
    encode_frame, next_chain, validate_session_id, ChainValue, RecordKind, SealFooter,
    SegmentHeader, Tail, DEFAULT_MAX_PAYLOAD, FOOTER_LEN, FORMAT_VERSION, FRAME_OVERHEAD,
    HEADER_LEN, MAX_PAYLOAD_LIMIT,
};
use crate::recovery::{apply, plan, RecoveryReport};
use crate::root::{LogHold, Owner};
use crate::storage::{EntryKind, OpenMode, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a writer lays out its segments.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Roll to a new segment before one would grow past this many bytes.
    pub segment_size: u64,
    /// The payload bound new segments declare (at most [`MAX_PAYLOAD_LIMIT`]).
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

    fn prealloc(&self) -> Prealloc {
        Prealloc {
            step: self.prealloc_step,
            block: self.prealloc_step.min(PREALLOC_BLOCK),
            cap: self.segment_size,
        }
    }
}

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
}

/// The one writer of a session's segments. It holds a share of the owner's lease.
pub struct SegmentWriter {
    commit: GroupCommit<Head, SegmentSink>,
    config: WriterConfig,
    session_id: String,
    dir: PathBuf,
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
}

/// Bytes for one segment file, and the segment that follows if they end with a seal footer.
struct Chunk {
    /// A new header for the segment, written (and synced) before `bytes`: an empty segment
    /// whose payload bound is too small for the next record gets a larger one in place.
    rewrite: Option<SegmentHeader>,
    bytes: Vec<u8>,
    roll: Option<Roll>,
}

struct Roll {
    path: PathBuf,
    header: SegmentHeader,
}

/// The segment being appended to; only the flush leader touches it.
struct SegmentSink {
    storage: Arc<dyn Storage>,
    file: AppendFile,
    config: WriterConfig,
}

impl Sink for SegmentSink {
    type Chunk = Chunk;

    fn write_out(&mut self, chunks: Vec<Chunk>, sync: bool) -> Result<()> {
        for chunk in chunks {
            if let Some(header) = &chunk.rewrite {
                self.file.rewrite_header(&header.encode())?;
            }
            let Some(roll) = chunk.roll else {
                self.file.append(&chunk.bytes)?;
                continue;
            };
            self.file.finish(&chunk.bytes)?;
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

    fn current_path(&self) -> PathBuf {
        self.file.path().to_owned()
    }
}

impl SegmentWriter {
    /// Opens a session for writing under the owner's lease: creates it if absent, otherwise
    /// recovers it by the decision table (cutting a torn tail, removing a torn create, or
    /// refusing with nothing written).
    pub fn open(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        SegmentWriter::open_resumed(owner, session_id, config, None)
    }

    /// [`SegmentWriter::open`], trusting the log up to `resume` (as its index sidecar vouches for
    /// it) and recovering only what follows: the covered bytes are not read again.
    pub fn open_resumed(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
        resume: Option<Resume>,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        SegmentWriter::open_guarded(owner, session_id, config, resume, resume)
    }

    /// [`SegmentWriter::open_resumed`], where `durable` is a point a sidecar recorded as synced
    /// even if it no longer vouches for the log (its covers do not hold): recovery never cuts a
    /// torn tail, nor removes a torn create, before it. Damage there is damage to records that
    /// were acknowledged, and the session is refused, naming the file and offset.
    pub fn open_guarded(
        owner: &Owner,
        session_id: &str,
        config: WriterConfig,
        resume: Option<Resume>,
        durable: Option<Resume>,
    ) -> Result<(SegmentWriter, RecoveryReport)> {
        validate_session_id(session_id).map_err(Error::InvalidInput)?;
        if config.max_payload == 0 || config.max_payload > MAX_PAYLOAD_LIMIT {
            return Err(Error::InvalidInput(format!(
                "max_payload must be 1..={MAX_PAYLOAD_LIMIT}"
            )));
        }
        let hold = owner.hold_log(&format!("session {session_id}"))?;
        let storage = owner.storage().clone();
        let dir = session_dir(session_id);
        owner.ensure_root_dir(Path::new(SESSIONS_DIR))?;
        let created = ensure_session_dir(owner, &dir)?;

        // A directory made just now holds nothing to scan.
        let scanned = if created {
            Vec::new()
        } else {
            scan_session_files(&*storage, session_id, resume.as_ref())?.1
        };
        let check = check_session(session_id, &scanned, resume.as_ref());
        if let Some(d) = durable {
            let first = resume.map_or(0, |r| r.ordinal);
            refuse_cuts_before(&check.problems, &scanned, first, &d)?;
        }
        let repairs = plan(&check.problems)?;
        let report = apply(&*storage, repairs)?;
        let (head_seq, head_chain) = check.head;
        // A resume point comes from a sidecar, written only once everything it covers was
        // synced (and its directory with it): when nothing follows it (no record, no footer,
        // no newer segment a roll created), there is nothing that could still sit unsynced in
        // the page cache of a process that died. A directory made just now was synced into
        // `sessions/`, and its segment is created by the write protocol below.
        let nothing_after = matches!(scanned.as_slice(), [only] if matches!(
            &only.result,
            ScanResult::Scanned(s) if matches!(s.end, Tail::Eof | Tail::Zeros { .. })
        ));
        let vouched = created
            || (resume.is_some_and(|r| r.last_seq == head_seq)
                && nothing_after
                && report.repairs.is_empty());

        let last = scanned.iter().rev().find_map(|s| match &s.result {
            ScanResult::Scanned(scan) => Some((s.file.path.clone(), scan.clone())),
            ScanResult::BadHeader { .. } => None,
        });
        let (file, head) = match last {
            Some((path, scan)) if !matches!(scan.end, Tail::Sealed { .. }) => {
                let file = AppendFile::open(&*storage, &path, scan.data_end, config.prealloc())?;
                // The bytes recovery adopted may still sit in the page cache of a process
                // that died: make them durable before anything builds on them.
                if !vouched {
                    file.sync()?;
                }
                let head = Head {
                    chain: head_chain,
                    ordinal: scan.header.ordinal,
                    frames: scan.frame_count,
                    len: scan.data_end,
                    max_payload: scan.header.max_payload,
                };
                (file, head)
            }
            sealed_or_none => {
                if let Some((path, scan)) = &sealed_or_none {
                    finish_interrupted_seal(&*storage, path, scan)?;
                }
                let ordinal = match (&sealed_or_none, resume) {
                    (Some((_, s)), _) => s.header.ordinal.checked_add(1),
                    (None, Some(r)) => r.ordinal.checked_add(1),
                    (None, None) => Some(0),
                };
                let (Some(ordinal), Some(first_seq)) = (ordinal, head_seq.checked_add(1)) else {
                    return Err(Error::corrupt(
                        &dir,
                        0,
                        "segment ordinals or sequence numbers are exhausted",
                    ));
                };
                let header = SegmentHeader {
                    version: FORMAT_VERSION,
                    max_payload: config.max_payload,
                    ordinal,
                    first_seq,
                    prev_chain: head_chain,
                    session_id: session_id.to_owned(),
                };
                let path = dir.join(segment_file_name(header.first_seq));
                let file =
                    AppendFile::create(&*storage, &path, &header.encode(), config.prealloc())?;
                let head = Head {
                    chain: head_chain,
                    ordinal: header.ordinal,
                    frames: 0,
                    len: HEADER_LEN as u64,
                    max_payload: config.max_payload,
                };
                (file, head)
            }
        };
        // Directory entries made by a process that died before syncing them.
        // (The root's entry for `sessions/` was made durable by `ensure_root_dir`.)
        if !vouched {
            storage
                .sync_dir(&dir)
                .map_err(|e| Error::io(&dir, "fsync directory", e))?;
            owner.sync_root_dir_shared(Path::new(SESSIONS_DIR))?;
        }
        let sink = SegmentSink {
            storage,
            file,
            config: config.clone(),
        };
        Ok((
            SegmentWriter {
                commit: GroupCommit::new(head, sink, head_seq),
                config,
                session_id: session_id.to_owned(),
                dir,
                _hold: hold,
            },
            report,
        ))
    }

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
        let frame_len = (FRAME_OVERHEAD + payload.len()) as u64;
        let full = st.log.len + frame_len + FOOTER_LEN as u64 > self.config.segment_size;
        let too_big = payload.len() > st.log.max_payload as usize;
        if st.log.frames > 0 && (full || too_big) {
            self.roll(&mut st);
        } else if too_big {
            self.raise_bound(&mut st);
        }
        let seq = st.next_seq();
        if seq == u64::MAX {
            return Err(Error::InvalidInput(
                "the session has used every sequence number".into(),
            ));
        }
        let chain = next_chain(&st.log.chain, seq, kind as u8, payload);
        encode_frame(
            &mut current_chunk(&mut st.chunks).bytes,
            seq,
            kind,
            payload,
            &chain,
        );
        st.queued(frame_len as usize);
        let ack = Appended {
            seq,
            chain,
            ordinal: st.log.ordinal,
            offset: st.log.len,
        };
        st.log.chain = chain;
        st.log.frames += 1;
        st.log.len += frame_len;
        Ok(ack)
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

    /// The highest sequence number known durable.
    pub fn durable_seq(&self) -> u64 {
        self.commit.durable_seq()
    }

    /// Waits, without writing anything, until record `seq` is durable; the caller knows its
    /// appender is waiting for that sync (a durable append in flight).
    pub fn wait_synced(&self, seq: u64) -> Result<()> {
        self.commit.wait_synced(seq)
    }

    /// Syncs everything pending, cuts the zeros after the data and makes that durable, and
    /// closes the writer, reporting any failure: a cleanly closed session holds no preallocated
    /// space.
    pub fn close(self) -> Result<()> {
        self.finish()
    }

    fn finish(&self) -> Result<()> {
        self.commit.finish(|sink| sink.file.cut())
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
        st.chunks.push(Chunk {
            rewrite: Some(SegmentHeader {
                version: FORMAT_VERSION,
                max_payload: self.config.max_payload,
                ordinal: st.log.ordinal,
                first_seq: st.next_seq(),
                prev_chain: st.log.chain,
                session_id: self.session_id.clone(),
            }),
            bytes: Vec::new(),
            roll: None,
        });
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
        let header = SegmentHeader {
            version: FORMAT_VERSION,
            max_payload: self.config.max_payload,
            ordinal: st.log.ordinal.saturating_add(1),
            first_seq: next_seq,
            prev_chain: st.log.chain,
            session_id: self.session_id.clone(),
        };
        let chunk = current_chunk(&mut st.chunks);
        chunk.bytes.extend_from_slice(&footer.encode());
        chunk.roll = Some(Roll {
            path: self.dir.join(segment_file_name(next_seq)),
            header,
        });
        st.log.ordinal = st.log.ordinal.saturating_add(1);
        st.log.frames = 0;
        st.log.len = HEADER_LEN as u64;
        st.log.max_payload = self.config.max_payload;
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

/// The chunk new frames go into: the last one, unless it ends with a roll.
fn current_chunk(chunks: &mut Vec<Chunk>) -> &mut Chunk {
    if chunks.last().is_none_or(|c| c.roll.is_some()) {
        chunks.push(Chunk {
            rewrite: None,
            bytes: Vec::new(),
            roll: None,
        });
    }
    let last = chunks.len() - 1;
    &mut chunks[last]
}

/// Refuses a repair that would drop bytes before `durable`, the point a sidecar recorded as
/// synced: there, a torn-looking tail is damage to acknowledged records. `scanned` starts at
/// segment ordinal `first`.
fn refuse_cuts_before(
    problems: &[crate::recovery::Problem],
    scanned: &[super::check::ScannedSegment],
    first: u64,
    durable: &Resume,
) -> Result<()> {
    use crate::recovery::Problem;
    for p in problems {
        let (file, offset) = match p {
            Problem::TornTail { file, offset, .. } => (file, *offset),
            Problem::TornCreate { file, .. } => (file, 0),
            _ => continue,
        };
        let Some(i) = scanned.iter().position(|s| &s.file.path == file) else {
            continue;
        };
        let ordinal = first.saturating_add(i as u64);
        if ordinal < durable.ordinal || (ordinal == durable.ordinal && offset < durable.data_end) {
            return Err(Error::corrupt(
                file,
                offset,
                format!(
                    "damage to records the index sidecar recorded as durable (through record {}); refusing to cut them as a torn tail",
                    durable.last_seq
                ),
            ));
        }
    }
    Ok(())
}

/// Completes a seal a crash interrupted: cuts zeros left after the footer and makes the
/// segment durable before the next segment is created after it.
fn finish_interrupted_seal(storage: &dyn Storage, path: &Path, scan: &SegmentScan) -> Result<()> {
    let file = storage
        .open(path, OpenMode::ReadWrite)
        .map_err(|e| Error::io(path, "open", e))?;
    if let Tail::Sealed { trailing_zeros, .. } = scan.end {
        if trailing_zeros > 0 {
            file.set_len(scan.data_end + FOOTER_LEN as u64)
                .map_err(|e| Error::io(path, "truncate", e))?;
        }
    }
    file.sync_data()
        .map_err(|e| Error::io(path, "fdatasync", e))
}

/// Creates a session's directory if absent and makes its entry durable, sharing the sync of
/// `sessions/` with concurrent creators; true when it was created.
fn ensure_session_dir(owner: &Owner, dir: &Path) -> Result<bool> {
    let storage = owner.storage();
    match storage
        .entry_kind(dir)
        .map_err(|e| Error::io(dir, "stat", e))?
    {
        Some(EntryKind::Dir) => Ok(false),
        Some(_) => Err(Error::corrupt(dir, 0, "expected a directory")),
        None => {
            storage
                .create_dir(dir)
                .map_err(|e| Error::io(dir, "create directory", e))?;
            owner.sync_root_dir_shared(Path::new(SESSIONS_DIR))?;
            Ok(true)
        }
    }
}
