//! The order a session's records are written in: the header first, then every record by the
//! time it states, so that replaying the imported log to a point in time sees what the original
//! held then. Each source keeps its own order (a run's events, the session's runtime events),
//! and a record never precedes what it rests on (a run event its run).

use makalog::import::Planned;

/// Refuses a record the store would refuse for its size (`format::DEFAULT_MAX_PAYLOAD`): the
/// original keeps large messages in chunks with no bound, so one may not fit a frame.
pub fn fits(canonical: &str) -> Result<(), String> {
    let max = makalog::format::DEFAULT_MAX_PAYLOAD as usize;
    if canonical.len() > max {
        return Err(format!(
            "its record is {} bytes, more than a record may hold ({max})",
            canonical.len()
        ));
    }
    Ok(())
}

/// Refuses a session header the session store would refuse a host: one that does not leave
/// `model::RUNTIME_FIELDS_ROOM` bytes under the bound for the fields a turn on the imported
/// session sets on it.
pub fn header_fits(canonical: &str) -> Result<(), String> {
    let room = makalog::model::RUNTIME_FIELDS_ROOM;
    let max = makalog::format::DEFAULT_MAX_PAYLOAD as usize - room;
    if canonical.len() > max {
        return Err(format!(
            "its header is {} bytes, more than a session's header may hold ({max}: {room} bytes \
             of a record's bound are left for the fields the runtime sets)",
            canonical.len()
        ));
    }
    Ok(())
}

/// What a record is, ordering records of the same time: turns, then runs, their events,
/// runtime events and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    Turn,
    Run,
    RunEvent,
    RuntimeEvent,
    Message,
}

/// A planned record and the time it states (ms).
pub struct Timed {
    ts: f64,
    rank: Rank,
    planned: Planned,
}

impl Timed {
    pub fn new(ts: f64, rank: Rank, planned: Planned) -> Timed {
        Timed { ts, rank, planned }
    }
}

/// The records of `streams` (each in its own order) merged by time: a record's time is raised
/// to its predecessor's in its stream, so no stream is reordered, and the sort is stable, so
/// records of one time keep the streams' order.
pub fn merge(streams: Vec<Vec<Timed>>) -> Vec<Planned> {
    let mut all: Vec<Timed> = Vec::with_capacity(streams.iter().map(Vec::len).sum());
    for stream in streams {
        let mut floor = f64::NEG_INFINITY;
        for mut t in stream {
            floor = floor.max(t.ts);
            t.ts = floor;
            all.push(t);
        }
    }
    all.sort_by(|a, b| a.ts.total_cmp(&b.ts).then(a.rank.cmp(&b.rank)));
    all.into_iter().map(|t| t.planned).collect()
}
