//! Helpers shared by the bench binaries: options, scratch directories, timed threads, tallies,
//! the owner lease, SQLite with the original runtime's pragmas, and number formatting.
// Each bench binary compiles this module and uses only part of it.
#![allow(dead_code)]

use makalog::event::RuntimeEvent;
use makalog::root::{try_acquire_owner, Owner};
use rusqlite::Connection;
use serde_json::json;
use std::error::Error;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// Command-line options after `--`.
pub struct Args {
    pub quick: bool,
    pub records: Option<usize>,
    /// `--only WORD`: run only the cases whose name holds it.
    pub only: Option<String>,
}

impl Args {
    /// Whether the case `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|word| name.contains(word))
    }
}

/// Reads `--quick`, `--records N` and `--only WORD`; ignores `--bench`, which cargo passes to every bench.
pub fn parse_args() -> BenchResult<Args> {
    let mut args = Args {
        quick: false,
        records: None,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => args.quick = true,
            "--records" => {
                let n = it.next().ok_or("--records needs a number")?;
                let n: usize = n.parse().map_err(|e| format!("--records {n}: {e}"))?;
                if n == 0 {
                    return Err("--records must be at least 1".into());
                }
                args.records = Some(n);
            }
            "--only" => args.only = Some(it.next().ok_or("--only needs a case name")?),
            "--bench" => {}
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(args)
}

/// A fresh directory on the same disk as the target directory (not a tmpfs `/tmp`).
pub fn scratch() -> BenchResult<TempDir> {
    Ok(TempDir::new_in(env!("CARGO_TARGET_TMPDIR"))?)
}

/// Every case is cut into this many rounds, each running the engines in turn (starting one
/// later each round), so drift on a noisy machine falls on all of them alike.
pub const ROUNDS: usize = 3;

/// SQLite runs this fraction of the records with many writers: they queue on its one
/// connection, one commit at a time, so the full count would take most of the run.
pub const SQLITE_CONCURRENT_SHARE: usize = 8;

/// This round's part of `count`, the parts differing by at most one.
pub fn round_share(count: usize, round: usize) -> usize {
    count / ROUNDS + usize::from(round < count % ROUNDS)
}

/// Commits and time of one engine, summed over the rounds of a case.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub commits: usize,
    pub elapsed: Duration,
}

impl Tally {
    pub fn add(&mut self, commits: usize, elapsed: Duration) {
        self.commits += commits;
        self.elapsed += elapsed;
    }

    pub fn rate(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64()
    }
}

/// Prints one engine's rate and, for a peer (`makalog` is `Some` of makalog's rate), makalog's
/// ratio to it.
pub fn print_rate(name: &str, tally: &Tally, makalog: Option<f64>, unit: &str) {
    let ratio = match makalog {
        Some(makalog) => format!("   makalog/{name} {:.2}", makalog / tally.rate()),
        None => String::new(),
    };
    println!(
        "  {:<10} {:>10} {unit}  ({} in {:.2} s){ratio}",
        name,
        group(tally.rate()),
        group(tally.commits as f64),
        tally.elapsed.as_secs_f64()
    );
}

/// The markdown table of a bench's cases for README.md: one row a case, makalog beside SQLite.
pub fn print_table(rows: &[String]) {
    println!(
        "\n| case | makalog | SQLite | makalog/SQLite | note |\n| --- | ---: | ---: | ---: | --- |"
    );
    for row in rows {
        println!("{row}");
    }
}

/// Starts one thread per state, releases them together, and times until every one has done
/// `per_thread` operations. States are returned and dropped after the clock stops.
pub fn run_threads<S, F>(states: Vec<S>, per_thread: usize, op: F) -> BenchResult<Duration>
where
    S: Send,
    F: Fn(&mut S, usize) -> BenchResult<()> + Sync,
{
    let barrier = Barrier::new(states.len() + 1);
    let (elapsed, finished) = thread::scope(|scope| {
        let handles: Vec<_> = states
            .into_iter()
            .map(|mut state| {
                let (barrier, op) = (&barrier, &op);
                scope.spawn(move || -> BenchResult<S> {
                    barrier.wait();
                    for i in 0..per_thread {
                        op(&mut state, i)?;
                    }
                    Ok(state)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let finished: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("bench thread panicked".into()))
            })
            .collect();
        (start.elapsed(), finished)
    });
    for state in finished {
        drop(state?);
    }
    Ok(elapsed)
}

/// The lease of a fresh root in `dir`.
pub fn owner(dir: &Path) -> BenchResult<Owner> {
    try_acquire_owner(&dir.join("root"))?.ok_or_else(|| "root busy".into())
}

/// A connection with the original runtime's pragmas: WAL (checked), `synchronous=FULL`.
pub fn sqlite_connection(path: &Path) -> BenchResult<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(60))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("journal_mode is {mode}, not wal").into());
    }
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    Ok(conn)
}

/// A rate rounded to a whole number, with thousands separators.
pub fn group(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The original runtime's `runtime_events` table.
pub const RUNTIME_EVENTS_SCHEMA: &str = "CREATE TABLE runtime_events (
    event_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    event_seq INTEGER NOT NULL,
    event_kind TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    committed_at INTEGER NOT NULL
)";

/// One row of it.
pub const INSERT_EVENT: &str = "INSERT INTO runtime_events (event_id, session_id, invocation_id, \
    run_id, turn_id, event_seq, event_kind, payload_json, committed_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/// A runtime event of `session`/`run` (its invocation is the run, its turn `turn-<run>`) with
/// `extra` fields.
pub fn runtime_event(
    session: &str,
    run: &str,
    id: &str,
    ts: f64,
    extra: serde_json::Value,
) -> BenchResult<RuntimeEvent> {
    let mut v = json!({
        "id": id, "invocationId": run, "runId": run, "sessionId": session,
        "turnId": format!("turn-{run}"), "ts": ts, "partial": false, "role": "model", "author": "agent",
    });
    if let (Some(obj), serde_json::Value::Object(more)) = (v.as_object_mut(), extra) {
        obj.extend(more);
    }
    Ok(RuntimeEvent::from_value(v)?)
}

/// The hidden `invocation_opened` event that opens a run.
pub fn opening_event(session: &str, run: &str, ts: f64) -> BenchResult<RuntimeEvent> {
    runtime_event(
        session,
        run,
        &format!("invocation_opened:{run}"),
        ts,
        json!({
            "role": "system", "author": "system", "modelVisibility": "hidden",
            "content": {"kind": "invocation_opened", "protocol": "invocation_opened_v1",
                "route": {"provenance": "runtime", "backendKind": "fake", "llmConnectionId": "c",
                          "llmConnectionSlug": "fake", "modelId": "fake-model"},
                "configuration": {"cwd": "/tmp", "permissionMode": "ask", "collaborationMode": "agent",
                    "orchestrationMode": "default", "orchestrationSource": "session", "toolMode": "direct"},
                "root": {"kind": "user"}, "source": {"kind": "fresh"}},
        }),
    )
}

/// The terminal event of a completed run.
pub fn terminal_event(session: &str, run: &str, ts: f64) -> BenchResult<RuntimeEvent> {
    runtime_event(
        session,
        run,
        &format!("{run}-end"),
        ts,
        json!({
            "role": "system", "author": "system", "status": "completed",
            "actions": {"endInvocation": true, "stateDelta": {"stopReason": "end_turn"}},
        }),
    )
}

/// Inserts one event into the original's `runtime_events` table with its sequence number in
/// its invocation (`insert` is a prepared [`INSERT_EVENT`]).
pub fn insert_event(
    insert: &mut rusqlite::Statement<'_>,
    e: &RuntimeEvent,
    event_seq: i64,
) -> BenchResult<()> {
    insert.execute(rusqlite::params![
        e.id(),
        e.session_id(),
        e.invocation_id(),
        e.run_id(),
        e.turn_id(),
        event_seq,
        e.event_kind(),
        e.canonical_json(),
        e.ts() as i64,
    ])?;
    Ok(())
}

/// What a straightforward SQLite implementation runs to list a session's invocations: the openings, then the
/// terminal events in read order, each parsed, the first terminal of each invocation kept.
pub fn sqlite_list(conn: &Connection, session: &str) -> BenchResult<usize> {
    let mut openings = conn.prepare_cached(
        "SELECT invocation_id, payload_json FROM runtime_events \
         WHERE session_id = ?1 AND event_kind = 'invocation_opened' ORDER BY committed_at, invocation_id",
    )?;
    let mut out: Vec<(String, serde_json::Value, Option<serde_json::Value>)> = Vec::new();
    let mut rows = openings.query([session])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let json: String = row.get(1)?;
        out.push((id, serde_json::from_str(&json)?, None));
    }
    let index: std::collections::HashMap<String, usize> = out
        .iter()
        .enumerate()
        .map(|(i, o)| (o.0.clone(), i))
        .collect();
    let mut terminals = conn.prepare_cached(
        "SELECT invocation_id, payload_json FROM runtime_events WHERE session_id = ?1 AND \
         (json_extract(payload_json, '$.status') IN ('completed', 'failed', 'aborted', 'cancelled') \
          OR json_extract(payload_json, '$.actions.endInvocation') = 1) \
         ORDER BY committed_at, run_id, event_seq, event_id",
    )?;
    let mut rows = terminals.query([session])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let json: String = row.get(1)?;
        if let Some(&i) = index.get(&id) {
            if out[i].2.is_none() {
                out[i].2 = Some(serde_json::from_str(&json)?);
            }
        }
    }
    Ok(out.len())
}

/// A file of `len` zero bytes, synced, so later overwrites change no metadata.
pub fn preallocated(path: &Path, len: usize) -> BenchResult<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    let zeros = vec![0u8; 1 << 20];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(zeros.len());
        file.write_all_at(&zeros[..n], at as u64)?;
        at += n;
    }
    file.sync_data()?;
    File::open(path.parent().ok_or("no parent")?)?.sync_all()?;
    Ok(file)
}
