//! The additional-permission profile of an `additional_permissions` request: file-system entries
//! and network access, validated as HEAD's `validateAdditionalPermissionProfile` does.

use super::super::fields::{
    expect_array, expect_object, expect_one_of, expect_str, invalid, Result,
};
use super::super::text::utf16_len;
use crate::event::canonical::canonical_string;
use crate::event::path::Path;
use serde_json::{json, Value};

/// At most 32 file-system entries.
const MAX_ENTRIES: usize = 32;
/// Entry paths are at most 4096 UTF-16 code units.
const MAX_PATH: usize = 4096;
/// The compacted profile serializes to at most 64 KiB.
const MAX_SERIALIZED_BYTES: usize = 64 * 1024;

/// One file-system entry.
struct Entry<'a> {
    path: &'a str,
    write: bool,
    subtree: bool,
}

/// Checks a profile: only `fileSystem` and `network`, at least one permission, normalized
/// absolute paths, and a compacted serialization within 64 KiB. The profile is kept as given.
pub fn check_profile(value: &Value, path: &Path) -> Result<()> {
    let profile = expect_object(value, path)?;
    if let Some(key) = profile
        .keys()
        .find(|k| *k != "fileSystem" && *k != "network")
    {
        return Err(invalid(&path.key(key), "unknown key"));
    }
    let mut entries = Vec::new();
    if let Some(fs) = profile.get("fileSystem") {
        let fs_path = path.key("fileSystem");
        let fs = expect_object(fs, &fs_path)?;
        if let Some(key) = fs.keys().find(|k| *k != "entries") {
            return Err(invalid(&fs_path.key(key), "unknown key"));
        }
        let list_path = fs_path.key("entries");
        let list = match fs.get("entries") {
            None => return Err(invalid(&list_path, "missing required key")),
            Some(list) => expect_array(list, &list_path)?,
        };
        if list.len() > MAX_ENTRIES {
            return Err(invalid(&list_path, "at most 32 entries"));
        }
        for (i, item) in list.iter().enumerate() {
            entries.push(entry(item, &list_path.index(i))?);
        }
    }
    let network = match profile.get("network") {
        None => false,
        Some(network) => {
            let at = path.key("network");
            let ok = network
                .as_object()
                .is_some_and(|n| n.len() == 1 && n.get("enabled") == Some(&Value::Bool(true)));
            if !ok {
                return Err(invalid(&at, "must be {\"enabled\":true}"));
            }
            true
        }
    };
    if entries.is_empty() && !network {
        return Err(invalid(path, "must grant at least one permission"));
    }
    if compacted_size(&entries, network) > MAX_SERIALIZED_BYTES {
        return Err(invalid(path, "serializes to more than 64 KiB"));
    }
    Ok(())
}

fn entry<'a>(value: &'a Value, path: &Path) -> Result<Entry<'a>> {
    let entry = expect_object(value, path)?;
    if let Some(key) = entry
        .keys()
        .find(|k| !matches!(k.as_str(), "path" | "access" | "scope"))
    {
        return Err(invalid(&path.key(key), "unknown key"));
    }
    let member = |key: &str| {
        entry
            .get(key)
            .ok_or_else(|| invalid(&path.key(key), "missing required key"))
    };
    let file = expect_str(member("path")?, &path.key("path"))?;
    let access = expect_one_of(member("access")?, &path.key("access"), &["read", "write"])?;
    let scope = expect_one_of(member("scope")?, &path.key("scope"), &["exact", "subtree"])?;
    if !is_normalized_absolute(file) {
        return Err(invalid(
            &path.key("path"),
            "must be a normalized absolute path",
        ));
    }
    if utf16_len(file) > MAX_PATH {
        return Err(invalid(
            &path.key("path"),
            "longer than 4096 UTF-16 code units",
        ));
    }
    Ok(Entry {
        path: file,
        write: access == "write",
        subtree: scope == "subtree",
    })
}

/// A POSIX path `/a/b` or a Windows drive path `C:\a\b`, with no empty, `.` or `..` segment and
/// no trailing separator (except at the root).
fn is_normalized_absolute(path: &str) -> bool {
    if path.is_empty() || path.contains('\0') {
        return false;
    }
    if is_drive_path(path) {
        if path.contains('/') || (path.len() > 3 && path.ends_with('\\')) {
            return false;
        }
        return path.len() == 3
            || path
                .get(3..)
                .unwrap_or_default()
                .split('\\')
                .all(|s| !s.is_empty() && s != "." && s != "..");
    }
    if !path.starts_with('/') || path.contains('\\') {
        return false;
    }
    if path.len() > 1 && path.ends_with('/') {
        return false;
    }
    // As in the original, `/` alone is refused too: its one segment after the root is empty.
    path.split('/')
        .skip(1)
        .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// `^[A-Za-z]:\\`.
fn is_drive_path(path: &str) -> bool {
    let b = path.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
}

/// The path as the original compares it: Windows drive paths case-insensitively.
fn comparable(path: &str) -> String {
    if is_drive_path(path) {
        path.to_lowercase()
    } else {
        path.to_string()
    }
}

/// `candidate` lies at or under `root`.
fn within(candidate: &str, root: &str) -> bool {
    if is_drive_path(candidate) != is_drive_path(root) {
        return false;
    }
    let (candidate, root) = (comparable(candidate), comparable(root));
    if root == "/" {
        return candidate.starts_with('/');
    }
    let separator = if is_drive_path(&root) { '\\' } else { '/' };
    candidate == root || candidate.starts_with(&format!("{root}{separator}"))
}

/// `existing` grants everything `candidate` does.
fn covers(existing: &Entry, candidate: &Entry) -> bool {
    if candidate.write && !existing.write {
        return false;
    }
    if !existing.subtree {
        return !candidate.subtree
            && is_drive_path(existing.path) == is_drive_path(candidate.path)
            && comparable(existing.path) == comparable(candidate.path);
    }
    within(candidate.path, existing.path)
}

/// The UTF-8 size of `JSON.stringify` of the compacted profile: entries another entry covers
/// are dropped, and of equivalent entries the first is kept.
fn compacted_size(entries: &[Entry], network: bool) -> usize {
    let kept: Vec<Value> = entries
        .iter()
        .enumerate()
        .filter(|(i, entry)| {
            !entries.iter().enumerate().any(|(j, other)| {
                j != *i && covers(other, entry) && (!covers(entry, other) || j < *i)
            })
        })
        .map(|(_, e)| {
            json!({
                "path": e.path,
                "access": if e.write { "write" } else { "read" },
                "scope": if e.subtree { "subtree" } else { "exact" },
            })
        })
        .collect();
    let mut profile = serde_json::Map::new();
    if !kept.is_empty() {
        profile.insert("fileSystem".into(), json!({ "entries": kept }));
    }
    if network {
        profile.insert("network".into(), json!({ "enabled": true }));
    }
    canonical_string(&Value::Object(profile)).len()
}
