//! `makalog export ROOT [--session ID...] -o BUNDLE.tar`: a self-verifying bundle of a root's
//! files, ending with a manifest of every file's SHA-256, each log's head, the root id, the
//! tool and when it was made. Written to a temporary name, synced and renamed into place.

use crate::bundle::{FileEntry, Manifest, MANIFEST_NAME};
use makalog::claims::CLAIMS_FILE;
use makalog::forensics::{claims_head, durable_view, session_head, RootHeads};
use makalog::root::{read_marker, LOCK_FILE};
use makalog::segment::layout::SESSIONS_DIR;
use makalog::storage::{
    CutView, EntryKind, MemStorage, OpenMode, RealStorage, Storage, StorageFile,
};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(root: &Path, only: &[String], out: &Path, as_json: bool) -> ExitCode {
    for id in only {
        if let Err(why) = makalog::format::validate_session_id(id) {
            return crate::usage_error(why);
        }
    }
    if let Err(why) = crate::outside::outside_root(root, out) {
        return crate::usage_error(why);
    }
    let source = RealStorage::unmapped(root);
    let marker = match read_marker(&source) {
        Ok(m) => m,
        Err(e) => return crate::usage_error(e),
    };
    let (dir, name) = match (out.parent(), out.file_name()) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n.to_string_lossy().into_owned(),
        ),
        _ => return crate::usage_error(format!("{}: not a file name", out.display())),
    };
    let target = RealStorage::unmapped(dir);
    if !matches!(target.entry_kind(Path::new(&name)), Ok(None)) {
        return crate::usage_error(format!(
            "{}: exists (or cannot be checked): export writes only a new file",
            out.display()
        ));
    }
    let live = source.is_locked(Path::new(LOCK_FILE)).unwrap_or(false);
    let view = if live {
        match durable_view(&source) {
            Ok((v, _)) => v,
            Err(e) => return failed(e),
        }
    } else {
        CutView::new(&source)
    };
    let (files, skipped) = match list_files(&view, only) {
        Ok(x) => x,
        Err(e) => return crate::usage_error(e),
    };
    let partial = format!(".{name}.partial");
    // Made here, so that only a file this export made is removed when it fails: one already
    // under the name (another export's in progress) is left alone.
    let file = match target.open(Path::new(&partial), OpenMode::CreateNew) {
        Ok(f) => f,
        Err(e) => {
            tell!("makalog: {}: create {partial}: {e}", out.display());
            return ExitCode::from(1);
        }
    };
    let made = match write_bundle(&view, &files, file, &marker.root_id, live, only) {
        Ok(m) => m,
        Err(why) => {
            let _ = target.remove_file(Path::new(&partial));
            tell!("makalog: {}: {why}", out.display());
            return ExitCode::from(1);
        }
    };
    if let Err(e) = target
        .rename(Path::new(&partial), Path::new(&name))
        .and_then(|()| target.sync_dir(Path::new("")))
    {
        tell!("makalog: {}: {e}", out.display());
        return ExitCode::from(1);
    }
    if as_json {
        say!(
            "{}",
            serde_json::json!({"bundle": out.display().to_string(), "files": made.files,
                "bytes": made.bytes, "sha256": made.sha256, "live": live,
                "skipped": skipped.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()})
        );
    } else {
        for p in &skipped {
            say!(
                "skipped {}: not a regular file, or a name that is not UTF-8",
                p.display()
            );
        }
        say!(
            "exported {} files ({} bytes) of root {} into {}{}",
            made.files,
            made.bytes,
            marker.root_id,
            out.display(),
            if live {
                " (live root: each log as far as it was valid)"
            } else {
                ""
            }
        );
        say!("sha256 of the bundle: {}", made.sha256);
        say!("check it with: makalog verify {}", out.display());
    }
    ExitCode::SUCCESS
}

fn failed(e: makalog::Error) -> ExitCode {
    tell!("makalog: {e}");
    ExitCode::from(1)
}

/// Every regular file of the root but the lock (the selected sessions' only, when `only` is
/// not empty), in name order; entries that are not regular files apart.
fn list_files(view: &dyn Storage, only: &[String]) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let entries = view
            .list_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in entries {
            let path = dir.join(&e.name);
            let depth = path.components().count();
            match e.kind {
                EntryKind::File if depth == 1 && e.name == LOCK_FILE => {}
                EntryKind::File => files.push(path),
                EntryKind::Dir if depth == 2 && !only.is_empty() && !only.contains(&e.name) => {}
                // A root is three levels deep: root, sessions/, a session's files.
                EntryKind::Dir if depth < 3 => stack.push(path),
                _ => skipped.push(path),
            }
        }
    }
    for id in only {
        let dir = makalog::segment::layout::session_dir(id);
        if !matches!(view.entry_kind(&dir), Ok(Some(EntryKind::Dir))) {
            return Err(format!("no session {id} in the root"));
        }
    }
    // By the bytes of the paths, as FORMAT.md orders a bundle (an order by components puts
    // `sessions/a/…` before `sessions/a-b/…`).
    files.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    Ok((files, skipped))
}

struct Made {
    files: u64,
    bytes: u64,
    sha256: String,
}

/// Writes through the storage seam, hashing what it writes.
struct SeamWriter {
    file: Box<dyn StorageFile>,
    at: u64,
    hash: Sha256,
}

impl Write for SeamWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all_at(buf, self.at)?;
        self.at += buf.len() as u64;
        self.hash.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn write_bundle(
    view: &dyn Storage,
    files: &[PathBuf],
    file: Box<dyn StorageFile>,
    root_id: &str,
    live: bool,
    only: &[String],
) -> Result<Made, String> {
    let made_at = crate::time::now_iso8601();
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut tar = tar::Builder::new(SeamWriter {
        file,
        at: 0,
        hash: Sha256::new(),
    });
    let mut entries = Vec::with_capacity(files.len());
    let mut heads = RootHeads {
        root_id: root_id.to_owned(),
        sessions: Vec::new(),
        claims: None,
        damaged: Vec::new(),
    };
    let mut bytes = 0;
    let bar = crate::progress::bar("exporting", files.len() as u64);
    // One log's files at a time (a session's, or the root's own with the claims log): the
    // heads are of exactly the bytes bundled, and only that log's bytes are held meanwhile.
    for group in files.chunk_by(|a, b| log_of(a) == log_of(b)) {
        let mut arena = Vec::new();
        let mut ranges = Vec::with_capacity(group.len());
        for path in group {
            let read = view
                .read_file(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            append(&mut tar, path, &read, mtime)?;
            entries.push(FileEntry {
                path: path.display().to_string(),
                bytes: read.len() as u64,
                sha256: makalog::format::hex(&Sha256::digest(&read)),
            });
            ranges.push((path.clone(), arena.len()..arena.len() + read.len()));
            arena.extend_from_slice(&read);
            bar.inc(1);
        }
        bytes += arena.len() as u64;
        let held = MemStorage::new("bundle", Arc::new(arena), ranges)?;
        match log_of(&group[0]) {
            // Whether a log ends at damage is not part of the manifest's heads.
            Some(id) => {
                let (head, _) = session_head(&held, id, false);
                heads.sessions.extend(head.map(|h| (id.to_owned(), h)));
            }
            None if group.iter().any(|p| p == Path::new(CLAIMS_FILE)) => {
                let (claims, _) = claims_head(&held, false).map_err(|e| e.to_string())?;
                heads.claims = claims;
            }
            None => {}
        }
    }
    bar.finish_and_clear();
    // As a listing of the bundled root orders them: by id.
    heads.sessions.sort_by(|a, b| a.0.cmp(&b.0));
    let manifest = Manifest {
        format: crate::bundle::BUNDLE_FORMAT.into(),
        tool: crate::heads::tool(),
        made_at: made_at.clone(),
        root_id: root_id.to_owned(),
        live,
        sessions: (!only.is_empty()).then(|| only.to_vec()),
        files: entries,
        heads: heads.to_json(&crate::heads::tool(), &made_at),
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
    append(&mut tar, Path::new(MANIFEST_NAME), &text, mtime)?;
    let writer = tar.into_inner().map_err(|e| e.to_string())?;
    writer.file.sync_data().map_err(|e| format!("sync: {e}"))?;
    Ok(Made {
        files: files.len() as u64,
        bytes,
        sha256: makalog::format::hex(&writer.hash.finalize()),
    })
}

/// The session whose log `path` belongs to (`sessions/ID/…`); `None` for the root's own files
/// (its marker and claims log among them) and for strays: a file directly under `sessions/`,
/// or under a directory whose name is no session id (which no listing of sessions names).
fn log_of(path: &Path) -> Option<&str> {
    let mut parts = path.components();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(first), Some(id), Some(_)) if first.as_os_str() == SESSIONS_DIR => id
            .as_os_str()
            .to_str()
            .filter(|id| makalog::format::validate_session_id(id).is_ok()),
        _ => None,
    }
}

fn append(
    tar: &mut tar::Builder<SeamWriter>,
    path: &Path,
    bytes: &[u8],
    mtime: u64,
) -> Result<(), String> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(mtime);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, path, bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}
