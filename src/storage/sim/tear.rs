//! What a crash keeps of the unsynced writes: the tears the simulated storage draws from.

use super::{apply_file_op, FileOp, SimRng};

/// What a crash keeps of the writes and directory changes that were not yet synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tear {
    /// Nothing unsynced survives.
    None,
    /// Everything written survives (as if the disk flushed just before the crash).
    All,
    /// A prefix of each file's unsynced writes survives, chosen at random.
    Prefix,
    /// A prefix survives, and the next write survives cut at a random byte (bytes it would
    /// have overwritten keep what they held).
    TornLast,
    /// As `TornLast`, but the cut write's missing bytes past the old end of the file read as
    /// zeros (within it, as what they held).
    ZeroTail,
    /// As `TornLast`, but the cut write's missing bytes read as garbage, even where they
    /// overwrote bytes (a disk that does not write sectors whole).
    GarbageTail,
    /// Each 512-byte sector the unsynced writes changed survives or not on its own, in no
    /// order: a later page of a batch may reach the disk while an earlier one reads as it was
    /// (zeros, in space never written). A grown file keeps its new length.
    Pages,
}

impl Tear {
    /// Every variant.
    pub const ALL: [Tear; 7] = [
        Tear::None,
        Tear::All,
        Tear::Prefix,
        Tear::TornLast,
        Tear::ZeroTail,
        Tear::GarbageTail,
        Tear::Pages,
    ];
}

/// What survives of `durable` and the unsynced `pending` writes under a tear that keeps a
/// prefix of the writes (and, as `tear` says, part of the next).
pub(super) fn some_writes(
    mut data: Vec<u8>,
    pending: &[FileOp],
    tear: Tear,
    rng: &mut SimRng,
) -> Vec<u8> {
    let n = pending.len();
    let (full, torn) = match tear {
        Tear::None => (0, false),
        Tear::All => (n, false),
        Tear::Prefix | Tear::Pages => (rng.below(n as u64 + 1) as usize, false),
        Tear::TornLast | Tear::ZeroTail | Tear::GarbageTail => {
            (rng.below(n as u64 + 1) as usize, true)
        }
    };
    for op in pending.iter().take(full) {
        apply_file_op(&mut data, op);
    }
    if torn {
        if let Some(FileOp::Write { offset, bytes }) = pending.get(full) {
            let cut = rng.below(bytes.len() as u64) as usize;
            let mut partial = bytes[..cut].to_vec();
            // Bytes the write did not reach keep what they held (a disk persists whole
            // sectors, so an overwrite cut short leaves the old ones), except under
            // `GarbageTail`, which models sectors that do not; past the old end of the file
            // they read as zeros (or garbage).
            let start = *offset as usize;
            for i in cut..bytes.len() {
                let old = data.get(start + i).copied();
                partial.push(match (tear, old) {
                    (Tear::GarbageTail, _) => rng.next_u64() as u8,
                    (_, Some(b)) => b,
                    (_, None) => 0,
                });
            }
            if tear == Tear::TornLast {
                partial.truncate(cut.max(data.len().saturating_sub(start).min(bytes.len())));
            }
            apply_file_op(
                &mut data,
                &FileOp::Write {
                    offset: *offset,
                    bytes: partial,
                },
            );
        }
    }
    data
}

/// The unit [`Tear::Pages`] keeps or drops: a 512-byte sector. A 4 KiB page is 8 of them, so
/// every outcome of pages reaching the disk out of order is among the outcomes it draws, and
/// small test segments span several.
const PAGE: usize = 512;

/// What survives of `durable` and the unsynced `pending` writes when each changed page reaches
/// the disk or not, at random and independently.
pub(super) fn some_pages(durable: Vec<u8>, pending: &[FileOp], rng: &mut SimRng) -> Vec<u8> {
    if pending.is_empty() {
        return durable;
    }
    let mut written = durable.clone();
    for op in pending {
        apply_file_op(&mut written, op);
    }
    // A length change is metadata: it survives or not on its own too.
    let len = if rng.below(2) == 0 || written.len() > durable.len() {
        written.len()
    } else {
        durable.len()
    };
    let mut out = durable;
    out.resize(len, 0);
    for start in (0..len).step_by(PAGE) {
        let end = (start + PAGE).min(len);
        let Some(new) = written.get(start..end.min(written.len())) else {
            continue;
        };
        if out[start..start + new.len()] != *new && rng.below(2) == 0 {
            out[start..start + new.len()].copy_from_slice(new);
        }
    }
    out
}
