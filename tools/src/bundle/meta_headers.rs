//! The tar reader reads a GNU long name or link (`L`, `K`) and a PAX header (`x`, `g`) whole,
//! as long as its header says it is: a crafted bundle claiming one of gigabytes (a sparse file
//! costs its maker nothing) would be held in memory before any check of ours. Their headers are
//! looked at first, by the layout of POSIX tar alone.

use makalog::storage::StorageFile;

/// The longest such entry a bundle may hold: an export writes names of at most a few KiB.
pub const META_MAX: u64 = 64 << 10;

const BLOCK: u64 = 512;

/// Walks the bundle's headers and refuses one of those entries longer than [`META_MAX`],
/// naming its byte. What is no header (a bad size, a short read) ends the walk: the tar reader
/// then says why. One read of a block per entry, each entry at least a block further.
pub fn refuse_long_meta(file: &dyn StorageFile, len: u64) -> Result<(), String> {
    let mut block = [0u8; BLOCK as usize];
    let mut at = 0u64;
    while at.saturating_add(BLOCK) <= len {
        match file.read_full_at(&mut block, at) {
            Ok(n) if n == block.len() => {}
            _ => return Ok(()),
        }
        if block.iter().all(|&b| b == 0) {
            return Ok(());
        }
        let Some(size) = entry_size(&block[124..136]) else {
            return Ok(());
        };
        let what = match block[156] {
            b'L' => "GNU long name",
            b'K' => "GNU long link",
            b'x' | b'g' => "PAX header",
            _ => "",
        };
        if !what.is_empty() && size > META_MAX {
            return Err(format!(
                "entry at byte {at}: a {what} of {size} bytes, more than the {META_MAX} a bundle \
                 may hold"
            ));
        }
        let Some(next) = size
            .checked_next_multiple_of(BLOCK)
            .and_then(|data| at.checked_add(BLOCK)?.checked_add(data))
        else {
            return Ok(());
        };
        at = next;
    }
    Ok(())
}

/// A header's size field: octal digits ended by a NUL or a space, or (first byte 0x80) a
/// big-endian number in the bytes after it.
fn entry_size(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        let digits = &field[1..];
        // More than eight significant bytes is past any u64.
        let (high, low) = digits.split_at(digits.len() - 8);
        if high.iter().any(|&b| b != 0) {
            return None;
        }
        return Some(u64::from_be_bytes(low.try_into().ok()?));
    }
    let text = field
        .split(|&b| b == 0 || b == b' ')
        .find(|s| !s.is_empty())?;
    u64::from_str_radix(std::str::from_utf8(text).ok()?, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_octal_or_base_256() {
        let mut field = *b"00000001000\0";
        assert_eq!(entry_size(&field), Some(512));
        field = *b"  777      \0";
        assert_eq!(entry_size(&field), Some(0o777));
        let mut binary = [0u8; 12];
        binary[0] = 0x80;
        binary[4..].copy_from_slice(&(5u64 << 40).to_be_bytes());
        assert_eq!(entry_size(&binary), Some(5 << 40));
        binary[1] = 1;
        assert_eq!(entry_size(&binary), None, "past a u64");
        assert_eq!(entry_size(b"0000000009x\0"), None, "not octal");
        assert_eq!(entry_size(&[0u8; 12]), None);
    }
}
