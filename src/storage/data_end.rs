//! Reading a file whose trailing zeros are no data: a segment or the claims log, where a reader
//! takes any number of zeros after the last frame as the end of data (FORMAT.md). A file may
//! claim any length for nothing (sparse), so a read takes the bytes up to the last non-zero
//! one and a few zeros after it, and no more: it passes over the file system's holes without
//! reading them, reads written zeros backwards in bounded steps, and never holds them.
//!
//! Dropping trailing zeros changes no verdict: after the last non-zero byte a reader finds only
//! zeros, which are never a frame nor evidence of one, and [`ZEROS_KEPT`] of them are kept so a
//! log that ended in zeros still ends in zeros, not at the end of its file.

use super::{OpenMode, Storage, StorageFile};
use std::io;
use std::path::Path;

/// Zeros kept after the last non-zero byte, where the file has them.
pub const ZEROS_KEPT: u64 = 4 << 10;

/// Bytes read at once when looking backwards for the last non-zero byte.
const STEP: u64 = 64 << 10;

/// A first read asks for this much: a small file comes in one call, with no stat.
const FIRST_READ: usize = 16 << 10;

/// Where the bytes from `from` on that a reader needs end: just past the last non-zero byte
/// (`from` if there is none), then at most [`ZEROS_KEPT`] zeros, within the file.
pub fn needed_end(file: &dyn StorageFile, from: u64) -> io::Result<u64> {
    let size = file.size()?;
    if from >= size {
        return Ok(size);
    }
    // A file that ends in data (a sealed segment's footer, a log cut at close) needs all of it.
    let mut last = [0u8];
    if file.read_full_at(&mut last, size - 1)? == 1 && last[0] != 0 {
        return Ok(size);
    }
    let mut end = from;
    let mut at = from;
    let mut buf = Vec::new();
    while let Some((start, stop)) = file.data_after(at)? {
        let stop = stop.min(size);
        // A stretch that does not move forward ends the walk (a storage that misreports).
        if start < at || stop <= start {
            break;
        }
        if let Some(e) = last_non_zero(file, (start, stop), &mut buf)? {
            end = e;
        }
        at = stop;
    }
    Ok(size.min(end.saturating_add(ZEROS_KEPT)))
}

/// Just past the last non-zero byte of the stretch `[start, stop)`, read from its end back.
fn last_non_zero(
    file: &dyn StorageFile,
    (start, stop): (u64, u64),
    buf: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    let mut hi = stop;
    while hi > start {
        let lo = hi.saturating_sub(STEP).max(start);
        // At most STEP bytes: no length read from the file sizes this buffer.
        buf.resize((hi - lo) as usize, 0);
        // A file cut meanwhile reads short: what is not there holds nothing.
        let n = file.read_full_at(buf, lo)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b != 0) {
            return Ok(Some(lo + i as u64 + 1));
        }
        hi = lo;
    }
    Ok(None)
}

/// The bytes of `file` from `from` to where a reader needs them ([`needed_end`]). A small
/// file is read in one call; only a file that fills it is looked at for its trailing zeros.
pub fn read_needed(file: &dyn StorageFile, from: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; FIRST_READ];
    let n = file.read_full_at(&mut buf, from)?;
    if n < buf.len() {
        buf.truncate(n);
        return Ok(buf);
    }
    let want = needed_end(file, from)?.saturating_sub(from);
    if want <= n as u64 {
        buf.truncate(want as usize);
        return Ok(buf);
    }
    super::buffer::grow(&mut buf, want - n as u64)?;
    let more = file.read_full_at(&mut buf[n..], from + n as u64)?;
    buf.truncate(n + more);
    Ok(buf)
}

/// A whole file whose trailing zeros are no data, read as [`read_needed`] reads it.
pub fn read_data(storage: &dyn Storage, path: &Path) -> io::Result<Vec<u8>> {
    read_needed(&*storage.open(path, OpenMode::Read)?, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file held in memory, for reading.
    struct Bytes(Vec<u8>);

    impl StorageFile for Bytes {
        fn size(&self) -> io::Result<u64> {
            Ok(self.0.len() as u64)
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let from = (offset as usize).min(self.0.len());
            let n = buf.len().min(self.0.len() - from);
            buf[..n].copy_from_slice(&self.0[from..from + n]);
            Ok(n)
        }
        fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn sync_data(&self) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
    }

    fn file_of(bytes: &[u8]) -> Box<dyn StorageFile> {
        Box::new(Bytes(bytes.to_vec()))
    }

    #[test]
    fn trailing_zeros_past_a_few_are_left_and_the_rest_is_read_exactly() {
        // Data, a run of zeros inside it, data, then far more zeros than are kept.
        let mut bytes = vec![7u8; 100];
        bytes.extend(vec![0u8; 300 << 10]);
        bytes.push(9);
        let last = bytes.len() as u64;
        bytes.extend(vec![0u8; 200 << 10]);
        let file = file_of(&bytes);
        assert_eq!(needed_end(&*file, 0).expect("end"), last + ZEROS_KEPT);
        let read = read_needed(&*file, 50).expect("read");
        assert_eq!(read, bytes[50..(last + ZEROS_KEPT) as usize]);
        // From past the last non-zero byte: only the zeros kept.
        assert_eq!(
            needed_end(&*file, last + 10).expect("end"),
            last + 10 + ZEROS_KEPT
        );
    }

    #[test]
    fn a_file_that_ends_in_data_or_in_few_zeros_is_read_whole() {
        for tail in [0usize, 1, 100] {
            let mut bytes = vec![0u8; 40 << 10];
            bytes[0] = 1;
            bytes[20 << 10] = 2;
            bytes.extend(vec![3u8; 5]);
            bytes.extend(vec![0u8; tail]);
            let file = file_of(&bytes);
            assert_eq!(read_needed(&*file, 0).expect("read"), bytes, "tail {tail}");
        }
        let small = file_of(&[0u8; 10]);
        assert_eq!(read_needed(&*small, 0).expect("read"), [0u8; 10]);
        assert_eq!(read_needed(&*small, 20).expect("read"), Vec::<u8>::new());
    }

    #[test]
    fn only_zeros_after_from_leave_the_zeros_kept() {
        let file = file_of(&vec![0u8; 1 << 20]);
        assert_eq!(needed_end(&*file, 0).expect("end"), ZEROS_KEPT);
        assert_eq!(
            read_needed(&*file, 0).expect("read").len() as u64,
            ZEROS_KEPT
        );
    }
}
