//! The second baseline of the streamed case: the segment writer appending the very records the
//! runtime wrote in a round of turns, with the same durable points. A turn must sync twice —
//! its opening (run, user message, run_started) before the backend is called, its end after —
//! which the writer's own streaming rate (one durable a turn) does not pay; this baseline
//! pays what the runtime must, so the ratio is what the runtime adds on top.

use super::common::{owner, run_threads, scratch, BenchResult};
use makalog::format::RecordKind;
use makalog::root::Owner;
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};

/// A session's records as written: kind, payload, and how it was appended.
pub type Written = Vec<(RecordKind, Vec<u8>, Durability)>;

/// How many records session `id` holds.
pub fn count(owner: &Owner, id: &str) -> BenchResult<usize> {
    let mut reader = SessionReader::open(&**owner.storage(), id, 0)?;
    let mut n = 0;
    while let Some(r) = reader.next_view() {
        r?;
        n += 1;
    }
    Ok(n)
}

/// The records of session `id` after its first `skip`, each durable where the next record was
/// written after a sync that covered it (its frame's `durable_seq`), and the last durable.
pub fn written(owner: &Owner, id: &str, skip: usize) -> BenchResult<Written> {
    let mut reader = SessionReader::open(&**owner.storage(), id, 0)?;
    let mut seen: Vec<(RecordKind, Vec<u8>, u64, Option<u64>)> = Vec::new();
    while let Some(r) = reader.next_view() {
        let r = r?;
        seen.push((r.kind, r.payload.to_vec(), r.seq, r.durable_seq));
    }
    let seen = seen.split_off(skip.min(seen.len()));
    let mut out = Written::with_capacity(seen.len());
    for (i, (kind, payload, seq, _)) in seen.iter().enumerate() {
        let synced_after = seen
            .get(i + 1)
            .is_none_or(|next| next.3.is_some_and(|d| d >= *seq));
        let d = if synced_after {
            Durability::Durable
        } else {
            Durability::Buffered
        };
        out.push((*kind, payload.clone(), d));
    }
    Ok(out)
}

/// The durable appends in `w`.
pub fn syncs(w: &Written) -> usize {
    w.iter()
        .filter(|r| matches!(r.2, Durability::Durable))
        .count()
}

/// Each session's records appended again by a segment writer of its own on a fresh root, one
/// thread a session: (records appended, time).
pub fn replay(all: &[Written]) -> BenchResult<(usize, std::time::Duration)> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let states: Vec<(SegmentWriter, &Written)> = all
        .iter()
        .enumerate()
        .map(|(n, w)| {
            SegmentWriter::open(&owner, &format!("r-{n}"), WriterConfig::default())
                .map(|o| (o.0, w))
        })
        .collect::<Result<_, _>>()?;
    let took = run_threads(states, 1, |(writer, records), _| {
        for (kind, payload, d) in records.iter() {
            writer.append(*kind, payload, *d)?;
        }
        Ok(())
    })?;
    Ok((all.iter().map(Vec::len).sum(), took))
}
