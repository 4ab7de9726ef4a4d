//! Reading a file whose trailing zeros are no data: a segment or the claims log, where a reader
//! takes any number of zeros after the last frame as the end of data (FORMAT.md). A file may
//! claim any length for nothing (sparse), so a read takes the bytes up to the last non-zero
//! one and at most [`ZEROS_KEPT`] zeros after it, and no more.
//!
//! A file with no more than [`ZEROS_KEPT`] bytes past where a read starts is read whole, once:
//! all of it is needed. Of a longer one, the zeros a writer leaves (a crash leaves at most its
//! preallocation step and a block) are read backwards from the end, [`READ_BACK`] of them at
//! most; only past those is the file
//! system's hole map asked where data lies (`SEEK_DATA`), so no verdict on a file a writer
//! left depends on it. Written zeros past that are read backwards in bounded steps; none is
//! held beyond what is kept.
//!
//! Every frame and every verdict reads the same from the bytes kept: a frame is at most
//! [`ZEROS_KEPT`] long, so one that starts before the last non-zero byte ends within them, and
//! zeros after it are never a frame, a footer nor evidence. Only the search for evidence's
//! length `L` counts to the end of what is read (FORMAT.md, "Segment file").

use super::{OpenMode, Storage, StorageFile};
use crate::format::{MAX_FRAME_OVERHEAD, MAX_PAYLOAD_LIMIT};
use std::io;
use std::path::Path;

/// Zeros kept after the last non-zero byte, where the file has them: the longest frame any
/// header allows.
pub const ZEROS_KEPT: u64 = MAX_FRAME_OVERHEAD as u64 + MAX_PAYLOAD_LIMIT as u64;

/// The most bytes of holes (ranges the file system reports as never written, which read as
/// zeros) a reader holds among the bytes it needs. A writer leaves a hole between its frames
/// only where a crash lost writes not yet synced; a crafted file can claim a terabyte of them
/// before one byte of data for nothing, and reading them would hold all of it in memory.
pub const HOLES_HELD: u64 = 64 << 20;

/// Bytes at the end of a file read back before the hole map is asked: more than a crash leaves
/// of zeros with the default preallocation step (1 MiB and a block).
pub const READ_BACK: u64 = 2 << 20;

/// Bytes read at once when looking backwards for the last non-zero byte.
const STEP: u64 = 64 << 10;

/// A first read asks for this much: a small file comes in one call, with no stat.
const FIRST_READ: usize = 16 << 10;

/// Where the bytes from `from` on that a reader needs end: just past the last non-zero byte
/// (`from` if there is none), then at most [`ZEROS_KEPT`] zeros, within the file.
pub fn needed_end(file: &dyn StorageFile, from: u64) -> io::Result<u64> {
    needed_end_within(file, from, file.size()?)
}

/// True when a reader needs the whole file, to its last byte ([`needed_end`] is its size).
pub fn needed_whole(file: &dyn StorageFile) -> io::Result<bool> {
    let size = file.size()?;
    Ok(needed_end_within(file, 0, size)? == size)
}

/// [`needed_end`] of a file `size` bytes long.
fn needed_end_within(file: &dyn StorageFile, from: u64, size: u64) -> io::Result<u64> {
    // No more than the zeros kept after `from`: all of it is needed, wherever its last
    // non-zero byte is, and nothing need be read to find it.
    if size.saturating_sub(from) <= ZEROS_KEPT {
        return Ok(size);
    }
    // A file that ends in data (a sealed segment's footer, a log cut at close) needs all of it.
    let mut last = [0u8];
    if file.read_full_at(&mut last, size - 1)? == 1 && last[0] != 0 {
        return Ok(size);
    }
    let kept = |end: u64| size.min(end.saturating_add(ZEROS_KEPT));
    let mut buf = Vec::new();
    let back = size.saturating_sub(READ_BACK).max(from);
    if let Some(end) = last_non_zero(file, (back, size), &mut buf)? {
        return Ok(kept(end));
    }
    let mut end = from;
    let mut at = from;
    while let Some((start, stop)) = file.data_after(at)? {
        let stop = stop.min(back);
        // Past what was read back, or a stretch that does not move forward (a storage that
        // misreports): the walk ends.
        if start < at || stop <= start {
            break;
        }
        if let Some(e) = last_non_zero(file, (start, stop), &mut buf)? {
            end = e;
        }
        at = stop;
    }
    Ok(kept(end))
}

/// Fails when the file system reports more than [`HOLES_HELD`] bytes of holes in `[from, end)`,
/// with an error saying where they start; asks nothing of a range no longer than that. Each
/// step past the first passes a hole, so the walk ends within `HOLES_HELD` / a block of steps.
pub fn check_holes(file: &dyn StorageFile, from: u64, end: u64) -> io::Result<()> {
    if end.saturating_sub(from) <= HOLES_HELD {
        return Ok(());
    }
    let (mut holes, mut first, mut at) = (0u64, None, from);
    while at < end {
        let data = file.data_after(at)?;
        // A storage that misreports (a stretch that does not move forward) ends the walk.
        if data.is_some_and(|(start, stop)| start < at || stop <= start) {
            break;
        }
        let hole_end = data.map_or(end, |(start, _)| start.min(end));
        if hole_end > at {
            first.get_or_insert(at);
            holes += hole_end - at;
        }
        if holes > HOLES_HELD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "more than {HOLES_HELD} of the {} bytes a reader needs from byte {from} \
                     are holes, never written (the first starts at byte {}): a reader holds no \
                     more of them, and no writer leaves them between its frames but a crash \
                     that lost writes not yet synced",
                    end - from,
                    first.unwrap_or(at)
                ),
            ));
        }
        match data {
            Some((_, stop)) => at = stop,
            None => break,
        }
    }
    Ok(())
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
    check_holes(file, from, from + want)?;
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

    /// A file of `bytes` whose storage knows no holes.
    fn file_of(bytes: &[u8]) -> Box<dyn StorageFile> {
        Box::new(Sparse {
            data: bytes.to_vec(),
            len: bytes.len() as u64,
            holes: false,
            read: Default::default(),
        })
    }

    #[test]
    fn trailing_zeros_past_those_kept_are_left_and_the_rest_is_read_exactly() {
        // Data, a run of zeros inside it, data, then more zeros than are kept and read back.
        let mut bytes = vec![7u8; 100];
        bytes.extend(vec![0u8; 300 << 10]);
        bytes.push(9);
        let last = bytes.len() as u64;
        bytes.resize((last + ZEROS_KEPT + READ_BACK + (1 << 20)) as usize, 0);
        let file = file_of(&bytes);
        assert_eq!(needed_end(&*file, 0).expect("end"), last + ZEROS_KEPT);
        assert!(
            !needed_whole(&*file).expect("whole"),
            "its last zeros are not needed"
        );
        assert!(needed_whole(&*file_of(&bytes[..last as usize])).expect("whole"));
        let read = read_needed(&*file, 50).expect("read");
        assert_eq!(read, bytes[50..(last + ZEROS_KEPT) as usize]);
        // From past the last non-zero byte: only the zeros kept.
        assert_eq!(
            needed_end(&*file, last + 10).expect("end"),
            last + 10 + ZEROS_KEPT
        );
    }

    #[test]
    fn a_file_that_ends_in_data_or_in_fewer_zeros_than_kept_is_read_whole_and_once() {
        for tail in [0usize, 1, 100, 3 << 20] {
            let mut bytes = vec![0u8; 40 << 10];
            bytes[0] = 1;
            bytes[20 << 10] = 2;
            bytes.extend(vec![3u8; 5]);
            bytes.extend(vec![0u8; tail]);
            let file = Sparse {
                len: bytes.len() as u64,
                data: bytes.clone(),
                holes: false,
                read: Default::default(),
            };
            assert_eq!(read_needed(&file, 0).expect("read"), bytes, "tail {tail}");
            // No search of the zeros before the read: each byte is read once.
            let read = file.read.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(read, bytes.len() as u64, "tail {tail}");
        }
        let small = file_of(&[0u8; 10]);
        assert_eq!(read_needed(&*small, 0).expect("read"), [0u8; 10]);
        assert_eq!(read_needed(&*small, 20).expect("read"), Vec::<u8>::new());
    }

    /// A file held in memory: `data`, then zeros to `len` (with `holes`, a hole the storage
    /// reports as one), its reads counted.
    struct Sparse {
        data: Vec<u8>,
        len: u64,
        holes: bool,
        read: std::sync::atomic::AtomicU64,
    }

    impl StorageFile for Sparse {
        fn size(&self) -> io::Result<u64> {
            Ok(self.len)
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let n = buf.len().min(self.len.saturating_sub(offset) as usize);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = self.data.get(offset as usize + i).copied().unwrap_or(0);
            }
            self.read
                .fetch_add(n as u64, std::sync::atomic::Ordering::SeqCst);
            Ok(n)
        }
        fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
            let end = if self.holes {
                self.data.len() as u64
            } else {
                self.len
            };
            Ok((offset < end).then_some((offset, end)))
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

    /// A file of `len` bytes whose storage reports data only in `extents` (or, `stuck`, always
    /// the file's first byte), its hole map asked `asked` times.
    struct Extents {
        len: u64,
        extents: Vec<(u64, u64)>,
        stuck: bool,
        asked: std::sync::atomic::AtomicU64,
    }

    impl StorageFile for Extents {
        fn size(&self) -> io::Result<u64> {
            Ok(self.len)
        }
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if self.stuck {
                return Ok(Some((0, 1)));
            }
            Ok(self
                .extents
                .iter()
                .find(|&&(_, stop)| stop > offset)
                .map(|&(start, stop)| (start.max(offset), stop)))
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

    #[test]
    fn holes_are_summed_across_a_range_and_more_than_are_held_is_an_error_naming_the_first() {
        const M: u64 = 1 << 20;
        let file = |extents: Vec<(u64, u64)>| Extents {
            len: extents.last().expect("extents").1,
            extents,
            stuck: false,
            asked: Default::default(),
        };
        // Two holes of 39.99 MiB: neither alone is more than is held, both are.
        let two = file(vec![(0, 10), (40 * M, 40 * M + 10), (80 * M, 80 * M + 1)]);
        let e = check_holes(&two, 0, two.len).expect_err("80 MiB of holes");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            e.to_string().contains("the first starts at byte 10)"),
            "{e}"
        );
        // From inside the first data: the same holes. From the second data on: one, held.
        let e = check_holes(&two, 5, two.len).expect_err("from byte 5");
        assert!(e.to_string().contains("from byte 5"), "{e}");
        check_holes(&two, 40 * M, two.len).expect("40 MiB of holes");
        // A hole that runs to the end of the range counts to the range's end only.
        let open = file(vec![(0, 10), (200 * M, 200 * M + 1)]);
        check_holes(&open, 0, 60 * M).expect("60 MiB of a longer hole");
        check_holes(&open, 0, 70 * M).expect_err("70 MiB of it");
        // No data after `from` at all: the whole range is a hole.
        check_holes(&open, 200 * M + 1, 300 * M).expect_err("100 MiB of nothing");
        // A range no longer than what is held asks nothing.
        let asked = open.asked.load(std::sync::atomic::Ordering::SeqCst);
        check_holes(&open, 0, HOLES_HELD).expect("no more than is held");
        assert_eq!(open.asked.load(std::sync::atomic::Ordering::SeqCst), asked);
        // A storage whose stretch does not move forward ends the walk; it does not spin.
        let stuck = Extents {
            stuck: true,
            ..file(vec![(0, 1), (100 * M, 100 * M + 1)])
        };
        check_holes(&stuck, 5, stuck.len).expect("a misreport counts nothing");
        assert_eq!(stuck.asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn a_hole_past_what_is_read_back_is_passed_over_unread() {
        let file = Sparse {
            data: vec![5u8; 100],
            len: 1 << 40,
            holes: true,
            read: Default::default(),
        };
        assert_eq!(needed_end(&file, 0).expect("end"), 100 + ZEROS_KEPT);
        let read = file.read.load(std::sync::atomic::Ordering::SeqCst);
        assert!(read <= READ_BACK + 101, "read {read} bytes of a terabyte");
        // All zeros from `from` on: only those kept.
        assert_eq!(needed_end(&file, 200).expect("end"), 200 + ZEROS_KEPT);
    }
}
