//! Simulated storage: an in-memory file system that keeps what is durable apart from what is
//! only written, so tests can crash it at any persistence point, tear the writes that were in
//! flight, and inject I/O errors. It keeps the [`Storage`](super::Storage) contract, nothing more: a write is
//! durable only after `sync_data` of its file, a directory entry (create, rename, remove) only
//! after `sync_dir` of its directory.
//!
//! Everything it decides at random comes from a seed, so a failure is reproduced from the seed
//! and the crash point.

mod faults;
mod fs;
mod tear;

use faults::{begin, begin_op};
pub use faults::{Fault, FaultKind, SimRng};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
pub use tear::Tear;
use tear::{some_pages, some_writes};

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
        // An entry whose directory's own entry was never made durable went with it.
        let reachable = reachable(&st.durable);
        st.durable = reachable;
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
        reachable(&st.durable)
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

/// The entries of `map` whose every ancestor directory is in it: what a path walk from the root
/// finds.
fn reachable(map: &BTreeMap<PathBuf, Node>) -> BTreeMap<PathBuf, Node> {
    map.iter()
        .filter(|(p, _)| {
            p.ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty())
                .all(|a| map.get(a) == Some(&Node::Dir))
        })
        .map(|(p, n)| (p.clone(), *n))
        .collect()
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
