//! A sidecar held against the log it indexes: a sidecar that is merely behind (the log grew
//! after it was written) is routine; one whose covers the log contradicts says that the log or
//! the sidecar was rewritten, and is evidence.

use super::chains::Chain;
use crate::index::Cover;

/// How a sidecar's covers stand against the log's valid prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidecarStanding {
    /// Every cover holds and the last one ends where the log does.
    Current,
    /// Every cover holds; the log goes on past the last one.
    Behind { covers_to: u64, log_head: u64 },
    /// A cover names a record the log does not hold as it says.
    Contradicts { seq: u64, what: String },
}

/// Holds each cover against the record of the log at its sequence number.
pub fn sidecar_standing(covers: &[Cover], log: &Chain) -> SidecarStanding {
    for c in covers {
        let Some(link) = log.at(c.last_seq) else {
            return SidecarStanding::Contradicts {
                seq: c.last_seq,
                what: format!(
                    "the sidecar covers seq {} but the log's valid prefix ends at seq {}: the log lost records, or the sidecar was rewritten",
                    c.last_seq,
                    log.head_seq()
                ),
            };
        };
        if link.chain != c.chain {
            return SidecarStanding::Contradicts {
                seq: c.last_seq,
                what: format!(
                    "at seq {} the log's chain differs from the one the sidecar recorded: the log or the sidecar was rewritten",
                    c.last_seq
                ),
            };
        }
        if link.ordinal != c.ordinal || link.offset != c.last_frame_offset || link.end != c.data_end
        {
            return SidecarStanding::Contradicts {
                seq: c.last_seq,
                what: format!(
                    "seq {} lies at bytes {}..{} of {} (segment {}), the sidecar recorded {}..{} of segment {}: the log or the sidecar was rewritten",
                    c.last_seq,
                    link.offset,
                    link.end,
                    link.file.display(),
                    link.ordinal,
                    c.last_frame_offset,
                    c.data_end,
                    c.ordinal
                ),
            };
        }
    }
    match covers.last().map_or(0, |c| c.last_seq) {
        to if to == log.head_seq() => SidecarStanding::Current,
        covers_to => SidecarStanding::Behind {
            covers_to,
            log_head: log.head_seq(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forensics::chains::Link;
    use std::path::PathBuf;

    fn log() -> Chain {
        let link = |seq: u64, ordinal: u64, offset: u64| Link {
            seq,
            chain: [seq as u8; 32],
            kind: "runtime_event",
            file: PathBuf::from(format!("sessions/s/{ordinal}.seg")),
            ordinal,
            offset,
            end: offset + 100,
        };
        Chain {
            links: vec![link(1, 0, 68), link(2, 1, 68)],
            ..Chain::default()
        }
    }

    fn cover(ordinal: u64) -> Cover {
        Cover {
            ordinal,
            last_frame_offset: 68,
            data_end: 168,
            last_seq: 2,
            chain: [2; 32],
        }
    }

    #[test]
    fn a_cover_that_holds_is_current() {
        assert_eq!(
            sidecar_standing(&[cover(1)], &log()),
            SidecarStanding::Current
        );
    }

    /// A cover naming another segment than the one its record lies in, at the same offsets
    /// and with the same chain (FORMAT.md: a cover's ordinal is held against the log too): the
    /// log or the sidecar was rewritten, not a sidecar that merely differs.
    #[test]
    fn a_cover_naming_another_segment_is_a_contradiction() {
        assert!(matches!(
            sidecar_standing(&[cover(0)], &log()),
            SidecarStanding::Contradicts { seq: 2, .. }
        ));
    }
}
