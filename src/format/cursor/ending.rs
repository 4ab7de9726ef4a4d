//! What lies after the last valid frame of a run: a clean end, zeros, a seal footer that must
//! agree with the frames before it, a torn tail, or damage (when something after the bad bytes
//! shows them synced).

use super::search::{Found, Search};
use super::{FrameCursor, Tail};
use crate::format::{FormatError, FrameKind, SealFooter, FOOTER_LEN};

impl<K: FrameKind> FrameCursor<K> {
    pub(super) fn footer_end(&self, rest: &[u8]) -> Tail {
        let offset = self.abs(self.pos);
        let footer = match SealFooter::decode(rest) {
            Ok((f, _)) => f,
            // A footer whose write was cut short: torn, unless something valid follows it.
            Err(e) => {
                return self.classify_garbage(
                    rest,
                    0,
                    format!("bad seal footer at byte {offset}: {}", e.what),
                )
            }
        };
        let last_seq = self.next_seq - 1;
        let what = if footer.footer_offset != offset {
            Some(format!(
                "seal footer says it is at byte {}",
                footer.footer_offset
            ))
        } else if footer.last_seq != last_seq {
            Some(format!(
                "seal footer says last sequence {}, segment ends at {last_seq}",
                footer.last_seq
            ))
        } else if footer.frame_count != self.count {
            Some(format!(
                "seal footer counts {} frames, segment has {}",
                footer.frame_count, self.count
            ))
        } else if footer.chain != self.chain {
            Some("seal footer chain value differs from the last frame's".to_owned())
        } else {
            None
        };
        if let Some(what) = what {
            return Tail::Damaged { offset, what };
        }
        let after = &rest[FOOTER_LEN..];
        if let Some(i) = after.iter().position(|&b| b != 0) {
            // A seal interrupted before the file was cut: torn, unless something valid follows.
            let what = format!(
                "non-zero bytes at byte {} after the seal footer",
                offset + (FOOTER_LEN + i) as u64
            );
            return self.classify_garbage(rest, FOOTER_LEN + i, what);
        }
        Tail::Sealed {
            footer,
            trailing_zeros: after.len() as u64,
        }
    }

    pub(super) fn after_end_of_data(&self, rest: &[u8]) -> Tail {
        match rest.iter().position(|&b| b != 0) {
            None if rest.is_empty() => Tail::Eof,
            None => Tail::Zeros {
                len: rest.len() as u64,
            },
            Some(first) => self.classify_garbage(
                rest,
                first,
                format!(
                    "non-zero bytes at byte {} after the end of data",
                    self.abs(self.pos + first)
                ),
            ),
        }
    }

    pub(super) fn after_bad_frame(&self, rest: &[u8], e: FormatError) -> Tail {
        let what = format!("bad frame at byte {}: {}", self.abs(self.pos), e.what);
        self.classify_garbage(rest, 0, what)
    }

    /// Non-zero bytes start at `rest[first]`: a torn tail unless something after them shows
    /// them synced. In version 1 any valid frame or seal footer does; in version 2 only a frame
    /// written when the record expected here was already durable.
    /// Pages of an unsynced batch reach the disk in any order, so its later frames may survive
    /// where an earlier page did not; no record written after a sync can follow unsynced bytes.
    fn classify_garbage(&self, rest: &[u8], first: usize, what: String) -> Tail {
        let search = Search::after(rest, self.layout, self.max_payload, self.footers);
        match search.run::<K>(self.next_seq) {
            Found::At(at) => {
                return Tail::Damaged {
                    offset: self.abs(self.pos + first),
                    what: format!(
                        "{what}; a valid record follows at byte {}",
                        self.abs(self.pos + at)
                    ),
                }
            }
            Found::GaveUp { at, checked } => {
                return Tail::Damaged {
                    offset: self.abs(self.pos + first),
                    what: format!(
                        "{what}; the search for a valid record after it gave up at byte {} \
                         ({checked} bytes checked), so it is not cut as torn",
                        self.abs(self.pos + at)
                    ),
                }
            }
            Found::Nothing => {}
        }
        let last_nonzero = rest.iter().rposition(|&b| b != 0).unwrap_or(first);
        Tail::Torn {
            len: (last_nonzero + 1) as u64,
            what,
        }
    }
}
