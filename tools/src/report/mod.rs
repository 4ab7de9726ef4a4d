//! `makalog report ROOT -o report.html`: verify status and findings, heads, the session tree,
//! the claims, and per session a timeline drawn as SVG with its runs, invocations and claims;
//! one self-contained HTML file.

mod gather;
pub mod html;
mod svg;

use makalog::storage::RealStorage;
use makalog::Error;
use std::path::Path;
use std::process::ExitCode;

pub fn run(root: &Path, out: &Path) -> ExitCode {
    let storage = RealStorage::unmapped(root);
    if let Err(e) = makalog::root::read_marker(&storage) {
        return crate::usage_error(e);
    }
    let sessions =
        makalog::segment::layout::list_sessions(&storage).map_or(0, |(ids, _)| ids.len());
    let bar = crate::progress::bar("reading sessions", sessions as u64);
    let gathered = gather::gather(&storage, &|| bar.inc(1));
    bar.finish_and_clear();
    let g = match gathered {
        Ok(g) => g,
        Err(e @ Error::NotARoot { .. }) => return crate::usage_error(e),
        Err(e) => {
            eprintln!("makalog: {e}");
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
    if let Err(e) = makalog::storage::write_atomically(&target, Path::new(name), page.as_bytes()) {
        eprintln!("makalog: {}: {e}", out.display());
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
