//! Creating sessions, each with its first durable append, with 1 and with 16 creators: the
//! store, the raw floor of the same file-system steps with plain system calls, and SQLite.

use super::common::{self, owner, scratch, BenchResult};
use super::sqlite::{sqlite_db, sqlite_events, sqlite_session_row};
use super::{session_id, turn};
use makalog::event::RuntimeEvent;
use makalog::format::{RecordKind, SegmentHeader, FORMAT_VERSION};
use makalog::segment::{Durability, WriterConfig};
use makalog::store::RuntimeEventStore;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

/// The raw floor of creating a session and its first durable append: the steps of the write
/// protocol with plain system calls: make the directory, sync its parent, create the segment
/// exclusively with its header and first block, `fdatasync`, sync the directory, write the
/// record, `fdatasync`.
fn raw_create(sessions: &Path, i: usize, header: &[u8], frame: &[u8]) -> BenchResult<()> {
    let dir = sessions.join(session_id(i));
    std::fs::create_dir(&dir)?;
    File::open(sessions)?.sync_all()?;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join("00000000000000000001.seg"))?;
    f.write_all_at(header, 0)?;
    f.sync_data()?;
    File::open(&dir)?.sync_all()?;
    f.write_all_at(frame, header.len() as u64)?;
    f.sync_data()?;
    Ok(())
}

/// Creates `n` sessions from `creators` threads, each with its first durable append (the
/// invocation's opening): makalog, the raw floor and SQLite, each in a directory of its own, in
/// rounds that take the engines in turn. Rates in sessions a second.
pub fn create_case(n: usize, creators: usize) -> BenchResult<(f64, f64, f64)> {
    let rounds = common::ROUNDS;
    let per = n / creators / rounds;
    let opening = |i: usize| turn(&session_id(i), &format!("run-{i}"), 1.0, 0).remove(0);

    let m_dir = scratch()?;
    let owner = owner(m_dir.path())?;
    // Room for every session: creation is measured apart from eviction (the host case above
    // pays for both).
    let store = RuntimeEventStore::with_open_limit(&owner, WriterConfig::default(), n + 1);
    store.open_session_now("warm-up")?;

    let r_dir = scratch()?;
    let sessions = r_dir.path().join("sessions");
    std::fs::create_dir(&sessions)?;
    let mut header = SegmentHeader {
        version: FORMAT_VERSION,
        max_payload: makalog::format::DEFAULT_MAX_PAYLOAD,
        ordinal: 0,
        first_seq: 1,
        prev_chain: [0; 32],
        session_id: "session-000000".into(),
    }
    .encode()
    .to_vec();
    header.resize(4096, 0);
    let mut frame = Vec::new();
    let payload = opening(0);
    makalog::format::encode_frame(
        &mut frame,
        makalog::format::FrameLayout::NEW,
        1,
        RecordKind::RuntimeEvent,
        payload.canonical_json().as_bytes(),
        &[0; 32],
        0,
    );

    let s_dir = scratch()?;
    let conn = std::sync::Mutex::new(sqlite_db(&s_dir.path().join("state.db"))?);
    let sqlite_per = per.div_ceil(common::SQLITE_CONCURRENT_SHARE).max(1);

    // Events are made before the clock starts: the raw floor's bytes are made beforehand too.
    let events: Vec<RuntimeEvent> = (0..rounds * per * creators).map(opening).collect();
    let names: Vec<String> = (0..rounds * per * creators).map(session_id).collect();
    let mut took = [Duration::ZERO; 3];
    for round in 0..rounds {
        let base = round * per * creators;
        for k in 0..3 {
            let engine = (k + round) % 3;
            let threads: Vec<usize> = (0..creators).collect();
            let index = |t: usize, j: usize| base + t * per + j;
            took[engine] += match engine {
                0 => common::run_threads(threads, per, |t, j| {
                    store.append(&events[index(*t, j)], Durability::Durable)?;
                    Ok(())
                })?,
                1 => common::run_threads(threads, per, |t, j| {
                    raw_create(&sessions, index(*t, j), &header, &frame)
                })?,
                _ => common::run_threads(threads, sqlite_per, |t, j| {
                    let mut conn = conn.lock().map_err(|_| "sqlite lock")?;
                    let tx = conn.transaction()?;
                    let i = index(*t, j);
                    sqlite_session_row(&tx, &names[i])?;
                    sqlite_events(&tx, std::slice::from_ref(&events[i]), 1)?;
                    tx.commit()?;
                    Ok(())
                })?,
            };
        }
    }
    store.close()?;
    let rate = |count: usize, d: Duration| (count * rounds) as f64 / d.as_secs_f64();
    Ok((
        rate(per * creators, took[0]),
        rate(per * creators, took[1]),
        rate(sqlite_per * creators, took[2]),
    ))
}
