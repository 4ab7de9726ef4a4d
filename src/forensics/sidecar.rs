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
        if link.offset != c.last_frame_offset || link.end != c.data_end {
            return SidecarStanding::Contradicts {
                seq: c.last_seq,
                what: format!(
                    "seq {} lies at bytes {}..{} of {}, the sidecar recorded {}..{}: the log or the sidecar was rewritten",
                    c.last_seq,
                    link.offset,
                    link.end,
                    link.file.display(),
                    c.last_frame_offset,
                    c.data_end
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
