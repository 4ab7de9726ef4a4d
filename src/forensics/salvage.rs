//! Salvage: every intact session, and the valid prefix of each damaged one and of the claims
//! log, copied into a new root that verifies clean. Kept bytes are copied as they are (no
//! chain value is recomputed, so every kept record still proves its history); what is left
//! behind is reported by file and offset. The source is only read.

use super::chains::session_chain;
use crate::claims::{replay_claims, CLAIMS_FILE};
use crate::error::{Error, Result};
use crate::index::{encode_sidecar, rebuild, SIDECAR_FILE};
use crate::root::{read_marker, MARKER_FILE};
use crate::segment::check::check_session;
use crate::segment::layout::{list_session, list_sessions, session_dir, SESSIONS_DIR};
use crate::segment::load::scan_session_files;
use crate::storage::data_end::needed_end;
use crate::storage::{Cut, CutView, OpenMode, Storage};
use crate::verify::payload_problems;
use std::path::{Path, PathBuf};

/// Bytes of the source not copied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftBehind {
    pub file: PathBuf,
    /// From this byte to the end of the file (0: the whole file).
    pub from: u64,
    pub why: String,
}

/// What salvage kept of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionKept {
    pub session_id: String,
    /// Records kept, of the records the source's valid frames hold.
    pub kept: u64,
    pub valid_frames: u64,
    /// True when nothing of it was left behind.
    pub intact: bool,
}

/// What salvage did.
#[derive(Debug, Clone, Default)]
pub struct SalvageReport {
    pub sessions: Vec<SessionKept>,
    /// Claims-log records kept.
    pub claims_kept: Option<u64>,
    pub left_behind: Vec<LeftBehind>,
    /// Files written into the new root, and their bytes.
    pub files: u64,
    pub bytes: u64,
}

/// The source seen with everything salvage leaves behind cut away, and the report of it.
pub struct SalvagePlan<'a> {
    pub view: CutView<'a>,
    /// The sessions to copy (those with at least one record kept).
    pub sessions: Vec<String>,
    pub report: SalvageReport,
    /// The source is owned by a live process: every log is cut at the end of its valid prefix
    /// as read, so a write in flight is not copied half done.
    live: bool,
}

/// Decides what to keep of `only` (every session when empty) and the claims log.
pub fn plan<'a>(source: &'a dyn Storage, only: &[String]) -> Result<SalvagePlan<'a>> {
    read_marker(source)?;
    let (ids, strays) = list_sessions(source)?;
    let mut plan = SalvagePlan {
        view: CutView::new(source),
        sessions: Vec::new(),
        report: SalvageReport::default(),
        live: source
            .is_locked(Path::new(crate::root::LOCK_FILE))
            .unwrap_or(false),
    };
    for stray in strays {
        plan.leave(stray, 0, "not a session directory");
    }
    for id in only {
        if !ids.contains(id) {
            return Err(Error::InvalidInput(format!(
                "no session {id} in the source"
            )));
        }
    }
    for id in ids.iter().filter(|id| only.is_empty() || only.contains(id)) {
        plan.session(source, id)?;
    }
    plan.claims(source)?;
    Ok(plan)
}

impl SalvagePlan<'_> {
    fn leave(&mut self, file: PathBuf, from: u64, why: impl Into<String>) {
        self.report.left_behind.push(LeftBehind {
            file,
            from,
            why: why.into(),
        });
    }

    fn session(&mut self, source: &dyn Storage, id: &str) -> Result<()> {
        let listing = list_session(source, id)?;
        for p in listing.torn.iter() {
            self.leave(
                p.clone(),
                0,
                "a torn tail recovery kept aside: not part of the log",
            );
        }
        for p in listing.strays.iter() {
            self.leave(p.clone(), 0, "not a segment, quarantine file or sidecar");
        }
        // The sidecar is rebuilt from what is kept.
        if let Some(p) = &listing.sidecar {
            self.view.cut(p, Cut::Hidden);
        }
        let (_, scanned) = scan_session_files(source, id, None)?;
        let check = check_session(id, &scanned, None);
        let chain = session_chain(source, id)?;
        let bad_payload = payload_problems(source, id).into_iter().next();
        let keep = bad_payload
            .as_ref()
            .map_or(chain.head_seq(), |p| p.seq - 1)
            .min(chain.head_seq());
        let intact = check.problems.is_empty() && bad_payload.is_none();
        debug_assert!(
            !intact || keep == check.record_count,
            "an intact log is kept whole"
        );
        let why = bad_payload
            .map(|p| p.describe())
            .or_else(|| check.problems.first().map(|p| p.describe()))
            .or_else(|| chain.stopped.clone())
            .unwrap_or_default();
        self.report.sessions.push(SessionKept {
            session_id: id.to_owned(),
            kept: keep,
            valid_frames: chain.head_seq(),
            intact,
        });
        if intact && !self.live {
            self.sessions.push(id.to_owned());
            return Ok(());
        }
        let last = chain.at(keep).cloned();
        let mut past = last.is_none();
        let mut why = Some(why);
        for seg in &listing.segments {
            let from = if past {
                self.view.cut(&seg.path, Cut::Hidden);
                0
            } else if let Some(l) = last.as_ref().filter(|l| l.file == seg.path) {
                self.view.cut(&seg.path, Cut::At(l.end));
                past = true;
                l.end
            } else {
                continue;
            };
            if !intact {
                // The first piece left says why; the rest follow from it.
                let reason = why.take().unwrap_or_else(|| "after the piece above".into());
                self.leave(seg.path.clone(), from, reason);
            }
        }
        if last.is_some() {
            self.sessions.push(id.to_owned());
        } else if let Some(dir_sidecar) = &listing.sidecar {
            self.leave(dir_sidecar.clone(), 0, "the session kept no record");
        }
        Ok(())
    }

    fn claims(&mut self, source: &dyn Storage) -> Result<()> {
        let root_id = read_marker(source)?.root_id_bytes()?;
        let bytes = match crate::storage::data_end::read_data(source, Path::new(CLAIMS_FILE)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.view.cut(CLAIMS_FILE, Cut::Hidden);
                self.leave(CLAIMS_FILE.into(), 0, format!("cannot be read: {e}"));
                return Ok(());
            }
        };
        let replay = replay_claims(&bytes, &root_id);
        if self.live && replay.problems.is_empty() {
            self.view.cut(CLAIMS_FILE, Cut::At(replay.data_end));
        }
        if let Some(p) = replay.problems.first() {
            if replay.data_end == 0 {
                self.view.cut(CLAIMS_FILE, Cut::Hidden);
                self.leave(CLAIMS_FILE.into(), 0, p.describe());
                return Ok(());
            }
            self.view.cut(CLAIMS_FILE, Cut::At(replay.data_end));
            self.leave(CLAIMS_FILE.into(), replay.data_end, p.describe());
        }
        self.report.claims_kept = Some(replay.record_count);
        Ok(())
    }
}

/// Writes `plan` into `target`, a root that must not exist yet (its parent must) or be an
/// empty directory. The marker is written last, after every other file and directory is
/// synced, so an interrupted salvage leaves a directory that is not a root.
pub fn write(
    plan: &SalvagePlan<'_>,
    target: &dyn Storage,
    progress: &dyn Fn(&str),
) -> Result<SalvageReport> {
    let mut report = plan.report.clone();
    match target.create_dir(Path::new("")) {
        Ok(()) => {}
        // An empty directory made for it will do; anything in it is someone's.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let empty = target.list_dir(Path::new("")).is_ok_and(|e| e.is_empty());
            if !empty {
                return Err(Error::InvalidInput(format!(
                    "{} exists and is not an empty directory: salvage writes only a new root",
                    target.describe_root().display()
                )));
            }
        }
        Err(e) => return Err(Error::io("", "create the new root", e)),
    }
    let view: &dyn Storage = &plan.view;
    let mut written = |n: u64| {
        report.bytes += n;
        report.files += 1;
    };
    if view
        .entry_kind(Path::new(CLAIMS_FILE))
        .ok()
        .flatten()
        .is_some()
    {
        written(copy_file(view, target, Path::new(CLAIMS_FILE))?);
    }
    let sessions_dir = Path::new(SESSIONS_DIR);
    target
        .create_dir(sessions_dir)
        .map_err(|e| Error::io(sessions_dir, "create directory", e))?;
    for id in &plan.sessions {
        progress(id);
        let dir = session_dir(id);
        target
            .create_dir(&dir)
            .map_err(|e| Error::io(&dir, "create directory", e))?;
        for seg in list_session(view, id)?.segments {
            written(copy_file(view, target, &seg.path)?);
        }
        let index = rebuild(view, id)?;
        let path = dir.join(SIDECAR_FILE);
        let bytes = encode_sidecar(&index, &[]).map_err(|e| Error::corrupt(&path, 0, e.what))?;
        write_new(target, &path, &bytes)?;
        written(bytes.len() as u64);
        target
            .sync_dir(&dir)
            .map_err(|e| Error::io(&dir, "sync directory", e))?;
    }
    target
        .sync_dir(sessions_dir)
        .map_err(|e| Error::io(sessions_dir, "sync directory", e))?;
    written(copy_file(view, target, Path::new(MARKER_FILE))?);
    target
        .sync_dir(Path::new(""))
        .map_err(|e| Error::io("", "sync directory", e))?;
    Ok(report)
}

/// Copies one file as `from` shows it, in chunks, and syncs it; returns its length. Zeros
/// after the data are no data (FORMAT.md): only as many as a reader needs are kept
/// ([`needed_end`]), and a chunk of zeros is left a hole, so a sparse tail stays sparse.
fn copy_file(from: &dyn Storage, to: &dyn Storage, path: &Path) -> Result<u64> {
    const CHUNK: usize = 1 << 20;
    let src = from
        .open(path, OpenMode::Read)
        .map_err(|e| Error::io(path, "open", e))?;
    let end = needed_end(&*src, 0).map_err(|e| Error::io(path, "read", e))?;
    let dst = to
        .open(path, OpenMode::CreateNew)
        .map_err(|e| Error::io(path, "create", e))?;
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0u64;
    while at < end {
        let want = (end - at).min(CHUNK as u64) as usize;
        let n = src
            .read_full_at(&mut buf[..want], at)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|&b| b != 0) {
            dst.write_all_at(&buf[..n], at)
                .map_err(|e| Error::io(path, "write", e))?;
        }
        at += n as u64;
    }
    dst.set_len(at)
        .map_err(|e| Error::io(path, "set length", e))?;
    dst.sync_data().map_err(|e| Error::io(path, "sync", e))?;
    Ok(at)
}

fn write_new(to: &dyn Storage, path: &Path, bytes: &[u8]) -> Result<()> {
    let f = to
        .open(path, OpenMode::CreateNew)
        .map_err(|e| Error::io(path, "create", e))?;
    f.write_all_at(bytes, 0)
        .map_err(|e| Error::io(path, "write", e))?;
    f.sync_data().map_err(|e| Error::io(path, "sync", e))
}
