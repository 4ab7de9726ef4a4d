//! Runtime events and the invocation index, side by side with SQLite holding the same events in
//! the original runtime's `runtime_events` table:
//! - one durable append into a run that already holds 10, 1,000 and 100,000 events (the bar:
//!   flat within 10 %; the original re-scans the run on every append);
//! - opening a session with a valid sidecar as its log grows tenfold (bar: at most 1.1 ×);
//! - listing a session's invocations (bar: at least 5 × faster than SQLite);
//! - a full index rebuild from the page cache (bar: at least 400 MiB/s).
//!
//! Run: `cargo bench --bench events` (`-- --quick` for a smoke run).

mod common;

use common::{
    group, owner, parse_args, scratch, sqlite_connection, BenchResult, INSERT_EVENT,
    RUNTIME_EVENTS_SCHEMA,
};
use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::index::rebuild;
use makalog::root::Owner;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::RuntimeEventStore;
use rusqlite::Connection;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const S: &str = "bench-session";
/// Appends made before the clock starts, so every size starts from a warm writer.
const WARMUP: usize = 20;
const TEXT: &str = "The model streamed this sentence about the repository while reading files; \
    it is about as long as a typical text event of a coding agent, a few hundred bytes once \
    the envelope is added, so the numbers below are per realistic event.";

fn event(run: &str, id: &str, ts: f64, extra: serde_json::Value) -> BenchResult<RuntimeEvent> {
    common::runtime_event(S, run, id, ts, extra)
}

fn opening(run: &str, ts: f64) -> BenchResult<RuntimeEvent> {
    common::opening_event(S, run, ts)
}

fn text(run: &str, i: usize) -> BenchResult<RuntimeEvent> {
    event(
        run,
        &format!("{run}-text-{i}"),
        1_800_000_000_000.0 + i as f64,
        json!({
            "content": {"kind": "text", "text": TEXT},
        }),
    )
}

fn terminal(run: &str, ts: f64) -> BenchResult<RuntimeEvent> {
    common::terminal_event(S, run, ts)
}

/// Writes events straight to the session's ledger (the bytes the store writes, buffered, one
/// sync at the end), then lets the store build the sidecar once.
fn fill(owner: &Owner, events: impl Iterator<Item = BenchResult<RuntimeEvent>>) -> BenchResult<()> {
    let (w, _) = SegmentWriter::open(owner, S, WriterConfig::default())?;
    for e in events {
        w.append(
            RecordKind::RuntimeEvent,
            e?.canonical_json().as_bytes(),
            Durability::Buffered,
        )?;
    }
    w.close()?;
    let store = RuntimeEventStore::open(owner, WriterConfig::default());
    store.open_session_now(S)?;
    store.close()?;
    Ok(())
}

fn sqlite_fill(
    conn: &mut Connection,
    events: impl Iterator<Item = BenchResult<RuntimeEvent>>,
) -> BenchResult<()> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare(INSERT_EVENT)?;
        let mut seqs = std::collections::HashMap::<String, i64>::new();
        for e in events {
            let e = e?;
            let seq = seqs.entry(e.invocation_id().to_owned()).or_insert(0);
            *seq += 1;
            common::insert_event(&mut insert, &e, *seq)?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn sqlite_db(dir: &Path) -> BenchResult<Connection> {
    let conn = sqlite_connection(&dir.join("state.db"))?;
    conn.execute_batch(RUNTIME_EVENTS_SCHEMA)?;
    conn.execute_batch(
        "CREATE INDEX runtime_events_by_run ON runtime_events (session_id, run_id, event_seq);
         CREATE INDEX runtime_events_by_kind ON runtime_events (session_id, event_kind);",
    )?;
    Ok(conn)
}

/// What the original does for one append: read the run's events back to check sealing and
/// identity, then insert with the next sequence number, one transaction, one sync.
fn sqlite_append(conn: &Connection, e: &RuntimeEvent) -> BenchResult<()> {
    let mut scan = conn.prepare_cached(
        "SELECT payload_json FROM runtime_events WHERE session_id = ?1 AND run_id = ?2 ORDER BY event_seq",
    )?;
    let mut rows = scan.query(rusqlite::params![e.session_id(), e.run_id()])?;
    while let Some(row) = rows.next()? {
        let json: String = row.get(0)?;
        let stored: serde_json::Value = serde_json::from_str(&json)?;
        if stored["id"] == e.id() || stored["status"] == "completed" {
            return Err("sealed or duplicate".into());
        }
    }
    conn.prepare_cached(
        "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, \
         event_kind, payload_json, committed_at) VALUES (?1, ?2, ?3, ?4, ?5, \
         (SELECT COALESCE(MAX(event_seq), 0) + 1 FROM runtime_events WHERE session_id = ?2 AND run_id = ?4), \
         ?6, ?7, ?8)",
    )?
    .execute(rusqlite::params![
        e.id(), e.session_id(), e.invocation_id(), e.run_id(), e.turn_id(), e.event_kind(),
        e.canonical_json(), e.ts() as i64,
    ])?;
    Ok(())
}

/// A run that already holds `size` events, in makalog and in SQLite, ready for appends.
struct Prepared {
    size: usize,
    _dir: tempfile::TempDir,
    store: RuntimeEventStore,
    conn: Connection,
    next: usize,
}

fn prepare(size: usize) -> BenchResult<Prepared> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let existing = || std::iter::once(opening(RUN, 1.0)).chain((0..size).map(|i| text(RUN, i)));
    fill(&owner, existing())?;
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    for i in size..size + WARMUP {
        store.append(&text(RUN, i)?, Durability::Durable)?;
    }
    let mut conn = sqlite_db(dir.path())?;
    sqlite_fill(&mut conn, existing())?;
    Ok(Prepared {
        size,
        _dir: dir,
        store,
        conn,
        next: size + WARMUP,
    })
}

const RUN: &str = "run-long";

/// Times `n` durable makalog appends and `m` SQLite appends into the prepared run.
fn append_round(p: &mut Prepared, n: usize, m: usize) -> BenchResult<(Duration, Duration)> {
    let new: Vec<RuntimeEvent> = (p.next..p.next + n + m)
        .map(|i| text(RUN, i))
        .collect::<BenchResult<_>>()?;
    p.next += n + m;
    let start = Instant::now();
    for e in &new[..n] {
        p.store.append(e, Durability::Durable)?;
    }
    let makalog = start.elapsed();
    let start = Instant::now();
    for e in &new[n..] {
        sqlite_append(&p.conn, e)?;
    }
    Ok((makalog, start.elapsed()))
}

/// Median time to open the session (sidecar checked, log recovered after it) and list its
/// invocations, over `reps` opens.
fn open_time(owner: &Owner, reps: usize) -> BenchResult<Duration> {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let store = RuntimeEventStore::open(owner, WriterConfig::default());
        store.open_session_now(S)?;
        store.list_session_invocations(S)?;
        times.push(start.elapsed());
        drop(store);
    }
    times.sort();
    Ok(times[reps / 2])
}

/// A session of `turns` invocations, each with `per_turn` texts.
fn turns(turns: usize, per_turn: usize) -> impl Iterator<Item = BenchResult<RuntimeEvent>> {
    (0..turns).flat_map(move |t| {
        let run = format!("run-{t:06}");
        let ts = t as f64 * 1_000.0;
        let mut v = vec![opening(&run, ts)];
        v.extend((0..per_turn).map(|i| {
            event(
                &run,
                &format!("{run}-text-{i}"),
                ts + 1.0 + i as f64,
                json!({
                    "content": {"kind": "text", "text": TEXT},
                }),
            )
        }));
        v.push(terminal(&run, ts + 999.0));
        v
    })
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let q = args.quick;
    let mut table = Vec::new();

    println!("appending to a run that already holds N events (durable, one at a time, sizes interleaved in rounds)");
    let sizes: &[(usize, usize, usize)] = if q {
        &[(10, 40, 20), (1_000, 40, 8), (10_000, 40, 1)]
    } else {
        &[(10, 500, 60), (1_000, 500, 15), (100_000, 500, 1)]
    };
    let mut prepared: Vec<Prepared> = sizes
        .iter()
        .map(|&(size, _, _)| prepare(size))
        .collect::<BenchResult<_>>()?;
    let mut totals = vec![(Duration::ZERO, Duration::ZERO); sizes.len()];
    for round in 0..common::ROUNDS {
        for k in 0..sizes.len() {
            let i = (k + round) % sizes.len();
            let (_, n, m) = sizes[i];
            let (a, b) = append_round(&mut prepared[i], n, m)?;
            totals[i].0 += a;
            totals[i].1 += b;
        }
    }
    let rates: Vec<(f64, f64)> = sizes
        .iter()
        .zip(&totals)
        .map(|(&(_, n, m), t)| {
            let r = common::ROUNDS as f64;
            (
                n as f64 * r / t.0.as_secs_f64(),
                m as f64 * r / t.1.as_secs_f64(),
            )
        })
        .collect();
    for (p, &(m, s)) in prepared.iter().zip(&rates) {
        let base = rates[0];
        println!(
            "  N = {:>7}: makalog {:>8} events/s ({:.2} × N = 10)   SQLite {:>7} events/s ({:.2} × N = 10)   makalog/SQLite {:.1}",
            p.size, group(m), m / base.0, group(s), s / base.1, m / s
        );
        table.push(format!(
            "| append into a run of {} events | {} /s | {} /s | {:.1} | makalog {:.2} × its N = 10 rate |",
            group(p.size as f64), group(m), group(s), m / s, m / base.0
        ));
    }
    for p in prepared {
        p.store.close()?;
    }

    println!("opening a session with a valid sidecar as its log grows tenfold (40 invocations, longer runs)");
    let (small, reps) = if q { (2_000, 5) } else { (20_000, 15) };
    let mut opens = Vec::new();
    let mut rebuild_rate = 0.0;
    for n in [small, small * 10] {
        let dir = scratch()?;
        let owner = owner(dir.path())?;
        fill(&owner, turns(40, n / 40))?;
        open_time(&owner, 2)?;
        let t = open_time(&owner, reps)?;
        println!(
            "  {n:>7} events: open + list {:.2} ms",
            t.as_secs_f64() * 1e3
        );
        opens.push(t);
        if n == small * 10 {
            let storage = owner.storage();
            let bytes: u64 = std::fs::read_dir(dir.path().join("root/sessions").join(S))?
                .filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "seg"))
                .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                .sum();
            rebuild(&**storage, S)?;
            let start = Instant::now();
            let view = rebuild(&**storage, S)?;
            let secs = start.elapsed().as_secs_f64();
            rebuild_rate = bytes as f64 / (1 << 20) as f64 / secs;
            println!(
                "  full rebuild of {:.1} MiB ({} invocations): {:.0} ms, {:.0} MiB/s",
                bytes as f64 / (1 << 20) as f64,
                view.invocations.len(),
                secs * 1e3,
                rebuild_rate
            );
        }
    }
    let open_ratio = opens[1].as_secs_f64() / opens[0].as_secs_f64();
    println!("  open(10 × log) / open(log) = {open_ratio:.2}");
    table.push(format!(
        "| open a session with a valid sidecar, log × 10 | {:.2} ms → {:.2} ms | – | – | {:.2} × (bar ≤ 1.1) |",
        opens[0].as_secs_f64() * 1e3,
        opens[1].as_secs_f64() * 1e3,
        open_ratio
    ));
    table.push(format!(
        "| full index rebuild from the page cache | {rebuild_rate:.0} MiB/s | – | – | bar ≥ 400 MiB/s |"
    ));

    println!("listing a session's invocations");
    let (n_turns, reps) = if q { (200, 20) } else { (1_000, 50) };
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    fill(&owner, turns(n_turns, 3))?;
    // Read-only: a fresh store, the session not open, each listing read from its files.
    let reader = RuntimeEventStore::open(&owner, WriterConfig::default());
    let start = Instant::now();
    for _ in 0..reps {
        reader.list_session_invocations(S)?;
    }
    let read_only = start.elapsed().as_secs_f64() / reps as f64;
    drop(reader);
    // Open for writing, as the runtime holds it: listed from its view in memory.
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    store.open_session_now(S)?;
    let listed = store.list_session_invocations(S)?.len();
    let start = Instant::now();
    for _ in 0..reps {
        store.list_session_invocations(S)?;
    }
    let m = start.elapsed().as_secs_f64() / reps as f64;
    let mut conn = sqlite_db(dir.path())?;
    sqlite_fill(&mut conn, turns(n_turns, 3))?;
    assert_eq!(
        common::sqlite_list(&conn, S)?,
        listed,
        "both list the same invocations"
    );
    let start = Instant::now();
    for _ in 0..reps {
        common::sqlite_list(&conn, S)?;
    }
    let s = start.elapsed().as_secs_f64() / reps as f64;
    println!(
        "  {listed} invocations: makalog {:.2} ms, SQLite {:.2} ms, SQLite/makalog {:.1}",
        m * 1e3,
        s * 1e3,
        s / m
    );
    table.push(format!(
        "| list {listed} invocations | {:.2} ms | {:.2} ms | {:.1} × faster | bar ≥ 5 × |",
        m * 1e3,
        s * 1e3,
        s / m
    ));
    println!(
        "  read-only (the session not open, read from its files): makalog {:.2} ms, SQLite/makalog {:.1}",
        read_only * 1e3,
        s / read_only
    );
    table.push(format!(
        "| list {listed} invocations, read-only from the files | {:.2} ms | {:.2} ms | {:.1} × faster | each opening and terminal read back from the log |",
        read_only * 1e3,
        s * 1e3,
        s / read_only
    ));

    println!("\n| case | makalog | SQLite | ratio | note |\n| --- | ---: | ---: | ---: | --- |");
    for row in table {
        println!("{row}");
    }
    Ok(())
}
