//! Append throughput: makalog side by side with the raw floor, okaywal and SQLite, in one run.
//!
//! Run with `cargo bench --bench append [-- --quick | --records N]`. Each case runs a fixed number
//! of records, cut into rounds that take the engines in turn; every run of an engine gets a fresh
//! directory under the target directory (the disk the code is on, never a tmpfs `/tmp`). One line
//! per engine is printed as each case ends, and the run ends with a markdown table for README.md.
//! Setup (opening, preallocating, creating tables) and teardown are outside the timed section.

mod common;

use common::{
    group, owner, parse_args, preallocated, round_share, run_threads, scratch, sqlite_connection,
    Args, BenchResult, Tally, INSERT_EVENT, ROUNDS, RUNTIME_EVENTS_SCHEMA, SQLITE_CONCURRENT_SHARE,
};
use makalog::format::{FrameLayout, RecordKind};

/// Bytes a frame of a new root adds to its payload.
const FRAME_OVERHEAD: usize = FrameLayout::NEW.overhead();
use makalog::root::Owner;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use okaywal::{LogVoid, WriteAheadLog};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Payload bytes per record (a typical canonical RuntimeEvent).
const PAYLOAD_LEN: usize = 400;
/// One durable append in every this many, in the streaming case.
const DURABLE_EVERY: usize = 100;
/// The design's bar for streaming appends, in events/s.
const STREAMING_BAR: f64 = 500_000.0;
/// Session counts of the concurrent cases.
const CONCURRENCY: [usize; 2] = [16, 64];

/// Record counts for each case.
struct Plan {
    /// Records in each single-session durable case.
    single: usize,
    /// Records in each concurrent case, split evenly over its threads.
    concurrent_total: usize,
    /// Records in the streaming (buffered) case.
    buffered: usize,
}

impl Plan {
    fn new(args: &Args) -> Plan {
        let single = args
            .records
            .unwrap_or(if args.quick { 2_000 } else { 20_000 });
        Plan {
            single,
            concurrent_total: single * 4,
            buffered: single * 10,
        }
    }

    fn per_thread(&self, threads: usize) -> usize {
        (self.concurrent_total / threads).max(1)
    }
}

/// The competitors of one case, in the order of [`DurableRow`]'s rates.
const ENGINES: [Engine; 4] = [
    Engine::Makalog,
    Engine::Raw,
    Engine::Okaywal,
    Engine::Sqlite,
];

/// The competitors of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Makalog,
    Raw,
    Okaywal,
    Sqlite,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Makalog => "makalog",
            Engine::Raw => "raw floor",
            Engine::Okaywal => "okaywal",
            Engine::Sqlite => "SQLite",
        }
    }
}

/// Commits per second of each engine in one durable case.
struct DurableRow {
    sessions: usize,
    makalog: f64,
    raw: f64,
    okaywal: f64,
    sqlite: f64,
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let plan = Plan::new(&args);
    let payload = payload();
    println!(
        "append bench: {} B payloads ({} B frames); {} records for one session, {} per case \
         at {:?} sessions, {} streaming",
        PAYLOAD_LEN,
        PAYLOAD_LEN + FRAME_OVERHEAD,
        group(plan.single as f64),
        group(plan.concurrent_total as f64),
        CONCURRENCY,
        group(plan.buffered as f64),
    );

    let mut rows = vec![durable_case(1, plan.single, &payload)?];
    for threads in CONCURRENCY {
        rows.push(durable_case(threads, plan.per_thread(threads), &payload)?);
    }
    let streaming = streaming_case(plan.buffered, &payload)?;

    println!();
    print_table(&rows, &streaming);
    Ok(())
}

/// A 400-byte JSON text, valid UTF-8 so SQLite stores the same bytes as TEXT.
fn payload() -> Vec<u8> {
    let head = r#"{"type":"text","partial":false,"role":"model","content":{"kind":"text","text":""#;
    let tail = r#""}}"#;
    let mut out = head.as_bytes().to_vec();
    out.resize(PAYLOAD_LEN - tail.len(), b'x');
    out.extend_from_slice(tail.as_bytes());
    out
}

/// Runs every engine with `threads` writers of `per_thread` durable records each.
fn durable_case(threads: usize, per_thread: usize, payload: &[u8]) -> BenchResult<DurableRow> {
    println!(
        "durable appends, {} ({} commits per engine unless noted, in {ROUNDS} rounds)",
        sessions_label(threads),
        group((threads * per_thread) as f64)
    );
    let mut tallies = [Tally::default(); ENGINES.len()];
    for round in 0..ROUNDS {
        for k in 0..ENGINES.len() {
            let e = (round + k) % ENGINES.len();
            let n = round_share(engine_per_thread(ENGINES[e], threads, per_thread), round);
            if n > 0 {
                tallies[e].add(threads * n, run_durable(ENGINES[e], threads, n, payload)?);
            }
        }
    }
    let [makalog, raw, okaywal, sqlite] = tallies.map(|t| t.rate());
    for (engine, tally) in ENGINES.iter().zip(&tallies) {
        print_rate(*engine, tally, makalog, "commits/s");
    }
    Ok(DurableRow {
        sessions: threads,
        makalog,
        raw,
        okaywal,
        sqlite,
    })
}

/// Records per thread an engine runs in a case.
fn engine_per_thread(engine: Engine, threads: usize, per_thread: usize) -> usize {
    match engine {
        Engine::Sqlite if threads > 1 => (per_thread / SQLITE_CONCURRENT_SHARE).max(1),
        _ => per_thread,
    }
}

/// Runs one engine once, in a fresh directory, and returns the timed part.
fn run_durable(
    engine: Engine,
    threads: usize,
    per_thread: usize,
    payload: &[u8],
) -> BenchResult<Duration> {
    match engine {
        Engine::Makalog => makalog_durable(threads, per_thread, payload),
        Engine::Raw => raw_durable(threads, per_thread, payload),
        Engine::Okaywal => okaywal_durable(threads, per_thread, payload),
        Engine::Sqlite => sqlite_durable(threads, per_thread, payload),
    }
}

/// Prints one engine's rate and, for the peers, makalog's ratio to it.
fn print_rate(engine: Engine, tally: &Tally, makalog: f64, unit: &str) {
    let makalog = (engine != Engine::Makalog).then_some(makalog);
    common::print_rate(engine.name(), tally, makalog, unit);
}

/// makalog: one session (one `SegmentWriter`) per thread, all in one root.
fn makalog_durable(threads: usize, per_thread: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let writers = (0..threads)
        .map(|t| open_session(&owner, t))
        .collect::<BenchResult<Vec<_>>>()?;
    run_threads(writers, per_thread, |writer, _| {
        writer.append(RecordKind::RuntimeEvent, payload, Durability::Durable)?;
        Ok(())
    })
}

fn open_session(owner: &Owner, index: usize) -> BenchResult<SegmentWriter> {
    let (writer, _report) =
        SegmentWriter::open(owner, &format!("s-{index}"), WriterConfig::default())?;
    Ok(writer)
}

/// The raw floor: per thread, a preallocated file overwritten one frame at a time, each followed
/// by `fdatasync`. Frames are as long as makalog's, so both write the same bytes.
fn raw_durable(threads: usize, per_thread: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let frame = vec![0xa5u8; payload.len() + FRAME_OVERHEAD];
    let files = (0..threads)
        .map(|t| {
            preallocated(
                &dir.path().join(format!("raw-{t}")),
                per_thread * frame.len(),
            )
        })
        .collect::<BenchResult<Vec<_>>>()?;
    run_threads(files, per_thread, |file, i| {
        file.write_all_at(&frame, (i * frame.len()) as u64)?;
        file.sync_data()?;
        Ok(())
    })
}

/// okaywal 0.3: every thread commits to one shared log, one chunk per entry.
///
/// What its source (0.3.1) does: `EntryWriter::commit` writes the end-of-entry marker and calls
/// `WriteAheadLog::reclaim`, which hands the file back to other writers and then calls
/// `LogFile::synchronize(new_length)`: that flushes its write buffer and calls `File::sync_data`
/// (`fdatasync`) unless another thread's sync already covered the offset (group commit). So
/// `commit` returns only after an `fdatasync` covering the entry; a new log file also gets a
/// directory `fsync`. Checked with `strace -f -c`: one writer, 5,000 commits, 5,000
/// `fdatasync`s. `LogVoid` abandons old segments on recovery and checkpoints nothing; the
/// default configuration (1 MiB preallocation, checkpoint after 768 KiB) is used.
fn okaywal_durable(threads: usize, per_thread: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let wal = WriteAheadLog::recover(dir.path().join("wal"), LogVoid)?;
    let handles = vec![wal.clone(); threads];
    let elapsed = run_threads(handles, per_thread, |wal, _| {
        let mut entry = wal.begin_entry()?;
        entry.write_chunk(payload)?;
        entry.commit()?;
        Ok(())
    })?;
    wal.shutdown()?;
    Ok(elapsed)
}

/// SQLite with the original runtime's settings: WAL, `synchronous=FULL`, one INSERT per
/// (autocommit) transaction into `runtime_events`. Like the original runtime (one process, one
/// connection), every thread shares one connection behind a mutex: a connection per thread
/// only adds lock contention and `busy_timeout` sleeps (measured: 883/s at 16, 166/s at 64).
fn sqlite_durable(threads: usize, per_thread: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let db = dir.path().join("state.db");
    let conn = sqlite_connection(&db)?;
    conn.execute_batch(RUNTIME_EVENTS_SCHEMA)?;
    let conn = Mutex::new(conn);
    let json = std::str::from_utf8(payload)?;
    let states: Vec<usize> = (0..threads).collect();
    run_threads(states, per_thread, |t, i| {
        let conn = conn.lock().map_err(|_| "sqlite mutex poisoned")?;
        let mut insert = conn.prepare_cached(INSERT_EVENT)?;
        let session = format!("s-{t}");
        insert.execute(rusqlite::params![
            format!("{session}-e-{i}"),
            session,
            format!("{session}-inv"),
            format!("{session}-run"),
            format!("{session}-turn"),
            i as i64,
            "text",
            json,
            i as i64,
        ])?;
        Ok(())
    })
}

/// Rates of the streaming case.
struct StreamingRow {
    makalog: f64,
    raw: f64,
}

/// A streaming turn: buffered appends with a durable one every `DURABLE_EVERY` records, against
/// the raw floor of the same pattern, in rounds that alternate which goes first.
fn streaming_case(records: usize, payload: &[u8]) -> BenchResult<StreamingRow> {
    println!(
        "streaming appends, one session (buffered, durable every {DURABLE_EVERY}; {} events \
         per engine, in {ROUNDS} rounds)",
        group(records as f64)
    );
    let (mut makalog, mut raw) = (Tally::default(), Tally::default());
    for round in 0..ROUNDS {
        let n = round_share(records, round);
        if round % 2 == 1 {
            raw.add(n, raw_streaming(n, payload)?);
        }
        makalog.add(n, makalog_streaming(n, payload)?);
        if round % 2 == 0 {
            raw.add(n, raw_streaming(n, payload)?);
        }
    }
    let row = StreamingRow {
        makalog: makalog.rate(),
        raw: raw.rate(),
    };
    print_rate(Engine::Makalog, &makalog, row.makalog, "events/s");
    print_rate(Engine::Raw, &raw, row.makalog, "events/s");
    println!(
        "  makalog/bar ({} events/s) {:.2}",
        group(STREAMING_BAR),
        row.makalog / STREAMING_BAR
    );
    Ok(row)
}

/// makalog: one session, buffered appends and a durable one every `DURABLE_EVERY`.
fn makalog_streaming(records: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let writer = open_session(&owner, 0)?;
    let start = Instant::now();
    for i in 1..=records {
        let durability = if i % DURABLE_EVERY == 0 {
            Durability::Durable
        } else {
            Durability::Buffered
        };
        writer.append(RecordKind::RuntimeEvent, payload, durability)?;
    }
    writer.sync()?;
    let elapsed = start.elapsed();
    writer.close()?;
    Ok(elapsed)
}

/// The raw floor of streaming: frames gathered in memory, written to a preallocated file every
/// `DURABLE_EVERY` frames in one call, and `fdatasync`ed. No hashing, no checksums.
fn raw_streaming(records: usize, payload: &[u8]) -> BenchResult<Duration> {
    let dir = scratch()?;
    let frame = vec![0xa5u8; payload.len() + FRAME_OVERHEAD];
    let file = preallocated(&dir.path().join("raw"), records * frame.len())?;
    let mut batch = Vec::with_capacity(DURABLE_EVERY * frame.len());
    let mut offset = 0;
    let start = Instant::now();
    for i in 1..=records {
        batch.extend_from_slice(&frame);
        if i % DURABLE_EVERY == 0 || i == records {
            file.write_all_at(&batch, offset)?;
            file.sync_data()?;
            offset += batch.len() as u64;
            batch.clear();
        }
    }
    Ok(start.elapsed())
}

/// The markdown table for README.md.
fn print_table(rows: &[DurableRow], streaming: &StreamingRow) {
    println!("| case | makalog | raw floor | okaywal | SQLite | makalog/raw | makalog/okaywal | makalog/SQLite | bar |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for row in rows {
        println!(
            "| durable, {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} |",
            sessions_label(row.sessions),
            group(row.makalog),
            group(row.raw),
            group(row.okaywal),
            group(row.sqlite),
            row.makalog / row.raw,
            row.makalog / row.okaywal,
            row.makalog / row.sqlite,
            bar_verdict(row),
        );
    }
    println!(
        "| streaming, 1 session (events/s; durable every {DURABLE_EVERY}) | {} | {} | – | – | \
         {:.2} | – | – | ≥ {} events/s: {} |",
        group(streaming.makalog),
        group(streaming.raw),
        streaming.makalog / streaming.raw,
        group(STREAMING_BAR),
        met(streaming.makalog >= STREAMING_BAR),
    );
    println!(
        "\nRates in commits/s unless noted; ratios above 1 mean makalog is faster. With many \
         sessions SQLite (one shared connection, as in the original runtime) runs \
         1/{SQLITE_CONCURRENT_SHARE} of the records."
    );
}

/// The design's bars for a durable case, each with whether this run met it.
fn bar_verdict(row: &DurableRow) -> String {
    if row.sessions == 1 {
        format!(
            "≥ 0.9 × raw: {}; ≥ okaywal: {}",
            met(row.makalog >= 0.9 * row.raw),
            met(row.makalog >= row.okaywal)
        )
    } else {
        format!(
            "≥ okaywal: {}; ≥ 5 × SQLite: {}",
            met(row.makalog >= row.okaywal),
            met(row.makalog >= 5.0 * row.sqlite)
        )
    }
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**missed**"
    }
}

fn sessions_label(n: usize) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}
