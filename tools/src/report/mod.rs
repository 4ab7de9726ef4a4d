//! `makalog report ROOT -o report.html`: verify status and findings, heads, the session tree,
//! the claims, and per session a timeline drawn as SVG with its runs, invocations and claims;
//! one self-contained HTML file.

mod gather;
pub mod html;
mod svg;

use makalog::storage::{OpenMode, RealStorage, Storage};
use makalog::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(root: &Path, out: &Path, sidecars: makalog::store::Sidecars) -> ExitCode {
    if let Err(why) = crate::outside::outside_root(root, out) {
        return crate::usage_error(why);
    }
    let storage = RealStorage::unmapped(root);
    if let Err(e) = makalog::root::read_marker(&storage) {
        return crate::usage_error(e);
    }
    let sessions =
        makalog::segment::layout::list_sessions(&storage).map_or(0, |(ids, _)| ids.len());
    let bar = crate::progress::bar("reading sessions", sessions as u64);
    let gathered = gather::gather(&storage, sidecars, &|| bar.inc(1));
    bar.finish_and_clear();
    let g = match gathered {
        Ok(g) => g,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            tell!("makalog: {e}");
            return ExitCode::from(1);
        }
    };
    let page = html::page(&root.display().to_string(), &g, &crate::time::now_iso8601());
    let (dir, name) = match (out.parent(), out.file_name()) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        ),
        _ => return crate::usage_error(format!("{}: not a file name", out.display())),
    };
    let target = RealStorage::unmapped(dir);
    if let Err(why) = publish(&target, Path::new(name), page.as_bytes()) {
        tell!("makalog: {}: {why}", out.display());
        return ExitCode::from(1);
    }
    say!(
        "wrote {} ({} bytes): {} sessions, verify {}",
        out.display(),
        page.len(),
        g.sessions.len(),
        if g.verify.is_clean() {
            "clean".to_owned()
        } else {
            format!("{} findings", g.verify.findings.len())
        }
    );
    if g.verify.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Writes `bytes` as `name` (replacing a report there) through `.NAME.partial`, made new,
/// synced and renamed into place. The directory is the user's: a partial file already there
/// (another report being written, or one a crash left) is refused, never removed, and only the
/// partial file this call made is removed when it fails.
fn publish(target: &RealStorage, name: &Path, bytes: &[u8]) -> Result<(), String> {
    let partial = PathBuf::from(format!(".{}.partial", name.display()));
    let file = target
        .open(&partial, OpenMode::CreateNew)
        .map_err(|e| format!("create {}: {e}", partial.display()))?;
    let written = file.write_all_at(bytes, 0).and_then(|()| file.sync_data());
    drop(file);
    // Removed only while it is still this call's: once renamed, the name is free for another.
    written
        .and_then(|()| target.rename(&partial, name))
        .map_err(|e| {
            let _ = target.remove_file(&partial);
            e.to_string()
        })?;
    target.sync_dir(Path::new("")).map_err(|e| e.to_string())
}
