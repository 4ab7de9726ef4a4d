//! Reading a real file past the page cache: what the disk itself holds.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

/// Direct I/O's alignment of offsets, lengths and buffers (a multiple of every logical block
/// size in use).
const DIRECT_ALIGN: usize = 4096;

/// Reads `file` past the page cache: a second open file description of the same inode (through
/// `/proc/self/fd`, so no other file can stand in for it) with `O_DIRECT`. `None` where that
/// cannot be had: the file system refuses direct I/O (`EINVAL`: tmpfs, some FUSE file systems)
/// or `/proc` is missing or closed to the process. (Some file systems take `O_DIRECT` and read
/// through the cache all the same: ext4 with `data=journal` or inline data, ZFS before 2.3.)
pub(super) fn read_direct(file: &File, buf: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let direct = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(proc_path)
    {
        Ok(f) => f,
        Err(_) => return Ok(None),
    };
    let align = DIRECT_ALIGN as u64;
    let start = offset / align * align;
    let end = (offset + buf.len() as u64).div_ceil(align) * align;
    let len = (end - start) as usize;
    let mut raw = vec![0u8; len + DIRECT_ALIGN];
    let skip = raw.as_ptr().align_offset(DIRECT_ALIGN);
    let aligned = &mut raw[skip..skip + len];
    let mut done = 0;
    while done < len {
        match direct.read_at(&mut aligned[done..], start + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
            Err(e) => return Err(e),
        }
        // A read short of a block ends at the end of the file.
        if done % DIRECT_ALIGN != 0 {
            break;
        }
    }
    let lead = (offset - start) as usize;
    let n = done.saturating_sub(lead).min(buf.len());
    buf[..n].copy_from_slice(&aligned[lead..lead + n]);
    Ok(Some(n))
}
