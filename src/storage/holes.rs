//! A real file's holes: ranges of a sparse file never written, which read as zeros and cost
//! their maker nothing. `lseek` with `SEEK_DATA` / `SEEK_HOLE` finds where data lies, so a
//! reader passes over them without reading them. (A file system that does not know its holes
//! reports the whole file as data, and the reader reads it, as it would anyway.)

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// The next stretch of `file` at or after `offset` that is no hole, as `(start, end)`, or `None`
/// when only a hole follows.
pub(super) fn data_after(file: &File, offset: u64) -> io::Result<Option<(u64, u64)>> {
    let size = file.metadata()?.len();
    if offset >= size {
        return Ok(None);
    }
    let Some(start) = seek(file, offset, libc::SEEK_DATA)? else {
        return Ok(None);
    };
    // The end of the file is a hole to `SEEK_HOLE`, so one is always found; a file that grew
    // meanwhile may put it past the size read above, which the stretch does not pass.
    let end = seek(file, start, libc::SEEK_HOLE)?
        .unwrap_or(size)
        .min(size);
    Ok((start < end).then_some((start, end)))
}

/// Where `lseek` puts the offset, or `None` for `ENXIO` (no data, or no hole, after `offset`).
fn seek(file: &File, offset: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    let Ok(at) = libc::off_t::try_from(offset) else {
        return Ok(None);
    };
    // SAFETY: `lseek` on a descriptor this `File` owns and keeps open for the call; it moves
    // the shared file offset, which nothing here uses (every read and write gives its offset).
    let got = unsafe { libc::lseek(file.as_raw_fd(), at, whence) };
    if got < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(u64::try_from(got).ok())
}
