//! A real file's holes: ranges of a sparse file never written, which read as zeros and cost
//! their maker nothing. `lseek` with `SEEK_DATA` / `SEEK_HOLE` finds where data lies, so a
//! reader passes over them without reading them. (A file system that does not know its holes
//! reports the whole file as data; one that refuses the call is taken to know none.)

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
    let start = match seek(file, offset, libc::SEEK_DATA) {
        Seek::At(at) => at,
        Seek::Past => return Ok(None),
        // A file system that cannot tell (a FUSE one that refuses the call): no hole known.
        Seek::Unknown => return Ok(Some((offset, size))),
    };
    // The end of the file is a hole to `SEEK_HOLE`, so one is always found; a file that grew
    // meanwhile may put it past the size read above, which the stretch does not pass.
    let end = match seek(file, start, libc::SEEK_HOLE) {
        Seek::At(at) => at.min(size),
        Seek::Past | Seek::Unknown => size,
    };
    Ok((start < end).then_some((start, end)))
}

/// What `lseek` answered.
enum Seek {
    At(u64),
    /// `ENXIO`: no data (or no hole) at or after the offset.
    Past,
    /// Any other failure: the file system cannot tell.
    Unknown,
}

fn seek(file: &File, offset: u64, whence: libc::c_int) -> Seek {
    let Ok(at) = libc::off_t::try_from(offset) else {
        return Seek::Past;
    };
    // SAFETY: `lseek` on a descriptor this `File` owns and keeps open for the call; it moves
    // the shared file offset, which nothing here uses (every read and write gives its offset).
    let got = unsafe { libc::lseek(file.as_raw_fd(), at, whence) };
    if got < 0 {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENXIO) => Seek::Past,
            _ => Seek::Unknown,
        };
    }
    u64::try_from(got).map_or(Seek::Unknown, Seek::At)
}
