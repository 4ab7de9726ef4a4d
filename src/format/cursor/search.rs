//! The search for evidence after damage (FORMAT.md "The search for evidence after damage"):
//! whether anything after damaged bytes shows them synced, in time linear in the bytes.

use crate::format::{
    decode_frame, u32_at, u64_at, FrameDecode, FrameKind, FrameLayout, SealFooter,
};

/// What the search for a valid frame or footer after damage found.
pub(super) enum Found {
    At(usize),
    Nothing,
    /// The bytes the candidates' CRCs would cover passed the budget at this position: crafted
    /// input, since no interrupted write leaves candidates that pass every check but the CRC.
    GaveUp {
        at: usize,
        checked: u64,
    },
}

/// The search for a record after damage: the bytes from the damage on and how their frames
/// are laid out.
pub(super) struct Search<'a> {
    rest: &'a [u8],
    layout: FrameLayout,
    max_payload: u32,
    footers: bool,
}

/// The CRC budget of a search over `n` bytes: linear in them, so crafted candidates (each
/// claiming a frame to the end of the bytes) cannot make a search quadratic.
fn search_budget(n: usize) -> u64 {
    8 * n as u64 + (1 << 20)
}

impl<'a> Search<'a> {
    pub(super) fn after(
        rest: &'a [u8],
        layout: FrameLayout,
        max_payload: u32,
        footers: bool,
    ) -> Self {
        Search {
            rest,
            layout,
            max_payload,
            footers,
        }
    }

    /// The first position after the damage where a CRC-valid frame that shows record
    /// `next_seq` was synced starts (in version 1, any valid frame or seal footer).
    pub(super) fn run<K: FrameKind>(&self, next_seq: u64) -> Found {
        let (rest, overhead) = (self.rest, self.layout.overhead());
        // A frame that could follow has a sequence number no lower than the next expected and
        // no higher than the number of frames that fit after it. Checking that (and the kind,
        // and that its length fits) before the CRC keeps the search linear over most garbage;
        // the budget bounds what is left.
        let max_seq = next_seq.saturating_add((rest.len() / overhead) as u64);
        let budget = search_budget(rest.len());
        let mut checked = 0u64;
        for at in 1..rest.len() {
            let tail = &rest[at..];
            if self.footers && SealFooter::looks_like_footer(tail) {
                // A roll writes the footer with the segment's last frames, before their sync:
                // in version 2 only a frame's durable sequence number says what was synced.
                if SealFooter::decode(tail).is_ok() && !self.layout.records_durable() {
                    return Found::At(at);
                }
                continue;
            }
            if tail.len() < overhead {
                continue;
            }
            let seq = u64_at(tail, 8);
            if seq < next_seq
                || seq > max_seq
                || crate::format::frame::kind_in::<K>(self.layout, tail[16]).is_none()
            {
                continue;
            }
            let len = u32_at(tail, 0);
            let total = overhead as u64 + u64::from(len);
            if len > self.max_payload || total > tail.len() as u64 {
                continue;
            }
            checked += total;
            if checked > budget {
                return Found::GaveUp { at, checked };
            }
            if let Ok(FrameDecode::Frame(frame, _)) =
                decode_frame::<K>(tail, self.layout, self.max_payload)
            {
                if frame.durable_seq.is_none_or(|d| d >= next_seq) {
                    return Found::At(at);
                }
            }
        }
        Found::Nothing
    }
}
