//! The bundle read in place, through the storage seam: the tar reader's view of the file,
//! a range of it read whole (the manifest, bounded), and a range hashed a block at a time.

use makalog::storage::StorageFile;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The bundle read through the storage seam, for the tar reader.
pub(super) struct SeamReader {
    pub(super) file: Arc<dyn StorageFile>,
    pub(super) at: u64,
    pub(super) len: u64,
}

impl std::io::Read for SeamReader {
    /// Reads no further than the length the bundle had when opened, which is what its headers
    /// were walked to: a file that grows meanwhile (one still being copied) shows the reader
    /// nothing the walk did not see.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = usize::try_from(self.len.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let n = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for SeamReader {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let at = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.at.checked_add_signed(d),
        };
        // Past the end is the end of the bundle, as reading through it would find.
        self.at = at.filter(|&to| to <= self.len).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "an entry runs past the end of the bundle",
            )
        })?;
        Ok(self.at)
    }
}

/// The largest manifest read: a root of a million files lists them in about 150 MiB.
const MANIFEST_LIMIT: usize = 256 << 20;

/// The bytes of `range` of the bundle: its manifest, at most [`MANIFEST_LIMIT`] of them, and
/// the memory for them asked for, not assumed.
pub(super) fn read_range(
    file: &Arc<dyn StorageFile>,
    range: &std::ops::Range<usize>,
) -> std::io::Result<Vec<u8>> {
    if range.len() > MANIFEST_LIMIT {
        return Err(std::io::Error::other(format!(
            "{} bytes, more than the {MANIFEST_LIMIT} a manifest may have",
            range.len()
        )));
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(range.len())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    buf.resize(range.len(), 0);
    file.read_exact_at(&mut buf, range.start as u64)?;
    Ok(buf)
}

/// How many bytes of `range` of the bundle were read, and their SHA-256, read a block at a time.
/// `buf` is the block, shared by every entry.
pub(super) fn digest(
    file: &Arc<dyn StorageFile>,
    range: &std::ops::Range<usize>,
    buf: &mut [u8],
) -> std::io::Result<(u64, String)> {
    let mut hash = Sha256::new();
    let (mut at, end) = (range.start as u64, range.end as u64);
    while at < end {
        let want = buf.len().min((end - at) as usize);
        let n = file.read_at(&mut buf[..want], at)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        at += n as u64;
    }
    Ok((
        at - range.start as u64,
        makalog::format::hex(&hash.finalize()),
    ))
}
