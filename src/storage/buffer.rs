//! Buffers sized by what a file says: a length read from disk may be anything (a sparse file
//! of a terabyte costs its maker nothing), so the memory is asked for, not assumed, and a
//! request the process cannot have is an error, never an abort.

use std::io;

/// Extends `buf` by `more` zero bytes, or fails with `OutOfMemory` leaving it as it was.
pub fn grow(buf: &mut Vec<u8>, more: u64) -> io::Result<()> {
    let more = reserve(buf, more)?;
    buf.resize(buf.len() + more, 0);
    Ok(())
}

/// Makes room in `buf` for `more` bytes beyond its length, or fails with `OutOfMemory`.
pub fn reserve(buf: &mut Vec<u8>, more: u64) -> io::Result<usize> {
    let more = usize::try_from(more).map_err(|_| too_big())?;
    buf.try_reserve_exact(more).map_err(|_| too_big())?;
    Ok(more)
}

fn too_big() -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        "the file does not fit in memory",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_no_process_can_have_is_an_error_not_an_abort() {
        let e = grow(&mut Vec::new(), u64::MAX).expect_err("no process has 16 EiB");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        let mut buf = vec![7u8; 3];
        let e = grow(&mut buf, 1 << 62).expect_err("nor 4 EiB more");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(buf, [7, 7, 7], "left as it was");
        let mut room = Vec::new();
        assert_eq!(reserve(&mut room, 5).expect("five"), 5);
        assert!(room.capacity() >= 5 && room.is_empty());
        grow(&mut buf, 2).expect("two bytes");
        assert_eq!(buf, [7, 7, 7, 0, 0]);
        let mut four = Vec::new();
        grow(&mut four, 4).expect("four");
        assert_eq!(four, [0; 4]);
    }
}
