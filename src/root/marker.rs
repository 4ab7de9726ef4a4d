//! The root marker `.makalog-root.json`: schema version, kind, rootId and format version.

use crate::error::{Error, Result};
use crate::format::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::storage::{write_atomically, EntryKind, OpenMode, Storage};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::hash::{BuildHasher, Hasher};
use std::path::Path;

/// The marker's file name inside the root.
pub const MARKER_FILE: &str = ".makalog-root.json";

/// The only root kind.
pub const ROOT_KIND: &str = "interactive";

const MARKER_SCHEMA_VERSION: u32 = 1;
const MAX_MARKER_LEN: usize = 1025;

/// What the marker says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RootMarker {
    pub schema_version: u32,
    pub kind: String,
    /// 64 lowercase hex digits, random, kept for the life of the root.
    pub root_id: String,
    pub format_version: u16,
}

impl RootMarker {
    /// The rootId as 32 bytes.
    pub fn root_id_bytes(&self) -> Result<[u8; 32]> {
        crate::format::parse_hex32(&self.root_id)
            .ok_or_else(|| Error::InvalidInput("rootId is not 64 hex digits".into()))
    }

    fn validate(&self) -> std::result::Result<(), String> {
        if self.schema_version != MARKER_SCHEMA_VERSION {
            return Err(format!(
                "unsupported marker schema version {}",
                self.schema_version
            ));
        }
        if self.kind != ROOT_KIND {
            return Err(format!("root kind {:?}, expected {ROOT_KIND:?}", self.kind));
        }
        if self.root_id.len() != 64
            || !self
                .root_id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err("rootId is not 64 lowercase hex digits".into());
        }
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&self.format_version) {
            return Err(format!(
                "unsupported format version {} (this build reads {OLDEST_FORMAT_VERSION} to \
                 {FORMAT_VERSION})",
                self.format_version
            ));
        }
        Ok(())
    }
}

/// Reads and validates the marker of the root `storage` is rooted at.
pub fn read_marker(storage: &dyn Storage) -> Result<RootMarker> {
    let root = storage.describe_root();
    let not_root = |why: String| Error::NotARoot {
        path: root.clone(),
        why,
    };
    match storage
        .entry_kind(Path::new(""))
        .map_err(|e| Error::io(&root, "stat", e))?
    {
        Some(EntryKind::Dir) => {}
        Some(_) => return Err(not_root("it is not a directory".into())),
        None => return Err(not_root("it does not exist".into())),
    }
    let path = Path::new(MARKER_FILE);
    let file = match storage.open(path, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not_root(format!("no {MARKER_FILE}")))
        }
        Err(e) => return Err(not_root(format!("{MARKER_FILE}: {e}"))),
    };
    // Its size is checked before anything is read: a marker is small.
    let size = file.size().map_err(|e| Error::io(path, "stat", e))?;
    if size > MAX_MARKER_LEN as u64 {
        return Err(not_root(format!(
            "{MARKER_FILE} is larger than {MAX_MARKER_LEN} bytes"
        )));
    }
    let mut bytes = vec![0u8; size as usize];
    let done = file
        .read_full_at(&mut bytes, 0)
        .map_err(|e| Error::io(path, "read", e))?;
    bytes.truncate(done);
    let marker: RootMarker = crate::format::json_object::from_object(&bytes)
        .map_err(|e| not_root(format!("{MARKER_FILE} is malformed: {e}")))?;
    marker
        .validate()
        .map_err(|why| not_root(format!("{MARKER_FILE}: {why}")))?;
    Ok(marker)
}

/// Opens a root, creating the directory (mode 0700) and its marker if absent. An existing
/// marker is validated and kept; anything else at the path is refused with nothing written.
pub fn create_or_open_root(storage: &dyn Storage) -> Result<RootMarker> {
    let root = storage.describe_root();
    match storage
        .entry_kind(Path::new(""))
        .map_err(|e| Error::io(&root, "stat", e))?
    {
        None => storage
            .create_dir(Path::new(""))
            .map_err(|e| Error::io(&root, "create directory", e))?,
        Some(EntryKind::Dir) => {}
        Some(_) => {
            return Err(Error::NotARoot {
                path: root,
                why: "it is not a directory".into(),
            })
        }
    }
    match storage
        .entry_kind(Path::new(MARKER_FILE))
        .map_err(|e| Error::io(MARKER_FILE, "stat", e))?
    {
        Some(_) => read_marker(storage),
        None => {
            let marker = RootMarker {
                schema_version: MARKER_SCHEMA_VERSION,
                kind: ROOT_KIND.into(),
                root_id: random_root_id(),
                format_version: FORMAT_VERSION,
            };
            let mut bytes = serde_json::to_vec(&marker)
                .map_err(|e| Error::InvalidInput(format!("marker encoding: {e}")))?;
            bytes.push(b'\n');
            write_atomically(storage, Path::new(MARKER_FILE), &bytes)?;
            Ok(marker)
        }
    }
}

/// 64 hex digits from the process's OS-seeded hasher keys, the clock and the process id.
fn random_root_id() -> String {
    let mut h = Sha256::new();
    for i in 0..4u64 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(i);
        h.update(hasher.finish().to_le_bytes());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(now.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    crate::format::chain::chain_hex(&h.finalize().into())
}
