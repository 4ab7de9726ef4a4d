//! The input of the whole-root target: a root directory packed as a list of files, so a
//! fuzzer can mutate names and bytes alike and a real root can seed it.
//!
//! Each entry is `[name length: u8][name: UTF-8, '/'-separated][data length: u32 LE][data]`.
//! A data length past the input's end takes what is left; a name that is not a plain relative
//! path (empty, `.`/`..` components, not UTF-8) skips its entry. At most [`MAX_ENTRIES`].

use std::path::PathBuf;

/// The most files an archive unpacks to.
pub const MAX_ENTRIES: usize = 64;

/// The files packed in `data`, in order.
pub fn unpack(data: &[u8]) -> Vec<(PathBuf, &[u8])> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() < MAX_ENTRIES {
        let Some((&name_len, after)) = rest.split_first() else {
            break;
        };
        let name_len = usize::from(name_len).min(after.len());
        let (name, after) = after.split_at(name_len);
        let Some(len) = after.get(..4) else { break };
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let after = &after[4..];
        let (bytes, after) = after.split_at(len.min(after.len()));
        rest = after;
        if let Some(path) = plain_path(name) {
            out.push((path, bytes));
        }
    }
    out
}

/// Packs files into an archive [`unpack`] reads back.
pub fn pack(files: &[(PathBuf, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, bytes) in files {
        let name = path.to_string_lossy();
        let name = name.as_bytes();
        debug_assert!(
            name.len() <= usize::from(u8::MAX),
            "a name fits its length byte"
        );
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

fn plain_path(name: &[u8]) -> Option<PathBuf> {
    let name = std::str::from_utf8(name).ok()?;
    let parts: Vec<&str> = name.split('/').collect();
    let plain = |p: &&str| !p.is_empty() && *p != "." && *p != ".." && !p.contains('\0');
    parts.iter().all(plain).then(|| parts.iter().collect())
}
