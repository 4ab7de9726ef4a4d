//! Simulated storage: an in-memory file system that keeps what is durable apart from what is
//! only written, so tests can crash it at any persistence point, tear the writes that were in
//! flight, and inject I/O errors. It keeps the [`Storage`] contract, nothing more: a write is
//! durable only after `sync_data` of its file, a directory entry (create, rename, remove) only
//! after `sync_dir` of its directory.
//!
//! Everything it decides at random comes from a seed, so a failure is reproduced from the seed
//! and the crash point.

use super::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A small deterministic generator (splitmix64): the same seed gives the same choices.
#[derive(Debug, Clone)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// What a crash keeps of the writes and directory changes that were not yet synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tear {
    /// Nothing unsynced survives.
    None,
    /// Everything written survives (as if the disk flushed just before the crash).
    All,
    /// A prefix of each file's unsynced writes survives, chosen at random.
    Prefix,
    /// A prefix survives, and the next write survives cut at a random byte (bytes it would
    /// have overwritten keep what they held).
    TornLast,
    /// As `TornLast`, but the cut write's missing bytes past the old end of the file read as
    /// zeros (within it, as what they held).
    ZeroTail,
    /// As `TornLast`, but the cut write's missing bytes read as garbage, even where they
    /// overwrote bytes (a disk that does not write sectors whole).
    GarbageTail,
    /// Each 512-byte sector the unsynced writes changed survives or not on its own, in no
    /// order: a later page of a batch may reach the disk while an earlier one reads as it was
    /// (zeros, in space never written). A grown file keeps its new length.
    Pages,
}

impl Tear {
    /// Every variant.
    pub const ALL: [Tear; 7] = [
        Tear::None,
        Tear::All,
        Tear::Prefix,
        Tear::TornLast,
        Tear::ZeroTail,
        Tear::GarbageTail,
        Tear::Pages,
    ];
}

/// An injected I/O failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The operation fails with EIO and does nothing.
    Eio,
    /// A write stores a prefix of its bytes and then fails with EIO.
    ShortWrite,
    /// A write fails with ENOSPC and does nothing.
    NoSpace,
    /// A sync fails with EIO and the kernel forgets the writes it was to make durable
    /// (fsyncgate): they stay readable, but no later sync makes them durable and a crash loses
    /// them. On any other operation, as `Eio`.
    SyncLost,
}

/// Which operations fail: the `nth` operation (counting from 1, every call on the storage or a
/// file counts), once or it and every one after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub nth: u64,
    pub forever: bool,
    pub kind: FaultKind,
}

#[derive(Debug, Clone)]
enum FileOp {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    /// What reads see (the page cache).
    data: Vec<u8>,
    /// What survives a crash for sure.
    durable: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<FileOp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File(usize),
    Dir,
}

#[derive(Debug, Clone)]
enum DirOp {
    Link(PathBuf, Node),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf, Node),
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    /// The namespace as the running process sees it.
    live: BTreeMap<PathBuf, Node>,
    /// The namespace a crash falls back to, plus the entry changes applied since.
    durable: BTreeMap<PathBuf, Node>,
    /// Unsynced entry changes, per directory, in order.
    dir_pending: BTreeMap<PathBuf, Vec<DirOp>>,
    locks: BTreeSet<PathBuf>,
    /// Bumped by every crash: handles from before it are dead.
    generation: u64,
    ops: u64,
    persistence_points: u64,
    crash_before_point: Option<u64>,
    dead: bool,
    faults: Vec<Fault>,
}

/// The simulated file system; clone the `Arc` to share it.
#[derive(Debug)]
pub struct SimStorage {
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn err(kind: io::ErrorKind, what: &str) -> io::Error {
    io::Error::new(kind, what.to_owned())
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl Default for SimStorage {
    fn default() -> Self {
        SimStorage::new()
    }
}

impl SimStorage {
    /// An empty file system whose root directory exists durably.
    pub fn new() -> Self {
        let mut state = State::default();
        state.live.insert(PathBuf::new(), Node::Dir);
        state.durable.insert(PathBuf::new(), Node::Dir);
        SimStorage {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Persistence points passed so far (writes, syncs, truncates, creates, renames, removes,
    /// directory syncs).
    pub fn persistence_points(&self) -> u64 {
        lock(&self.state).persistence_points
    }

    /// Operations so far (every call counts), as numbered by [`Fault::nth`].
    pub fn operations(&self) -> u64 {
        lock(&self.state).ops
    }

    /// The process dies just before persistence point `point` (counting from 1): that operation
    /// and every later one fail, until [`SimStorage::crash`].
    pub fn crash_before_point(&self, point: u64) {
        lock(&self.state).crash_before_point = Some(point);
    }

    /// True once the simulated process has died at its crash point.
    pub fn is_dead(&self) -> bool {
        lock(&self.state).dead
    }

    /// Injects a fault; faults stay until [`SimStorage::clear_faults`] or a crash.
    pub fn inject(&self, fault: Fault) {
        lock(&self.state).faults.push(fault);
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        lock(&self.state).faults.clear();
    }

    /// Crashes: keeps what is durable and, as `tear` and `rng` decide, some of what was not.
    /// Locks are released, open handles die, faults and the crash point are cleared.
    pub fn crash(&self, tear: Tear, rng: &mut SimRng) {
        let mut st = lock(&self.state);
        let dir_ops: Vec<(PathBuf, Vec<DirOp>)> =
            std::mem::take(&mut st.dir_pending).into_iter().collect();
        for (_, ops) in dir_ops {
            let keep = match tear {
                Tear::None => 0,
                Tear::All => ops.len(),
                _ => rng.below(ops.len() as u64 + 1) as usize,
            };
            for op in ops.into_iter().take(keep) {
                apply_dir_op(&mut st.durable, op);
            }
        }
        for inode in &mut st.inodes {
            let pending = std::mem::take(&mut inode.pending);
            let durable = std::mem::take(&mut inode.durable);
            let data = match tear {
                Tear::Pages => some_pages(durable, &pending, rng),
                _ => some_writes(durable, &pending, tear, rng),
            };
            inode.durable = data.clone();
            inode.data = data;
        }
        st.live = st.durable.clone();
        st.locks.clear();
        st.generation += 1;
        st.dead = false;
        st.crash_before_point = None;
        st.faults.clear();
    }

    /// The process dies and starts again, but the machine stays up: everything written is still
    /// there to read (in the page cache) without being any more durable than it was. Locks are
    /// released, open handles die, faults and the crash point are cleared.
    pub fn restart(&self) {
        let mut st = lock(&self.state);
        st.locks.clear();
        st.generation += 1;
        st.dead = false;
        st.crash_before_point = None;
        st.faults.clear();
    }

    /// Every file reachable in the durable namespace with its durable bytes, for comparisons.
    pub fn durable_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let st = lock(&self.state);
        st.durable
            .iter()
            .filter_map(|(p, n)| match n {
                Node::File(i) => Some((p.clone(), st.inodes[*i].durable.clone())),
                Node::Dir => None,
            })
            .collect()
    }

    /// Every file of the live namespace with the bytes reads see.
    pub fn live_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let st = lock(&self.state);
        st.live
            .iter()
            .filter_map(|(p, n)| match n {
                Node::File(i) => Some((p.clone(), st.inodes[*i].data.clone())),
                Node::Dir => None,
            })
            .collect()
    }

    /// Overwrites bytes of a live file directly, bypassing faults and durability (for damage
    /// tests): the change is durable at once.
    pub fn corrupt(&self, path: &Path, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut st = lock(&self.state);
        let Some(Node::File(i)) = st.live.get(path).copied() else {
            return Err(err(io::ErrorKind::NotFound, "no such file"));
        };
        let op = FileOp::Write {
            offset,
            bytes: bytes.to_vec(),
        };
        apply_file_op(&mut st.inodes[i].data, &op);
        apply_file_op(&mut st.inodes[i].durable, &op);
        Ok(())
    }
}

/// What survives of `durable` and the unsynced `pending` writes under a tear that keeps a
/// prefix of the writes (and, as `tear` says, part of the next).
fn some_writes(mut data: Vec<u8>, pending: &[FileOp], tear: Tear, rng: &mut SimRng) -> Vec<u8> {
    let n = pending.len();
    let (full, torn) = match tear {
        Tear::None => (0, false),
        Tear::All => (n, false),
        Tear::Prefix | Tear::Pages => (rng.below(n as u64 + 1) as usize, false),
        Tear::TornLast | Tear::ZeroTail | Tear::GarbageTail => {
            (rng.below(n as u64 + 1) as usize, true)
        }
    };
    for op in pending.iter().take(full) {
        apply_file_op(&mut data, op);
    }
    if torn {
        if let Some(FileOp::Write { offset, bytes }) = pending.get(full) {
            let cut = rng.below(bytes.len() as u64) as usize;
            let mut partial = bytes[..cut].to_vec();
            // Bytes the write did not reach keep what they held (a disk persists whole
            // sectors, so an overwrite cut short leaves the old ones), except under
            // `GarbageTail`, which models sectors that do not; past the old end of the file
            // they read as zeros (or garbage).
            let start = *offset as usize;
            for i in cut..bytes.len() {
                let old = data.get(start + i).copied();
                partial.push(match (tear, old) {
                    (Tear::GarbageTail, _) => rng.next_u64() as u8,
                    (_, Some(b)) => b,
                    (_, None) => 0,
                });
            }
            if tear == Tear::TornLast {
                partial.truncate(cut.max(data.len().saturating_sub(start).min(bytes.len())));
            }
            apply_file_op(
                &mut data,
                &FileOp::Write {
                    offset: *offset,
                    bytes: partial,
                },
            );
        }
    }
    data
}

/// The unit [`Tear::Pages`] keeps or drops: a 512-byte sector. A 4 KiB page is 8 of them, so
/// every outcome of pages reaching the disk out of order is among the outcomes it draws, and
/// small test segments span several.
const PAGE: usize = 512;

/// What survives of `durable` and the unsynced `pending` writes when each changed page reaches
/// the disk or not, at random and independently.
fn some_pages(durable: Vec<u8>, pending: &[FileOp], rng: &mut SimRng) -> Vec<u8> {
    if pending.is_empty() {
        return durable;
    }
    let mut written = durable.clone();
    for op in pending {
        apply_file_op(&mut written, op);
    }
    // A length change is metadata: it survives or not on its own too.
    let len = if rng.below(2) == 0 || written.len() > durable.len() {
        written.len()
    } else {
        durable.len()
    };
    let mut out = durable;
    out.resize(len, 0);
    for start in (0..len).step_by(PAGE) {
        let end = (start + PAGE).min(len);
        let Some(new) = written.get(start..end.min(written.len())) else {
            continue;
        };
        if out[start..start + new.len()] != *new && rng.below(2) == 0 {
            out[start..start + new.len()].copy_from_slice(new);
        }
    }
    out
}

fn apply_file_op(data: &mut Vec<u8>, op: &FileOp) {
    match op {
        FileOp::Write { offset, bytes } => {
            let end = *offset as usize + bytes.len();
            if data.len() < end {
                data.resize(end, 0);
            }
            data[*offset as usize..end].copy_from_slice(bytes);
        }
        FileOp::SetLen(len) => data.resize(*len as usize, 0),
    }
}

fn apply_dir_op(map: &mut BTreeMap<PathBuf, Node>, op: DirOp) {
    match op {
        DirOp::Link(p, n) => {
            map.insert(p, n);
        }
        DirOp::Unlink(p) => {
            map.remove(&p);
        }
        DirOp::Rename(from, to, n) => {
            map.remove(&from);
            map.insert(to, n);
        }
    }
}

/// Counts an operation and decides whether it may go on: `Ok(None)` to proceed, `Ok(Some(kind))`
/// for a fault the caller applies (short write), `Err` to fail outright.
fn begin(
    st: &mut State,
    generation: Option<u64>,
    persistence: bool,
) -> io::Result<Option<FaultKind>> {
    begin_op(st, generation, persistence, false)
}

/// [`begin`] for an operation that is a file sync (`sync`), which a `SyncLost` fault hits.
fn begin_op(
    st: &mut State,
    generation: Option<u64>,
    persistence: bool,
    sync: bool,
) -> io::Result<Option<FaultKind>> {
    if st.dead {
        return Err(err(io::ErrorKind::Other, "simulated process is dead"));
    }
    if generation.is_some_and(|g| g != st.generation) {
        return Err(err(
            io::ErrorKind::Other,
            "handle from before a simulated crash",
        ));
    }
    if persistence {
        st.persistence_points += 1;
        if st.crash_before_point == Some(st.persistence_points) {
            st.dead = true;
            return Err(err(io::ErrorKind::Other, "simulated crash"));
        }
    }
    st.ops += 1;
    let n = st.ops;
    let hit = st
        .faults
        .iter()
        .find(|f| f.nth == n || (f.forever && n >= f.nth))
        .copied();
    match hit {
        None => Ok(None),
        Some(f) if f.kind == FaultKind::ShortWrite => Ok(Some(FaultKind::ShortWrite)),
        Some(f) if f.kind == FaultKind::SyncLost && sync => Ok(Some(FaultKind::SyncLost)),
        Some(f) if f.kind == FaultKind::NoSpace => Err(io::Error::from_raw_os_error(28)),
        Some(_) => Err(io::Error::from_raw_os_error(5)),
    }
}

struct SimFile {
    state: Arc<Mutex<State>>,
    inode: usize,
    generation: u64,
    writable: bool,
}

impl SimFile {
    fn check_writable(&self) -> io::Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(err(
                io::ErrorKind::PermissionDenied,
                "file opened read-only",
            ))
        }
    }
}

impl StorageFile for SimFile {
    fn size(&self) -> io::Result<u64> {
        let mut st = lock(&self.state);
        begin(&mut st, Some(self.generation), false)?;
        Ok(st.inodes[self.inode].data.len() as u64)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut st = lock(&self.state);
        begin(&mut st, Some(self.generation), false)?;
        let data = &st.inodes[self.inode].data;
        let start = (offset as usize).min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check_writable()?;
        let mut st = lock(&self.state);
        let fault = begin(&mut st, Some(self.generation), true)?;
        let bytes = match fault {
            Some(FaultKind::ShortWrite) => &buf[..buf.len() / 2],
            _ => buf,
        };
        let op = FileOp::Write {
            offset,
            bytes: bytes.to_vec(),
        };
        let inode = &mut st.inodes[self.inode];
        apply_file_op(&mut inode.data, &op);
        inode.pending.push(op);
        match fault {
            Some(_) => Err(io::Error::from_raw_os_error(5)),
            None => Ok(()),
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut st = lock(&self.state);
        let fault = begin_op(&mut st, Some(self.generation), true, true)?;
        let inode = &mut st.inodes[self.inode];
        let pending = std::mem::take(&mut inode.pending);
        if fault == Some(FaultKind::SyncLost) {
            // Marked clean without reaching the disk: reads see them, nothing persists them.
            return Err(io::Error::from_raw_os_error(5));
        }
        for op in &pending {
            apply_file_op(&mut inode.durable, op);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.check_writable()?;
        let mut st = lock(&self.state);
        begin(&mut st, Some(self.generation), true)?;
        let op = FileOp::SetLen(len);
        let inode = &mut st.inodes[self.inode];
        apply_file_op(&mut inode.data, &op);
        inode.pending.push(op);
        Ok(())
    }
}

struct SimLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    generation: u64,
}

impl StorageLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut st = lock(&self.state);
        if st.generation == self.generation {
            st.locks.remove(&self.path);
        }
    }
}

impl SimStorage {
    fn link(st: &mut State, path: &Path, node: Node) {
        st.live.insert(path.to_owned(), node);
        st.dir_pending
            .entry(parent(path))
            .or_default()
            .push(DirOp::Link(path.to_owned(), node));
    }

    fn require_dir(st: &State, dir: &Path) -> io::Result<()> {
        match st.live.get(dir) {
            Some(Node::Dir) => Ok(()),
            Some(Node::File(_)) => Err(err(io::ErrorKind::Other, "not a directory")),
            None => Err(err(io::ErrorKind::NotFound, "no such directory")),
        }
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let mut st = lock(&self.state);
        let existing = st.live.get(path).copied();
        let inode = match mode {
            OpenMode::CreateNew => {
                begin(&mut st, None, true)?;
                if existing.is_some() {
                    return Err(err(io::ErrorKind::AlreadyExists, "file exists"));
                }
                SimStorage::require_dir(&st, &parent(path))?;
                st.inodes.push(Inode::default());
                let i = st.inodes.len() - 1;
                SimStorage::link(&mut st, path, Node::File(i));
                i
            }
            OpenMode::ReadWrite | OpenMode::Read => {
                begin(&mut st, None, false)?;
                match existing {
                    Some(Node::File(i)) => i,
                    Some(Node::Dir) => return Err(err(io::ErrorKind::Other, "is a directory")),
                    None => return Err(err(io::ErrorKind::NotFound, "no such file")),
                }
            }
        };
        Ok(Box::new(SimFile {
            state: self.state.clone(),
            inode,
            generation: st.generation,
            writable: mode != OpenMode::Read,
        }))
    }

    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        self.read_file(path).map(FileBytes::Owned)
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut st = lock(&self.state);
        begin(&mut st, None, false)?;
        match st.live.get(path) {
            Some(Node::File(i)) => Ok(st.inodes[*i].data.clone()),
            Some(Node::Dir) => Err(err(io::ErrorKind::Other, "is a directory")),
            None => Err(err(io::ErrorKind::NotFound, "no such file")),
        }
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        begin(&mut st, None, true)?;
        if st.live.contains_key(path) {
            return Err(err(io::ErrorKind::AlreadyExists, "exists"));
        }
        SimStorage::require_dir(&st, &parent(path))?;
        SimStorage::link(&mut st, path, Node::Dir);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        begin(&mut st, None, true)?;
        let Some(node) = st.live.get(from).copied() else {
            return Err(err(io::ErrorKind::NotFound, "no such file"));
        };
        if parent(from) != parent(to) {
            return Err(err(io::ErrorKind::Other, "rename across directories"));
        }
        st.live.remove(from);
        st.live.insert(to.to_owned(), node);
        st.dir_pending
            .entry(parent(to))
            .or_default()
            .push(DirOp::Rename(from.to_owned(), to.to_owned(), node));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        begin(&mut st, None, true)?;
        match st.live.get(path) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => return Err(err(io::ErrorKind::Other, "is a directory")),
            None => return Err(err(io::ErrorKind::NotFound, "no such file")),
        }
        st.live.remove(path);
        st.dir_pending
            .entry(parent(path))
            .or_default()
            .push(DirOp::Unlink(path.to_owned()));
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = lock(&self.state);
        begin(&mut st, None, true)?;
        SimStorage::require_dir(&st, path)?;
        if let Some(ops) = st.dir_pending.remove(path) {
            for op in ops {
                apply_dir_op(&mut st.durable, op);
            }
        }
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut st = lock(&self.state);
        begin(&mut st, None, false)?;
        SimStorage::require_dir(&st, path)?;
        Ok(st
            .live
            .iter()
            .filter(|(p, _)| !p.as_os_str().is_empty() && parent(p) == path)
            .map(|(p, n)| DirEntry {
                name: p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                kind: match n {
                    Node::File(_) => EntryKind::File,
                    Node::Dir => EntryKind::Dir,
                },
            })
            .collect())
    }

    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        let mut st = lock(&self.state);
        begin(&mut st, None, false)?;
        Ok(st.live.get(path).map(|n| match n {
            Node::File(_) => EntryKind::File,
            Node::Dir => EntryKind::Dir,
        }))
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        let mut st = lock(&self.state);
        begin(&mut st, None, false)?;
        if !st.live.contains_key(path) {
            st.inodes.push(Inode::default());
            let i = st.inodes.len() - 1;
            SimStorage::link(&mut st, path, Node::File(i));
        }
        if !st.locks.insert(path.to_owned()) {
            return Ok(None);
        }
        Ok(Some(Box::new(SimLock {
            state: self.state.clone(),
            path: path.to_owned(),
            generation: st.generation,
        })))
    }

    fn is_locked(&self, path: &Path) -> io::Result<bool> {
        Ok(lock(&self.state).locks.contains(path))
    }

    fn describe_root(&self) -> PathBuf {
        PathBuf::from("sim:")
    }
}
