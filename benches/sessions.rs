//! Many sessions, side by side with SQLite holding the same records in the original runtime's
//! schema (WAL, `synchronous=FULL`):
//! - a host that touches N sessions in turn, one turn each (opening, user message, text,
//!   terminal), with the store's defaults: time, resident memory and open descriptors as it
//!   goes (bounded by the open-session cap, not by N);
//! - the footprint of that root (allocated blocks as `du` counts them, and apparent bytes) and
//!   of one session of 100,000 events, beside SQLite's files for the same events;
//! - creating 1,000 sessions, each with its first durable append, with 1 and with 16 creators,
//!   beside a raw floor doing the same file-system steps with plain system calls, and beside
//!   SQLite inserting the same session rows, one transaction each;
//! - reopening the N-session root and listing every session's invocations, beside SQLite.
//!
//! Run: `cargo bench --bench sessions` (`-- --quick` for a smoke run).

mod common;

use common::{
    group, owner, parse_args, scratch, sqlite_connection, BenchResult, INSERT_EVENT,
    RUNTIME_EVENTS_SCHEMA,
};
use makalog::event::RuntimeEvent;
use makalog::format::{RecordKind, SegmentHeader, FORMAT_VERSION};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::RuntimeEventStore;
use rusqlite::Connection;
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

const TEXT: &str = "The model streamed this sentence about the repository while reading files; \
    it is about as long as a typical text event of a coding agent.";

/// One turn: the invocation's opening, the user's message, `texts` texts, the terminal.
fn turn(session: &str, run: &str, ts: f64, texts: usize) -> Vec<RuntimeEvent> {
    let made = (|| -> BenchResult<Vec<RuntimeEvent>> {
        let mut out = vec![common::opening_event(session, run, ts)?];
        out.push(common::runtime_event(
            session,
            run,
            &format!("{run}-user"),
            ts + 1.0,
            json!({"role": "user", "author": "user", "content": {"kind": "text", "text": "Fix the failing test."}}),
        )?);
        for i in 0..texts {
            out.push(common::runtime_event(
                session,
                run,
                &format!("{run}-text-{i}"),
                ts + 2.0 + i as f64,
                json!({"modelVisibility": "visible", "content": {"kind": "text", "text": TEXT}}),
            )?);
        }
        out.push(common::terminal_event(session, run, ts + 999.0)?);
        Ok(out)
    })();
    made.unwrap_or_else(|e| panic!("bench events of {run}: {e}"))
}

fn session_id(i: usize) -> String {
    format!("session-{i:06}")
}

/// Resident and peak resident memory of this process, and its open descriptors.
fn process_usage() -> BenchResult<(u64, u64, usize)> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib = |key: &str| -> BenchResult<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(key))
            .ok_or_else(|| format!("no {key}"))?;
        Ok(line.split_whitespace().nth(1).ok_or("no value")?.parse()?)
    };
    let fds = std::fs::read_dir("/proc/self/fd")?.count();
    Ok((kib("VmRSS:")?, kib("VmHWM:")?, fds))
}

/// Allocated bytes (as `du` counts them) and apparent bytes of everything under `path`.
fn footprint(path: &Path) -> BenchResult<(u64, u64)> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut out = (meta.blocks() * 512, meta.len());
    if meta.is_dir() {
        for e in std::fs::read_dir(path)? {
            let (a, b) = footprint(&e?.path())?;
            out.0 += a;
            out.1 += b;
        }
    }
    Ok(out)
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// The original's tables this benchmark fills: sessions, runtime events and their ordinals.
fn sqlite_db(path: &Path) -> BenchResult<Connection> {
    let conn = sqlite_connection(path)?;
    conn.execute_batch(RUNTIME_EVENTS_SCHEMA)?;
    conn.execute_batch(
        "CREATE INDEX runtime_events_by_run ON runtime_events(session_id, run_id, event_seq);
         CREATE INDEX runtime_events_by_session ON runtime_events(session_id, committed_at, event_id);
         CREATE TABLE runtime_session_event_ordinals (
           session_id TEXT NOT NULL, ordinal INTEGER NOT NULL CHECK (ordinal > 0),
           event_id TEXT NOT NULL UNIQUE, PRIMARY KEY (session_id, ordinal)) WITHOUT ROWID;
         CREATE TABLE session_metadata (
           session_id TEXT PRIMARY KEY, payload_json TEXT NOT NULL, created_at INTEGER NOT NULL,
           last_used_at INTEGER NOT NULL, name TEXT NOT NULL, backend TEXT NOT NULL,
           model TEXT NOT NULL, committed_at INTEGER NOT NULL);",
    )?;
    Ok(conn)
}

fn sqlite_session_row(conn: &Connection, session: &str) -> BenchResult<()> {
    conn.prepare_cached(
        "INSERT INTO session_metadata (session_id, payload_json, created_at, last_used_at, name, \
         backend, model, committed_at) VALUES (?1, ?2, 1, 1, 'New session', 'fake', 'fake-model', 1)",
    )?
    .execute(rusqlite::params![
        session,
        format!("{{\"id\":\"{session}\",\"name\":\"New session\"}}")
    ])?;
    Ok(())
}

/// Inserts events with their per-invocation sequence and per-session ordinal.
fn sqlite_events(
    conn: &Connection,
    events: &[RuntimeEvent],
    first_ordinal: usize,
) -> BenchResult<()> {
    let mut insert = conn.prepare_cached(INSERT_EVENT)?;
    let mut ordinal = conn.prepare_cached(
        "INSERT INTO runtime_session_event_ordinals (session_id, ordinal, event_id) VALUES (?1, ?2, ?3)",
    )?;
    // Sequence numbers per invocation go on from the ordinal (one invocation per call but for
    // the large session, which passes all its events at once from ordinal 1).
    let mut seqs = std::collections::HashMap::<&str, i64>::new();
    for (k, e) in events.iter().enumerate() {
        let seq = seqs
            .entry(e.invocation_id())
            .or_insert(first_ordinal as i64 - 1);
        *seq += 1;
        common::insert_event(&mut insert, e, *seq)?;
        ordinal.execute(rusqlite::params![
            e.session_id(),
            (first_ordinal + k) as i64,
            e.id()
        ])?;
    }
    Ok(())
}

/// Bytes SQLite keeps for its database after a checkpoint: the main file and any WAL left.
fn sqlite_bytes(conn: &Connection, path: &Path) -> BenchResult<(u64, u64)> {
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    let mut out = footprint(path)?;
    let wal = path.with_extension("db-wal");
    if wal.exists() {
        let (a, b) = footprint(&wal)?;
        out.0 += a;
        out.1 += b;
    }
    Ok(out)
}

/// The host: one store with the defaults, a turn to each session in turn, durable as the store
/// makes immutable events; samples memory and descriptors as it goes.
fn touch_sessions(root: &Path, n: usize) -> BenchResult<Duration> {
    let owner = common::owner(root)?;
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    let (rss0, _, fds0) = process_usage()?;
    let mut samples = Vec::new();
    let step = (n / 5).max(1);
    let start = Instant::now();
    for i in 0..n {
        let s = session_id(i);
        for e in turn(&s, &format!("run-{i}"), i as f64 * 10.0, 1) {
            store.append(&e, Durability::Durable)?;
        }
        if (i + 1) % step == 0 {
            let (rss, _, fds) = process_usage()?;
            samples.push((i + 1, rss, fds, store.open_sessions()));
        }
    }
    let elapsed = start.elapsed();
    store.close()?;
    let (_, peak, _) = process_usage()?;
    println!(
        "  peak RSS of the process so far: {} KiB",
        group(peak as f64)
    );
    println!(
        "  {} sessions touched in {:.1} s ({} sessions/s, {} events/s durable)",
        group(n as f64),
        elapsed.as_secs_f64(),
        group(n as f64 / elapsed.as_secs_f64()),
        group(4.0 * n as f64 / elapsed.as_secs_f64())
    );
    println!(
        "  before: RSS {} KiB, {fds0} descriptors",
        group(rss0 as f64)
    );
    for (done, rss, fds, open) in samples {
        println!(
            "  after {:>7} sessions: RSS {:>7} KiB, {fds:>4} descriptors, {open} sessions open",
            group(done as f64),
            group(rss as f64)
        );
    }
    Ok(elapsed)
}

/// The same records in SQLite as the original writes them: the session's row, then each event
/// in its own transaction (each durable before the next, as makalog's are).
fn sqlite_touch(path: &Path, n: usize) -> BenchResult<(Connection, Duration)> {
    let conn = sqlite_db(path)?;
    let start = Instant::now();
    for i in 0..n {
        let s = session_id(i);
        sqlite_session_row(&conn, &s)?;
        for (k, e) in turn(&s, &format!("run-{i}"), i as f64 * 10.0, 1)
            .iter()
            .enumerate()
        {
            sqlite_events(&conn, std::slice::from_ref(e), k + 1)?;
        }
    }
    Ok((conn, start.elapsed()))
}

/// Lists every session's invocations from a freshly opened store (read-only views).
fn list_all(root: &Path, n: usize) -> BenchResult<(Duration, usize)> {
    let owner = common::owner(root)?;
    let start = Instant::now();
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    let mut listed = 0;
    for i in 0..n {
        listed += store.list_session_invocations(&session_id(i))?.len();
    }
    let elapsed = start.elapsed();
    store.close()?;
    Ok((elapsed, listed))
}

fn sqlite_list_all(path: &Path, n: usize) -> BenchResult<(Duration, usize)> {
    let start = Instant::now();
    let conn = sqlite_connection(path)?;
    let mut listed = 0;
    for i in 0..n {
        listed += common::sqlite_list(&conn, &session_id(i))?;
    }
    Ok((start.elapsed(), listed))
}

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
fn create_case(n: usize, creators: usize) -> BenchResult<(f64, f64, f64)> {
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

/// Durable appends of 400-byte records to a new session, with the zero space ahead growing to
/// 1 MiB (the default policy) and with none; in rounds, a fresh session each. Records a second.
fn growth_case(records: usize) -> BenchResult<(f64, f64)> {
    let payload = vec![b'x'; 400];
    let mut took = [Duration::ZERO; 2];
    for round in 0..common::ROUNDS {
        for k in 0..2 {
            let which = (k + round) % 2;
            let dir = scratch()?;
            let owner = owner(dir.path())?;
            let config = WriterConfig {
                prealloc_step: if which == 0 { 1 << 20 } else { 0 },
                ..WriterConfig::default()
            };
            let (w, _) = SegmentWriter::open(&owner, "growth", config)?;
            let start = Instant::now();
            for _ in 0..records / common::ROUNDS {
                w.append(RecordKind::RuntimeEvent, &payload, Durability::Durable)?;
            }
            took[which] += start.elapsed();
            w.close()?;
        }
    }
    let rate = |d: Duration| records as f64 / d.as_secs_f64();
    Ok((rate(took[0]), rate(took[1])))
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let q = args.quick;
    let n = args.records.unwrap_or(if q { 300 } else { 10_000 });
    let mut table = Vec::new();

    println!(
        "a host touching {n} sessions in turn, one turn each (4 durable events), store defaults"
    );
    let dir = scratch()?;
    let touched = touch_sessions(dir.path(), n)?;
    let (mut conn, sqlite_touched) = sqlite_touch(&dir.path().join("state.db"), n)?;
    println!(
        "  SQLite, the same records, a transaction each: {:.1} s; makalog/SQLite {:.2}",
        sqlite_touched.as_secs_f64(),
        sqlite_touched.as_secs_f64() / touched.as_secs_f64()
    );
    table.push(format!(
        "| touch {} sessions, 1 turn each | {} sessions/s | {} sessions/s | {:.2} | RSS and descriptors flat (above) |",
        group(n as f64),
        group(n as f64 / touched.as_secs_f64()),
        group(n as f64 / sqlite_touched.as_secs_f64()),
        sqlite_touched.as_secs_f64() / touched.as_secs_f64()
    ));

    println!("footprint of those {n} small sessions");
    let (alloc, apparent) = footprint(&dir.path().join("root/sessions"))?;
    let (s_alloc, s_apparent) = sqlite_bytes(&conn, &dir.path().join("state.db"))?;
    let per = |b: u64| b as f64 / n as f64;
    println!(
        "  makalog: {} on disk ({} a session), {} apparent ({} a session)",
        kib(alloc as f64),
        kib(per(alloc)),
        kib(apparent as f64),
        kib(per(apparent))
    );
    println!(
        "  SQLite:  {} on disk ({} a session), {} apparent",
        kib(s_alloc as f64),
        kib(per(s_alloc)),
        kib(s_apparent as f64)
    );
    table.push(format!(
        "| footprint of {} small sessions, per session | {} on disk, {} apparent | {} | {:.1} | bar ≤ 16 KiB on disk; floor 3 blocks (directory, segment, sidecar) = 12 KiB |",
        group(n as f64),
        kib(per(alloc)),
        kib(per(apparent)),
        kib(per(s_alloc)),
        alloc as f64 / s_alloc as f64
    ));

    println!("reopening the root and listing every session's invocations");
    let (m, listed) = list_all(dir.path(), n)?;
    let (s, s_listed) = sqlite_list_all(&dir.path().join("state.db"), n)?;
    assert_eq!(listed, s_listed, "both list the same invocations");
    let (m2, _) = list_all(dir.path(), n)?;
    let (s2, _) = sqlite_list_all(&dir.path().join("state.db"), n)?;
    let (m, s) = (m.min(m2), s.min(s2));
    println!(
        "  {listed} invocations of {n} sessions: makalog {:.0} ms, SQLite {:.0} ms, makalog {:.2} × SQLite's speed",
        m.as_secs_f64() * 1e3,
        s.as_secs_f64() * 1e3,
        s.as_secs_f64() / m.as_secs_f64()
    );
    table.push(format!(
        "| reopen and list every session's invocations ({}) | {:.0} ms | {:.0} ms | {:.2} × SQLite's speed | bar ≥ 1 × |",
        group(n as f64),
        m.as_secs_f64() * 1e3,
        s.as_secs_f64() * 1e3,
        s.as_secs_f64() / m.as_secs_f64()
    ));
    drop(conn);

    let events = if q { 5_000 } else { 100_000 };
    println!("footprint of one session of {events} events (turns of 10: opening, user, 7 texts, terminal)");
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let all: Vec<RuntimeEvent> = (0..events / 10)
        .flat_map(|t| turn("large", &format!("run-{t:06}"), t as f64 * 1e3, 7))
        .collect();
    let (w, _) = SegmentWriter::open(&owner, "large", WriterConfig::default())?;
    for e in &all {
        w.append(
            RecordKind::RuntimeEvent,
            e.canonical_json().as_bytes(),
            Durability::Buffered,
        )?;
    }
    w.close()?;
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    store.open_session_now("large")?;
    store.close()?;
    let (alloc, apparent) = footprint(&dir.path().join("root/sessions/large"))?;
    let (index_alloc, _) = footprint(&dir.path().join("root/sessions/large/index"))?;
    conn = sqlite_db(&dir.path().join("state.db"))?;
    let tx = conn.transaction()?;
    sqlite_session_row(&tx, "large")?;
    sqlite_events(&tx, &all, 1)?;
    tx.commit()?;
    let (s_alloc, s_apparent) = sqlite_bytes(&conn, &dir.path().join("state.db"))?;
    let json: usize = all.iter().map(|e| e.canonical_json().len()).sum();
    println!(
        "  canonical JSON {} ({} bytes an event)",
        kib(json as f64),
        json / events
    );
    println!(
        "  makalog: {} on disk ({:.0} bytes an event; sidecar {}), {} apparent",
        kib(alloc as f64),
        alloc as f64 / events as f64,
        kib(index_alloc as f64),
        kib(apparent as f64)
    );
    println!(
        "  SQLite:  {} on disk ({:.0} bytes an event), {} apparent; makalog/SQLite {:.2}",
        kib(s_alloc as f64),
        s_alloc as f64 / events as f64,
        kib(s_apparent as f64),
        alloc as f64 / s_alloc as f64
    );
    table.push(format!(
        "| one session of {} events, on disk | {:.0} B an event | {:.0} B an event | {:.2} | bar ≤ 0.8 × SQLite, sidecar included |",
        group(events as f64),
        alloc as f64 / events as f64,
        s_alloc as f64 / events as f64,
        alloc as f64 / s_alloc as f64
    ));
    drop(conn);

    let creations = if q { 96 } else { 1_008 };
    for creators in [1, 16] {
        println!("creating {creations} sessions, each with its first durable append, {creators} creator(s)");
        let (m, raw, s) = create_case(creations, creators)?;
        println!(
            "  makalog {} /s   raw floor {} /s   SQLite {} /s   makalog/raw {:.2}   makalog/SQLite {:.2}",
            group(m),
            group(raw),
            group(s),
            m / raw,
            m / s
        );
        table.push(format!(
            "| create a session and its first durable append, {creators} creator(s) | {} /s | {} /s | {:.2} | raw floor {} /s, makalog/raw {:.2} (bar ≥ 0.9) |",
            group(m),
            group(s),
            m / s,
            group(raw),
            m / raw
        ));
    }

    let records = if q { 600 } else { 6_000 };
    println!("{records} durable appends of 400 bytes to a new session: zeros ahead growing to 1 MiB, or none");
    let (grow, none) = growth_case(records)?;
    println!(
        "  growing {} /s   none {} /s   growing/none {:.2}",
        group(grow),
        group(none),
        grow / none
    );
    table.push(format!(
        "| durable appends to a new session, zeros ahead growing to 1 MiB | {} /s | – | – | {:.2} × no preallocation ({} /s) |",
        group(grow),
        grow / none,
        group(none)
    ));

    common::print_table(&table);
    Ok(())
}
