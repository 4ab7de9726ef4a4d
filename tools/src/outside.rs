//! Where a command that reads a root may write: never inside that root. A root under
//! investigation is evidence, and `report`, `export` and `salvage` promise to write nothing
//! into the root they read.

use std::path::{Path, PathBuf};

/// Refuses `out`, a file or directory a command is about to make, when it would be inside
/// `root`. Both are compared with their symlinks resolved, `out` from its nearest existing
/// ancestor (what follows it does not exist yet, so it is no symlink). A root that cannot be
/// resolved is left to the command's own check of it.
pub fn outside_root(root: &Path, out: &Path) -> Result<(), String> {
    let Ok(root) = root.canonicalize() else {
        return Ok(());
    };
    let mut rest = Vec::new();
    let mut at = absolute(out);
    let resolved = loop {
        if let Ok(resolved) = at.canonicalize() {
            break resolved;
        }
        match (at.file_name().map(ToOwned::to_owned), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return Ok(()),
        }
    };
    let whole = rest.iter().rev().fold(resolved, |p, name| p.join(name));
    if whole.starts_with(&root) {
        return Err(format!(
            "{} is inside the root {}: a command reading a root writes nothing into it",
            out.display(),
            root.display()
        ));
    }
    Ok(())
}

/// `path` made absolute against the working directory, without resolving anything.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
