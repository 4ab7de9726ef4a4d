//! The export bundle and `makalog verify BUNDLE.tar`: the bundle is checked where it lies,
//! its entries read in place and verified as a root, never extracted nor held whole.

mod in_place;
mod meta_headers;
#[cfg(test)]
mod tests;

use in_place::{digest, read_range, SeamReader};
use makalog::forensics::{LogHead, RootHeads};
use makalog::storage::{MemStorage, OpenMode, RealStorage, Storage, StorageFile};
use makalog::verify::{verify_root, VerifyReport};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The manifest's name: the bundle's last entry.
pub const MANIFEST_NAME: &str = "makalog-manifest.json";
/// The most names deep a root's file lies: `sessions/<id>/<file>`.
const ROOT_DEPTH: usize = 3;
/// The manifest's format name and version.
pub const BUNDLE_FORMAT: &str = "makalog-bundle/1";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub tool: String,
    pub made_at: String,
    pub root_id: String,
    /// True when the root was owned by a live process: each log was cut at its valid prefix.
    pub live: bool,
    /// The sessions exported, when not all of them were.
    pub sessions: Option<Vec<String>>,
    pub files: Vec<FileEntry>,
    /// The heads of the bundle's logs, as `makalog heads --json` writes them.
    pub heads: serde_json::Value,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// What checking a bundle found.
struct Checked {
    findings: Vec<String>,
    manifest: Option<Manifest>,
    files: usize,
    verified: Option<makalog::verify::VerifyReport>,
}

pub fn verify(bundle: &Path, as_json: bool) -> ExitCode {
    let dir = bundle
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = bundle.file_name().map(PathBuf::from).unwrap_or_default();
    let opened = RealStorage::unmapped(dir)
        .open(&name, OpenMode::Read)
        .and_then(|f| f.size().map(|len| (Arc::<dyn StorageFile>::from(f), len)));
    let (file, len) = match opened {
        Ok(f) => f,
        Err(e) => return crate::usage_error(format!("{}: {e}", bundle.display())),
    };
    let checked = match crate::progress::spinner("checking the bundle", || check(&file, len)) {
        Ok(c) => c,
        Err(why) => {
            return crate::usage_error(format!("{}: not a bundle: {why}", bundle.display()))
        }
    };
    let clean = checked.findings.is_empty();
    if as_json {
        say!(
            "{}",
            serde_json::json!({
                "bundle": bundle.display().to_string(),
                "clean": clean,
                "files": checked.files,
                "findings": checked.findings,
                "madeAt": checked.manifest.as_ref().map(|m| &m.made_at),
                "tool": checked.manifest.as_ref().map(|m| &m.tool),
                "rootId": checked.manifest.as_ref().map(|m| &m.root_id),
                "verify": checked.verified.as_ref().map(crate::verify::report_json),
            })
        );
    } else {
        if let Some(m) = &checked.manifest {
            say!(
                "bundle {}: made {} by {} from root {}{}",
                bundle.display(),
                m.made_at,
                m.tool,
                m.root_id,
                if m.live { " (a live root)" } else { "" }
            );
        }
        if let Some(v) = &checked.verified {
            crate::verify::print(v);
        }
        for f in &checked.findings {
            say!("{}: {f}", bundle.display());
        }
        if clean {
            say!(
                "clean: {} files, each matching its SHA-256 in the manifest, none missing or extra; the root verifies clean and its heads match the manifest",
                checked.files
            );
        } else {
            say!("{} findings", checked.findings.len());
        }
    }
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Checks the bundle `file`, `bundle_len` bytes long; `Err` when it is not a bundle at all.
fn check(file: &Arc<dyn StorageFile>, bundle_len: u64) -> Result<Checked, String> {
    let mut findings = Vec::new();
    let mut entries: Vec<(PathBuf, std::ops::Range<usize>)> = Vec::new();
    let mut manifest_bytes: Option<std::ops::Range<usize>> = None;
    // Entries are found by their headers, their bytes passed over by seeking (only a GNU long
    // name's or a PAX header's are read, by the tar reader, once their length is known short).
    meta_headers::refuse_long_meta(&**file, bundle_len)?;
    let mut archive = tar::Archive::new(SeamReader {
        file: Arc::clone(file),
        at: 0,
        len: bundle_len,
    });
    let iter = archive.entries_with_seek().map_err(|e| brief(&e))?;
    for entry in iter {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if entries.is_empty() && manifest_bytes.is_none() => return Err(brief(&e)),
            Err(e) => {
                findings.push(format!(
                    "the archive is damaged after {} entries: {e}",
                    entries.len()
                ));
                break;
            }
        };
        let at = entry.raw_header_position();
        let path = match entry.path() {
            Ok(p) => p.into_owned(),
            Err(e) => {
                findings.push(format!("entry at byte {at}: its name does not decode: {e}"));
                continue;
            }
        };
        if entry.header().entry_type() != tar::EntryType::Regular {
            findings.push(format!(
                "entry at byte {at} ({}): not a regular file",
                path.display()
            ));
            continue;
        }
        // Each of an entry's directories is kept by its whole path: a name of a thousand levels
        // would cost its length squared.
        let depth = path.components().count();
        if depth > ROOT_DEPTH {
            findings.push(format!(
                "entry at byte {at}: {depth} names deep, deeper than any file of a root \
                 ({ROOT_DEPTH}: sessions/<id>/<file>); left out"
            ));
            continue;
        }
        let start = usize::try_from(entry.raw_file_position()).unwrap_or(usize::MAX);
        let len = usize::try_from(entry.size()).unwrap_or(usize::MAX);
        let range = start..start.saturating_add(len);
        if range.end as u64 > bundle_len {
            findings.push(format!(
                "entry at byte {at} ({}): its bytes run past the end of the bundle",
                path.display()
            ));
            break;
        }
        if manifest_bytes.is_some() {
            findings.push(format!(
                "entry at byte {at} ({}): after the manifest",
                path.display()
            ));
        }
        if path == Path::new(MANIFEST_NAME) {
            manifest_bytes = Some(range);
        } else {
            entries.push((path, range));
        }
    }
    let Some(m) = manifest_bytes else {
        if entries.is_empty() {
            return Err("no entries".into());
        }
        findings.push(format!(
            "no {MANIFEST_NAME}: the bundle is incomplete (cut short?)"
        ));
        return Ok(Checked {
            findings,
            manifest: None,
            files: entries.len(),
            verified: None,
        });
    };
    let manifest_bytes = read_range(file, &m).map_err(|e| format!("{MANIFEST_NAME}: {e}"))?;
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes)
        .map_err(|e| format!("{MANIFEST_NAME} does not decode: {e}"))?;
    drop(manifest_bytes);
    if manifest.format != BUNDLE_FORMAT {
        return Err(format!(
            "{MANIFEST_NAME}: format {:?} is not {BUNDLE_FORMAT:?}",
            manifest.format
        ));
    }
    check_files(file, &entries, &manifest, &mut findings);
    let files = entries.len();
    let held = match MemStorage::over_file("bundle", Arc::clone(file), bundle_len, entries) {
        Ok(h) => h,
        Err(why) => {
            findings.push(why);
            return Ok(Checked {
                findings,
                manifest: Some(manifest),
                files,
                verified: None,
            });
        }
    };
    let verified = match verify_root(&held) {
        Ok(v) => {
            findings.extend(v.findings.iter().map(|f| format!("in the bundle: {f}")));
            Some(v)
        }
        Err(e) => {
            findings.push(format!("in the bundle: {e}"));
            None
        }
    };
    check_heads(verified.as_ref(), &manifest, &mut findings);
    Ok(Checked {
        findings,
        manifest: Some(manifest),
        files,
        verified,
    })
}

/// Every file the manifest lists is there with its length and SHA-256, and nothing else is.
fn check_files(
    file: &Arc<dyn StorageFile>,
    entries: &[(PathBuf, std::ops::Range<usize>)],
    manifest: &Manifest,
    findings: &mut Vec<String>,
) {
    let listed: BTreeMap<&str, &FileEntry> = manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let largest = entries.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let mut block = vec![0u8; largest.clamp(1, 1 << 20)];
    for (path, range) in entries {
        let name = path.display().to_string();
        let Some(want) = listed.get(name.as_str()) else {
            findings.push(format!("{name}: in the bundle but not in the manifest"));
            continue;
        };
        seen.insert(want.path.as_str());
        let (read, got) = match digest(file, range, &mut block) {
            Ok(d) => d,
            Err(e) => {
                findings.push(format!("{name}: {e}"));
                continue;
            }
        };
        if read != want.bytes || got != want.sha256 {
            findings.push(format!(
                "{name}: {read} bytes with SHA-256 {got}, the manifest says {} bytes with {}",
                want.bytes, want.sha256
            ));
        }
    }
    for f in &manifest.files {
        if !seen.contains(f.path.as_str()) {
            findings.push(format!(
                "{}: in the manifest but missing from the bundle",
                f.path
            ));
        }
    }
}

/// The heads of the bundle's logs are the ones the manifest recorded, of the same root. The
/// bundle's heads are the ones its verification found (`verified`), so its logs are not read
/// again for them; without a verification, only the root ids are compared.
fn check_heads(verified: Option<&VerifyReport>, manifest: &Manifest, findings: &mut Vec<String>) {
    let recorded = match RootHeads::from_json(&manifest.heads.to_string()) {
        Ok(r) => r,
        Err(why) => return findings.push(format!("the manifest's heads do not decode: {why}")),
    };
    let marker = verified.map_or("(unread)", |v| v.marker.root_id.as_str());
    if recorded.root_id != manifest.root_id || verified.is_some_and(|_| marker != manifest.root_id)
    {
        findings.push(format!(
            "root ids disagree: the manifest says {}, its heads {}, the bundle's marker {marker}",
            manifest.root_id, recorded.root_id
        ));
    }
    let Some(verified) = verified else {
        return;
    };
    // Looked up by id (decoding refused a session named twice): a crafted manifest's list may
    // be long.
    let was: BTreeMap<String, LogHead> = recorded.sessions.iter().cloned().collect();
    // A session whose files could not be scanned has no head (verify says why), as the
    // export left it out of the manifest's.
    let is: BTreeMap<String, LogHead> = verified
        .sessions
        .iter()
        .filter(|s| s.scanned)
        .map(|s| {
            let head = LogHead {
                records: s.record_count,
                head_seq: s.head_seq,
                chain: s.head_chain,
            };
            (s.session_id.clone(), head)
        })
        .collect();
    let ids: BTreeSet<&String> = was.keys().chain(is.keys()).collect();
    for id in ids {
        if was.get(id) != is.get(id) {
            findings.push(format!(
                "session {id}: its head is not the one the manifest recorded"
            ));
        }
    }
    let claims = verified.claims.as_ref().map(|c| LogHead {
        records: c.record_count,
        head_seq: c.head_seq,
        chain: c.head_chain,
    });
    if recorded.claims != claims {
        findings.push("claims.log: its head is not the one the manifest recorded".into());
    }
}

/// An archive error in one short line: the tar reader quotes the bytes it could not read,
/// which in a file that is not a bundle can be anything.
fn brief(e: &std::io::Error) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
