//! The raw floor of create_subagent: makalog's file-system steps with plain system calls. Two
//! claim records appended to a preallocated claims file, synced together; the child's directory
//! made and `sessions/` synced; its segment created exclusively with its header, synced, its
//! directory synced; the header record written and synced.
//!
//! With the store's cap, the floor also keeps each child's segment open, as the store keeps a
//! session open for writing, and closes the one the cap pushes out as the store's closer
//! threads do, on a thread of its own and without a sync: its sidecar written to a new
//! temporary file and renamed into place, its zeros cut, its file closed. (The store lets two
//! closes run at once and makes the next eviction wait for one; the floor queues them all.)

use super::common::BenchResult;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

/// About the size of a new child's sidecar (1,199 bytes for the bench's children).
const SIDECAR_LEN: usize = 1_200;

/// A child's segment kept open, and where its data ends.
struct OpenChild {
    dir: PathBuf,
    segment: File,
    len: u64,
}

/// The children kept open (oldest first), at most `cap`, and the thread closing the others.
struct Cap {
    cap: usize,
    open: VecDeque<OpenChild>,
    closes: Sender<OpenChild>,
    closer: JoinHandle<std::io::Result<()>>,
}

pub struct RawFloor {
    claims: File,
    pos: u64,
    sessions: PathBuf,
    seg_header: Vec<u8>,
    cap: Option<Cap>,
}

impl RawFloor {
    /// A floor under `dir`; with `cap`, the children beyond it are closed as the store's cap
    /// closes sessions.
    pub fn new(dir: &Path, cap: Option<usize>) -> BenchResult<RawFloor> {
        let sessions = dir.join("sessions");
        std::fs::create_dir_all(&sessions)?;
        let claims = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.join("claims.log"))?;
        claims.set_len(64 << 20)?;
        claims.sync_all()?;
        let cap = cap.map(|cap| {
            let (closes, queue) = channel::<OpenChild>();
            // A failed close is kept and the others still run, so the error reaches `finish`.
            let closer = std::thread::spawn(move || {
                let mut first = Ok(());
                for child in queue {
                    let closed = close(child);
                    if first.is_ok() {
                        first = closed;
                    }
                }
                first
            });
            Cap {
                cap,
                open: VecDeque::new(),
                closes,
                closer,
            }
        });
        Ok(RawFloor {
            claims,
            pos: 0,
            sessions,
            seg_header: vec![0; 4096],
            cap,
        })
    }

    pub fn create(&mut self, header: &[u8], i: usize) -> BenchResult<()> {
        for record in [&header[..64], header] {
            self.claims.write_all_at(record, self.pos)?;
            self.pos += record.len() as u64;
        }
        self.claims.sync_data()?;
        let dir = self.sessions.join(format!("child-{i:06}"));
        std::fs::create_dir(&dir)?;
        File::open(&self.sessions)?.sync_all()?;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("00000000000000000001.seg"))?;
        f.write_all_at(&self.seg_header, 0)?;
        f.sync_data()?;
        File::open(&dir)?.sync_all()?;
        f.write_all_at(header, 256)?;
        f.sync_data()?;
        if let Some(cap) = &mut self.cap {
            cap.open.push_back(OpenChild {
                dir,
                segment: f,
                len: 256 + header.len() as u64,
            });
            if cap.open.len() > cap.cap {
                let oldest = cap.open.pop_front().ok_or("no child open")?;
                cap.closes.send(oldest).map_err(|_| "the closer stopped")?;
            }
        }
        Ok(())
    }

    /// Waits for the closes queued (untimed, as the store's close is).
    pub fn finish(self) -> BenchResult<()> {
        if let Some(cap) = self.cap {
            drop(cap.closes);
            cap.closer.join().map_err(|_| "the closer panicked")??;
        }
        Ok(())
    }
}

/// What the store's close does for a small session pushed out by its cap.
fn close(child: OpenChild) -> std::io::Result<()> {
    let tmp = child.dir.join("index.tmp");
    let sidecar = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    sidecar.write_all_at(&[0; SIDECAR_LEN], 0)?;
    drop(sidecar);
    std::fs::rename(&tmp, child.dir.join("index"))?;
    child.segment.set_len(child.len)
}
