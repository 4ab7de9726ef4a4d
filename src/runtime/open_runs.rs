//! The open-runs file `open-runs` at the root: the sessions in which the runtime has started
//! runs that may not have ended, so recovery at start visits only them instead of every
//! session of the root. Fixed 512-byte slots, reused: a slot of all zeros is free; an occupied
//! slot is a payload length `n` (u32 LE, 1..=504), the CRC-32 of the payload, and the payload,
//! the canonical JSON `{"runId","sessionId"}` of the run that took it, zeros after it.
//!
//! A session's slot is written and synced before the first record of the first run the
//! runtime starts in it, and kept while the session is in use: later runs of the session
//! cost the file nothing (a sync a turn would be a third of a streamed turn's). Once no run of
//! the session is in flight it stays for a while ([`IDLE_KEPT`] such sessions, the least
//! recently used zeroed first, not synced): a slot whose zeroing was lost, or one kept, names
//! a session whose runs have ended, which recovery visits and passes. A turn parked waiting
//! for the user (§12: its stream closed while the user was asked) keeps its run in flight
//! here until a recovery ends it: the next start's, one the host runs, or a claimed intent's
//! retry (§12 step 4).
//! Slots a process finds occupied when it opens the file name sessions of an earlier life:
//! they are never reused before a recovery has ended their runs.
//!
//! The file is created by a recovery that scanned every session; while it is missing, the
//! runs started are remembered in memory only (a crash then leaves them to the next recovery,
//! which scans every session again), and the recovery that creates the file names those still
//! in flight in it before the file is durable. A slot that is neither free nor valid (a torn
//! slot write) makes recovery scan every session too.

use crate::error::{Error, Result};
use crate::storage::{write_atomically, OpenMode, Storage, StorageFile};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The file's name at the root.
pub const OPEN_RUNS_FILE: &str = "open-runs";
/// The size of one slot.
pub const SLOT_LEN: usize = 512;
const MAX_PAYLOAD: usize = SLOT_LEN - 8;
/// Sessions with no run in flight whose slots are kept, so their next turns write nothing
/// here; at most this many more sessions for a recovery to visit.
pub const IDLE_KEPT: usize = 64;
/// The longest file a writer makes: [`MAX_SLOTS`] slots.
pub const MAX_FILE_LEN: u64 = (MAX_SLOTS * SLOT_LEN) as u64;
/// The most slots a writer uses at once: sessions with runs in flight, plus [`IDLE_KEPT`].
pub const MAX_SLOTS: usize = 1 << 17;

/// What the file says at start.
#[derive(Debug, Clone, PartialEq)]
pub enum Listing {
    /// There is no file: every session must be visited.
    Missing,
    /// A slot at this offset holds neither a run nor zeros: every session must be visited.
    Damaged { offset: u64 },
    /// The runs it holds: (session, run) by slot.
    Open(Vec<(String, String)>),
}

/// The runtime's handle on the file.
#[derive(Default)]
pub(crate) struct OpenRuns {
    file: Option<Box<dyn StorageFile>>,
    /// This process's sessions that hold a slot: by session, the slot, its runs in flight,
    /// and when its last run ended (a tick of `clock`). Runs are kept by id, so a run ended
    /// by a recovery of this life (a parked turn's) is let go as a turn's end lets go its own.
    in_use: HashMap<String, Marked>,
    clock: u64,
    /// Slots the file held when this process opened it: runs of an earlier life not yet
    /// recovered, never overwritten before a recovery ends them.
    earlier: BTreeSet<usize>,
    /// Sessions with runs started while there was no file, and those of their runs still in
    /// flight. The recovery that creates the file gives them slots.
    untracked: BTreeMap<String, BTreeSet<String>>,
}

/// A session's slot.
struct Marked {
    slot: usize,
    running: BTreeSet<String>,
    ended_at: u64,
}

/// The run a slot names for the runs of a session in flight: any one leads recovery to the
/// session, which it scans for all of them.
fn named(runs: &BTreeSet<String>) -> Result<&str> {
    runs.last()
        .map(String::as_str)
        .ok_or_else(|| Error::InvalidInput("a slot for no run in flight".into()))
}

fn io(op: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::io(Path::new(OPEN_RUNS_FILE), op, e)
}

/// Reads the file of `storage`'s root, read-only.
pub fn read_open_runs(storage: &dyn Storage) -> Result<Listing> {
    let file = match storage.open(Path::new(OPEN_RUNS_FILE), OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Listing::Missing),
        Err(e) => return Err(io("open")(e)),
    };
    // A file longer than a writer makes is damage, and none of it is read.
    let len = file.size().map_err(io("size"))?;
    if len > MAX_FILE_LEN {
        return Ok(Listing::Damaged {
            offset: MAX_FILE_LEN,
        });
    }
    let mut bytes = vec![0u8; len as usize];
    let n = file.read_full_at(&mut bytes, 0).map_err(io("read"))?;
    bytes.truncate(n);
    let mut runs = Vec::new();
    for (i, slot) in bytes.chunks(SLOT_LEN).enumerate() {
        let offset = (i * SLOT_LEN) as u64;
        if slot.iter().all(|&b| b == 0) {
            continue;
        }
        match decode_slot(slot) {
            Some(run) => runs.push(run),
            None => return Ok(Listing::Damaged { offset }),
        }
    }
    Ok(Listing::Open(runs))
}

fn decode_slot(slot: &[u8]) -> Option<(String, String)> {
    if slot.len() != SLOT_LEN {
        return None;
    }
    let n = u32::from_le_bytes(slot[0..4].try_into().ok()?) as usize;
    if n == 0 || n > MAX_PAYLOAD || slot[8 + n..].iter().any(|&b| b != 0) {
        return None;
    }
    let payload = &slot[8..8 + n];
    if crc32fast::hash(payload) != u32::from_le_bytes(slot[4..8].try_into().ok()?) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let (s, r) = (v["sessionId"].as_str()?, v["runId"].as_str()?);
    crate::format::validate_session_id(s).ok()?;
    // Only the canonical form a writer makes (FORMAT.md): no other key, no other spelling.
    (slot_payload(s, r).as_bytes() == payload).then(|| (s.to_owned(), r.to_owned()))
}

/// A slot's payload: the canonical JSON of the run it names.
fn slot_payload(session_id: &str, run_id: &str) -> String {
    crate::event::canonical_string(&json!({"runId": run_id, "sessionId": session_id}))
}

/// The first slot `taken` does not hold, within the file's bound: a run past it is refused
/// before it is written, as a file longer than the bound would be damage.
fn free_slot(taken: impl Fn(&usize) -> bool) -> Result<usize> {
    (0..MAX_SLOTS).find(|i| !taken(i)).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{MAX_SLOTS} sessions have runs in flight: the open-runs file holds no more"
        ))
    })
}

fn encode_slot(session_id: &str, run_id: &str) -> Result<Vec<u8>> {
    let payload = slot_payload(session_id, run_id);
    if payload.len() > MAX_PAYLOAD {
        return Err(Error::InvalidInput(format!(
            "run id {run_id:?} is too long to track"
        )));
    }
    let mut slot = vec![0u8; SLOT_LEN];
    slot[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    slot[4..8].copy_from_slice(&crc32fast::hash(payload.as_bytes()).to_le_bytes());
    slot[8..8 + payload.len()].copy_from_slice(payload.as_bytes());
    Ok(slot)
}

impl OpenRuns {
    /// Opens the file if it exists (true), noting the slots an earlier life left occupied.
    fn open_existing(&mut self, storage: &dyn Storage) -> Result<bool> {
        if self.file.is_some() {
            return Ok(true);
        }
        let file = match storage.open(Path::new(OPEN_RUNS_FILE), OpenMode::ReadWrite) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io("open")(e)),
        };
        let len = file.size().map_err(io("size"))?;
        // Longer than a writer makes: damage, which the next reset replaces (as if missing).
        if len > MAX_FILE_LEN {
            return Ok(false);
        }
        let len = len as usize;
        let mut slot = vec![0u8; SLOT_LEN];
        for i in 0..len.div_ceil(SLOT_LEN) {
            let n = file
                .read_full_at(&mut slot, (i * SLOT_LEN) as u64)
                .map_err(io("read"))?;
            if slot[..n].iter().any(|&b| b != 0) {
                self.earlier.insert(i);
            }
        }
        self.file = Some(file);
        Ok(true)
    }

    /// After a recovery that ended every run in the file (or scanned every session): the file
    /// emptied and synced. The slots of sessions this process holds are kept; an earlier
    /// life's are free again. Runs started while the file was missing and still in flight get
    /// slots, in the file before it is durable: a file that is missing is made whole beside its
    /// name, synced, and renamed (the root directory synced), since a file created in place may
    /// reach the disk without the bytes written to it.
    pub fn reset(&mut self, storage: &dyn Storage) -> Result<()> {
        if !self.open_existing(storage)? {
            return self.create(storage);
        }
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| Error::InvalidInput("no open-runs file".into()))?;
        let mut used = self.slots();
        let mut adopted = Vec::with_capacity(self.untracked.len());
        for (session, runs) in &self.untracked {
            let slot = free_slot(|i| used.contains(i))?;
            used.insert(slot);
            file.write_all_at(
                &encode_slot(session, named(runs)?)?,
                (slot * SLOT_LEN) as u64,
            )
            .map_err(io("write"))?;
            adopted.push((session.clone(), slot));
        }
        let keep = used.last().map_or(0, |last| (last + 1) * SLOT_LEN);
        let len = file.size().map_err(io("size"))? as usize;
        for at in (0..keep).step_by(SLOT_LEN) {
            if !used.contains(&(at / SLOT_LEN)) {
                file.write_all_at(&[0u8; SLOT_LEN], at as u64)
                    .map_err(io("clear"))?;
            }
        }
        if len > keep {
            file.set_len(keep as u64).map_err(io("truncate"))?;
        }
        file.sync_data().map_err(io("sync"))?;
        self.adopt(adopted);
        Ok(())
    }

    /// Makes the missing file, naming the untracked runs, whole before its name is durable.
    fn create(&mut self, storage: &dyn Storage) -> Result<()> {
        debug_assert!(self.in_use.is_empty(), "no slot is held without a file");
        let mut bytes = Vec::with_capacity(self.untracked.len() * SLOT_LEN);
        let mut adopted = Vec::with_capacity(self.untracked.len());
        for (slot, (session, runs)) in self.untracked.iter().enumerate() {
            bytes.extend_from_slice(&encode_slot(session, named(runs)?)?);
            adopted.push((session.clone(), slot));
        }
        write_atomically(storage, Path::new(OPEN_RUNS_FILE), &bytes)?;
        if !self.open_existing(storage)? {
            return Err(io("open")(std::io::ErrorKind::NotFound.into()));
        }
        self.adopt(adopted);
        Ok(())
    }

    /// After the file holding them is durable: the untracked runs' sessions hold the slots
    /// written for them, and the earlier life's runs, ended, free theirs.
    fn adopt(&mut self, adopted: Vec<(String, usize)>) {
        for (session, slot) in adopted {
            if let Some(running) = self.untracked.remove(&session) {
                debug_assert!(!self.in_use.contains_key(&session), "one count a session");
                let marked = Marked {
                    slot,
                    running,
                    ended_at: self.clock,
                };
                self.in_use.insert(session, marked);
            }
        }
        self.earlier.clear();
    }

    /// The slots this process's sessions hold.
    fn slots(&self) -> BTreeSet<usize> {
        self.in_use.values().map(|m| m.slot).collect()
    }

    /// Records, durably, that run `run_id` of `session_id` is starting: writes and syncs the
    /// session's slot unless it holds one already. While the file does not exist the run is
    /// remembered for the recovery that creates it (until then, a crash leaves it to a
    /// recovery that scans everything). Each run marked is told to [`OpenRuns::ended`] when it
    /// ends.
    pub fn mark(&mut self, storage: &dyn Storage, session_id: &str, run_id: &str) -> Result<()> {
        if let Some(m) = self.in_use.get_mut(session_id) {
            m.running.insert(run_id.to_owned());
            return Ok(());
        }
        let bytes = encode_slot(session_id, run_id)?;
        let file = match self.open_existing(storage)? {
            true => self.file.as_ref(),
            false => None,
        };
        let Some(file) = file else {
            self.untracked
                .entry(session_id.to_owned())
                .or_default()
                .insert(run_id.to_owned());
            return Ok(());
        };
        let used = self.slots();
        let taken = |i: &usize| used.contains(i) || self.earlier.contains(i);
        let slot = free_slot(taken)?;
        file.write_all_at(&bytes, (slot * SLOT_LEN) as u64)
            .map_err(io("write"))?;
        file.sync_data().map_err(io("sync"))?;
        // Runs of the session begun while the file was missing (a creation that failed after
        // its rename) are counted with this one: the slot now names them all.
        let mut running = self.untracked.remove(session_id).unwrap_or_default();
        running.insert(run_id.to_owned());
        let marked = Marked {
            slot,
            running,
            ended_at: 0,
        };
        self.in_use.insert(session_id.to_owned(), marked);
        Ok(())
    }

    /// Notes that run `run_id` of `session_id` ended (its terminal commit is durable): true
    /// when this process had marked it (a recovery also ends runs of an earlier life, which it
    /// had not). The session keeps its slot; past [`IDLE_KEPT`] sessions with nothing in
    /// flight, the least recently used one's slot is zeroed, not synced (a lost zeroing names
    /// a session whose runs ended).
    pub fn ended(&mut self, session_id: &str, run_id: &str) -> bool {
        self.clock += 1;
        let counted = if let Some(m) = self.in_use.get_mut(session_id) {
            let counted = m.running.remove(run_id);
            if counted {
                m.ended_at = self.clock;
            }
            counted
        } else if let Some(running) = self.untracked.get_mut(session_id) {
            let counted = running.remove(run_id);
            if running.is_empty() {
                self.untracked.remove(session_id);
            }
            counted
        } else {
            false
        };
        let idle = self
            .in_use
            .values()
            .filter(|m| m.running.is_empty())
            .count();
        if idle <= IDLE_KEPT {
            return counted;
        }
        let oldest = self
            .in_use
            .iter()
            .filter(|(_, m)| m.running.is_empty())
            .min_by_key(|(_, m)| m.ended_at)
            .map(|(s, _)| s.clone());
        if let (Some(file), Some(m)) = (&self.file, oldest.and_then(|s| self.in_use.remove(&s))) {
            let _ = file.write_all_at(&[0u8; SLOT_LEN], (m.slot * SLOT_LEN) as u64);
        }
        counted
    }
}

#[cfg(test)]
#[path = "open_runs_tests.rs"]
mod tests;
