//! The tar reader reads a GNU long name or link (`L`, `K`) whole, as long as its header says
//! it is: a crafted bundle claiming one of gigabytes (a sparse file costs its maker nothing)
//! would be held in memory before any check of ours. The headers are walked first, in step with
//! the reader: each entry's size read as it reads it, and no entry that would move the reader
//! elsewhere than the size says (a PAX header's `size=`, a GNU sparse entry's extension
//! blocks), which no export writes.

use makalog::storage::StorageFile;

/// The longest long name or link a bundle may hold: an export writes names of a few KiB.
pub const META_MAX: u64 = 64 << 10;

const BLOCK: u64 = 512;

/// Walks the bundle's headers and refuses a long name or link longer than [`META_MAX`], or a
/// PAX or GNU sparse entry, naming its byte. Where the reader would stop (a header whose
/// checksum fails, a size it cannot read, a block of zeros, the end) the walk stops too: the
/// reader then reports the damage, and nothing past it, which the reader never reaches, is
/// judged. One read of a block per entry, each entry at least a block further.
pub fn refuse_long_meta(file: &dyn StorageFile, len: u64) -> Result<(), String> {
    let mut block = [0u8; BLOCK as usize];
    let mut at = 0u64;
    while at.saturating_add(BLOCK) <= len {
        match file.read_full_at(&mut block, at) {
            Ok(n) if n == block.len() => {}
            _ => return Ok(()),
        }
        if block.iter().all(|&b| b == 0) || !checksum_holds(&block) {
            return Ok(());
        }
        let Some(size) = entry_size(&block[124..136]) else {
            return Ok(());
        };
        let refused = match block[156] {
            b'L' | b'K' if size > META_MAX => format!(
                "a GNU long name or link of {size} bytes, more than the {META_MAX} a bundle \
                 may hold"
            ),
            b'x' | b'g' => "a PAX header, which no bundle holds".to_owned(),
            b'S' => "a GNU sparse entry, which no bundle holds".to_owned(),
            _ => String::new(),
        };
        if !refused.is_empty() {
            return Err(format!("entry at byte {at}: {refused}"));
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

/// Whether a header's checksum (bytes 148..156, octal as a size is read) is the sum of its
/// other bytes and eight spaces in its place, as the tar reader checks it.
fn checksum_holds(block: &[u8; BLOCK as usize]) -> bool {
    let sum: u64 = block[..148]
        .iter()
        .chain(&block[156..])
        .map(|&b| u64::from(b))
        .sum::<u64>()
        + 8 * 32;
    octal(&block[148..156]) == Some(sum)
}

/// A header's size field as the tar reader reads it: with the first byte's high bit set, a
/// big-endian number in its last eight bytes; otherwise octal digits up to the first NUL, with
/// white space around them.
fn entry_size(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        let last: [u8; 8] = field[field.len() - 8..].try_into().ok()?;
        return Some(u64::from_be_bytes(last));
    }
    octal(field)
}

/// Octal digits up to the first NUL, with white space around them.
fn octal(field: &[u8]) -> Option<u64> {
    let digits = field.split(|&b| b == 0).next()?;
    u64::from_str_radix(std::str::from_utf8(digits).ok()?.trim(), 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_tar_reader_reads_them() {
        assert_eq!(entry_size(b"00000001000\0"), Some(512));
        assert_eq!(entry_size(b"  777      \0"), Some(0o777));
        assert_eq!(entry_size(b"\t7777777777\0"), Some(0o7777777777));
        assert_eq!(entry_size(b"17\0 999 junk"), Some(0o17), "to the first NUL");
        let mut binary = [0u8; 12];
        binary[0] = 0x80;
        binary[4..].copy_from_slice(&(5u64 << 40).to_be_bytes());
        assert_eq!(entry_size(&binary), Some(5 << 40));
        // Only the last eight bytes count, as the reader counts them.
        binary[1] = 0xff;
        assert_eq!(entry_size(&binary), Some(5 << 40));
        assert_eq!(entry_size(b"0000000009x\0"), None, "not octal");
        assert_eq!(entry_size(&[0u8; 12]), None);
    }

    #[test]
    fn a_header_whose_checksum_fails_ends_the_walk_as_it_ends_the_reader() {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(1 << 30);
        h.set_cksum();
        let block: [u8; 512] = *h.as_bytes();
        assert!(checksum_holds(&block));
        let mut bad = block;
        bad[0] ^= 1;
        assert!(!checksum_holds(&bad));
    }
}
