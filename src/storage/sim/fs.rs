//! The simulated storage's files and namespace: the [`StorageFile`] and [`Storage`]
//! implementations over the shared state, each operation a possible crash point and fault.

use super::*;
use crate::storage::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};

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

/// Copies what `bytes` hold from `offset` into `buf`; how many (0 past the end).
fn copy_at(bytes: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let start = (offset as usize).min(bytes.len());
    let n = buf.len().min(bytes.len() - start);
    buf[..n].copy_from_slice(&bytes[start..start + n]);
    n
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
        Ok(copy_at(&st.inodes[self.inode].data, buf, offset))
    }

    fn read_persisted_at(&self, buf: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        let mut st = lock(&self.state);
        begin(&mut st, Some(self.generation), false)?;
        Ok(Some(copy_at(&st.inodes[self.inode].durable, buf, offset)))
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

    fn sync_all(&self) -> io::Result<()> {
        let mut st = lock(&self.state);
        // Not a persistence point: a crash just after it is a crash before the next one.
        if begin_op(&mut st, None, false, true)? == Some(FaultKind::SyncLost) {
            return Err(io::Error::from_raw_os_error(5));
        }
        for (_, ops) in std::mem::take(&mut st.dir_pending) {
            for op in ops {
                apply_dir_op(&mut st.durable, op);
            }
        }
        for inode in &mut st.inodes {
            for op in std::mem::take(&mut inode.pending) {
                apply_file_op(&mut inode.durable, &op);
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

    fn deterministic(&self) -> bool {
        true
    }
}
