//! The write cases (append message, create run + terminal commit) on makalog, on SQLite's one
//! connection, and on the floor of the durable writes an operation must make: per writer, a
//! preallocated file overwritten once for each of them, each write followed by `fdatasync`.
//! An appended message is one durable write; a run and its terminal commit are two (the run's
//! record, then the terminal batch), as they are two transactions on SQLite. The floor writes
//! [`FLOOR_WRITE`] bytes each time: every write of these cases fits in a page, and a sync of
//! one page costs the same whatever part of it changed.

use super::common::{preallocated, run_threads, scratch, BenchResult, ROUNDS};
use super::{header, run, run_id, sqlite, stores, terminal};
use makalog::store::ExecutionStores;
use rusqlite::Connection;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::Duration;

/// Bytes of each of the floor's writes.
const FLOOR_WRITE: usize = 512;

/// A write case's rates, in operations a second.
pub struct Rates {
    pub makalog: f64,
    pub sqlite: f64,
    pub floor: f64,
}

/// What one operation is on makalog and on SQLite, and how many durable writes it must make.
pub struct WriteOp<'a> {
    pub makalog: &'a (dyn Fn(&ExecutionStores, &str, usize) -> BenchResult<()> + Sync),
    pub sqlite: &'a (dyn Fn(&mut Connection, &str, usize) -> BenchResult<()> + Sync),
    pub durable_writes: usize,
}

/// One of the write cases: `op` run by `writers` threads, each on a session of its own (or a
/// floor file of its own), on makalog, on SQLite's one connection (which runs a share of the
/// operations: its writers queue one commit at a time) and on the floor. The three take turns
/// in rounds, each round starting with the next.
pub fn write_case(writers: usize, per_writer: usize, op: &WriteOp) -> BenchResult<Rates> {
    let m_dir = scratch()?;
    let (_owner, m) = stores(m_dir.path())?;
    let s_dir = scratch()?;
    let conn = Mutex::new(sqlite::db(&s_dir.path().join("state.db"))?);
    let f_dir = scratch()?;
    let names: Vec<String> = (0..writers).map(|t| format!("writer-{t:02}")).collect();
    for name in &names {
        m.sessions.create(header(name, 1))?;
        let c = conn.lock().map_err(|_| "sqlite lock")?;
        sqlite::insert_session(&c, &header(name, 1))?;
    }
    let mut floors = names
        .iter()
        .map(|name| {
            let len = per_writer * op.durable_writes * FLOOR_WRITE;
            Ok((preallocated(&f_dir.path().join(name), len)?, 0))
        })
        .collect::<BenchResult<Vec<(File, u64)>>>()?;
    let share = if writers > 1 {
        super::common::SQLITE_CONCURRENT_SHARE
    } else {
        1
    };
    let per = per_writer / ROUNDS;
    let s_per = (per / share).max(1);
    let bytes = [0xa5u8; FLOOR_WRITE];
    let mut took = [Duration::ZERO; 3];
    for round in 0..ROUNDS {
        for k in 0..3 {
            let engine = (k + round) % 3;
            let threads: Vec<usize> = (0..writers).collect();
            took[engine] += match engine {
                0 => run_threads(threads, per, |t, j| {
                    (op.makalog)(&m, &names[*t], round * per + j)
                })?,
                1 => run_threads(threads, s_per, |t, j| {
                    let mut c = conn.lock().map_err(|_| "sqlite lock")?;
                    (op.sqlite)(&mut c, &names[*t], round * per + j)
                })?,
                _ => run_threads(floors.iter_mut().collect(), per, |f, _| {
                    let (file, at) = &mut **f;
                    for _ in 0..op.durable_writes {
                        file.write_all_at(&bytes, *at)?;
                        *at += FLOOR_WRITE as u64;
                        file.sync_data()?;
                    }
                    Ok(())
                })?,
            };
        }
    }
    m.close()?;
    let rate = |count: usize, d: Duration| (count * writers * ROUNDS) as f64 / d.as_secs_f64();
    Ok(Rates {
        makalog: rate(per, took[0]),
        sqlite: rate(s_per, took[1]),
        floor: rate(per, took[2]),
    })
}

/// Create run + terminal commit on makalog.
pub fn run_and_terminal(s: &ExecutionStores, session: &str, i: usize) -> BenchResult<()> {
    s.runs.create_run(run(session, i))?;
    s.runs
        .commit_terminal(session, &run_id(session, i), &terminal(session, i)?, None)?;
    Ok(())
}

/// Create run + terminal commit on SQLite: two transactions.
pub fn sqlite_run_and_terminal(c: &mut Connection, session: &str, i: usize) -> BenchResult<()> {
    sqlite::create_run(c, &run(session, i))?;
    sqlite::commit_terminal(c, session, &run_id(session, i), &terminal(session, i)?)
}
