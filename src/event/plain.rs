//! The scan JSON strings are read and written with: the run of bytes that need no escape.

/// The length of the run of string bytes that need no attention: up to the first quote,
/// backslash or control character, or the end. Eight bytes a step: in a little-endian word, a
/// byte equal to `c` is a zero byte of `w ^ c…c`, found by `(x − 1…1) & !x & 80…80`, and a byte
/// below 0x20 by `(w − 20…20) & !w & 80…80`; a borrow can flag a byte only above a true match,
/// so the lowest flag is the first match.
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let flags = (zero_in(w ^ (ONES * u64::from(b'"')))
            | zero_in(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGHS;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = bytes.get(at..).unwrap_or_default();
    at + tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(tail.len())
}

#[cfg(test)]
mod tests {
    use super::plain_run;
    use proptest::prelude::*;

    fn simple(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(bytes.len())
    }

    #[test]
    fn the_run_ends_at_the_first_byte_that_needs_attention() {
        for (text, want) in [
            (&b""[..], 0),
            (b"plain", 5),
            (b"exactly8\"", 8),
            (b"seven b\"", 7),
            (b"ab\\cdefghijkl", 2),
            (b"0123456789abcdef\n", 16),
            (b"\x1f", 0),
            (b"caf\xc3\xa9 \xe2\x82\xac and more\"", 18),
            (b"\x7f\x80\xff\x20!\"", 5),
        ] {
            assert_eq!(plain_run(text), want, "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn the_word_scan_agrees_with_a_byte_scan(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(plain_run(&bytes), simple(&bytes));
        }

        #[test]
        fn the_word_scan_agrees_on_mostly_plain_text(
            bytes in prop::collection::vec(prop_oneof![8 => 0x20u8..0x7f, 1 => any::<u8>()], 0..80),
        ) {
            prop_assert_eq!(plain_run(&bytes), simple(&bytes));
        }
    }
}
