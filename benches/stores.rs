//! The session and agent-run stores side by side with SQLite (the original's tables, one shared
//! connection, WAL, `synchronous=FULL`): create_subagent with its claims (and the raw floor of
//! the same file-system steps), append message and create run + terminal commit with 1 and 16
//! writers (and the floor of their durable writes), list_sessions over 10,000 sessions, read_messages of a session of 10,000 messages.
//! Engines take turns in rounds, so drift on a noisy machine falls on all alike.
//!
//! Run: `cargo bench --bench stores` (`-- --quick` for a smoke run, `-- --only WORD` for the
//! cases whose name holds it).

mod common;
#[path = "stores/raw_floor.rs"]
mod raw_floor;
#[path = "stores/sqlite.rs"]
mod sqlite;
#[path = "stores/writes.rs"]
mod writes;

use common::{group, owner, parse_args, run_threads, scratch, BenchResult};
use makalog::event::RuntimeEvent;
use makalog::storage::RealStorage;
use makalog::store::{
    open_execution_stores_for_write, ExecutionStores, ReadOnlySessions, DEFAULT_MAX_OPEN_SESSIONS,
};
use raw_floor::RawFloor;
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use writes::{run_and_terminal, sqlite_run_and_terminal, write_case, WriteOp};

fn header(id: &str, created: u64) -> Value {
    json!({
        "schemaVersion": 1, "id": id, "workspaceRoot": "/work", "cwd": "/work",
        "name": format!("session {id}"), "llmConnectionSlug": "fake", "model": "fake-model",
        "createdAt": created, "lastUsedAt": created, "titleIsManual": false, "isFlagged": false,
        "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
        "status": "active", "backend": "fake", "permissionMode": "ask"
    })
}

fn child(i: usize) -> Value {
    let mut h = header(&format!("child-{i:06}"), 2);
    h["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": "parent",
        "spawnedBy": {"parentRunId": "run-1", "parentTurnId": "turn-1", "toolCallId": format!("tool-{i}")},
        "lifecycle": "foreground"
    });
    h["subagentRuntime"] = json!({
        "schemaVersion": 1, "definitionVersion": 1, "agentId": "agent-1", "agentName": "Helper",
        "profile": "default", "systemPrompt": "Help with the task.", "toolNames": ["read", "grep"],
        "categoryPolicy": {"filesystem": "allow"}
    });
    h["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": format!("{i:064x}"),
        "initialTurnId": "turn-c", "initialRunId": "run-c"
    });
    h
}

fn message(i: usize) -> Value {
    json!({"type": "user", "id": format!("m{i}"), "turnId": format!("turn-{}", i / 4), "ts": i,
           "text": "Please look at the failing test in src/lib.rs and fix it."})
}

fn run(session: &str, i: usize) -> Value {
    json!({
        "runId": run_id(session, i), "sessionId": session, "turnId": format!("turn-{}", run_id(session, i)),
        "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/work", "status": "running",
        "backendKind": "fake", "permissionMode": "ask", "createdAt": i, "updatedAt": i
    })
}

/// Run ids are unique across sessions, as the original's are (its runtime events' ids are a
/// table's primary key).
fn run_id(session: &str, i: usize) -> String {
    format!("{session}-run-{i}")
}

fn terminal(session: &str, i: usize) -> BenchResult<RuntimeEvent> {
    common::terminal_event(session, &run_id(session, i), i as f64)
}

fn stores(dir: &Path) -> BenchResult<(makalog::root::Owner, ExecutionStores)> {
    let owner = owner(dir)?;
    let stores = open_execution_stores_for_write(&owner)?;
    Ok((owner, stores))
}

/// create_subagent, one caller: makalog, the raw floor with the store's cap, the raw floor of
/// the creation steps alone, and SQLite, in turn one child at a time (starting with the next
/// engine each child), each timed alone, their files under one directory. Rates in children a
/// second.
///
/// Creating a file or a directory is most of a child's cost, and on a file system without a
/// journal ext4 skips every inode freed in the last minutes when it picks one for a new file:
/// how long that takes depends on how many were freed near where each engine's files land.
/// Taking turns a child at a time in one directory puts that cost on the engines alike.
fn subagent_case(n: usize) -> BenchResult<[f64; 4]> {
    let dir = scratch()?;
    for engine in ["makalog", "sqlite"] {
        std::fs::create_dir(dir.path().join(engine))?;
    }
    let (_owner, m) = stores(&dir.path().join("makalog"))?;
    m.sessions.create(header("parent", 1))?;
    let cap = Some(DEFAULT_MAX_OPEN_SESSIONS);
    let mut raw = RawFloor::new(&dir.path().join("raw"), cap)?;
    let mut bare = RawFloor::new(&dir.path().join("bare"), None)?;
    let mut conn = sqlite::db(&dir.path().join("sqlite").join("state.db"))?;
    let children: Vec<Value> = (0..n).map(child).collect();
    // makalog is handed each child's header whole, as a caller that built it does: moved out
    // of a copy made here, so the timing is create_subagent's alone, not a clone of its input.
    let mut handed = children.clone();
    let bytes: Vec<Vec<u8>> = children
        .iter()
        .map(|c| c.to_string().into_bytes())
        .collect();
    let mut took = [Duration::ZERO; 4];
    for i in 0..n {
        for k in 0..4 {
            let engine = (k + i) % 4;
            let start = Instant::now();
            match engine {
                0 => drop(m.sessions.create_subagent(std::mem::take(&mut handed[i]))?),
                1 => raw.create(&bytes[i], i)?,
                2 => bare.create(&bytes[i], i)?,
                _ => sqlite::create_subagent(&mut conn, &children[i])?,
            }
            took[engine] += start.elapsed();
        }
    }
    m.close()?;
    raw.finish()?;
    bare.finish()?;
    Ok(took.map(|d| n as f64 / d.as_secs_f64()))
}

/// The best of three timings of `f`.
fn best<T>(mut f: impl FnMut() -> BenchResult<T>) -> BenchResult<(Duration, T)> {
    let mut out = None;
    for _ in 0..3 {
        let start = Instant::now();
        let t = f()?;
        let d = start.elapsed();
        if out.as_ref().is_none_or(|(b, _)| d < *b) {
            out = Some((d, t));
        }
    }
    out.ok_or_else(|| "no run".into())
}

/// Rounds of [`best_pair`]: on this shared machine one engine's read of 10,000 messages took
/// from 8 to 21 ms within a minute, and the best of five still swung the ratio by half.
const BEST_OF: usize = 15;

/// The best of [`BEST_OF`] of two measurements taken in turn (the first goes first in even
/// rounds, the second in odd ones), so drift on a noisy machine falls on both alike.
type Timed<T> = (Duration, T);
fn best_pair<A, B>(
    mut a: impl FnMut() -> BenchResult<A>,
    mut b: impl FnMut() -> BenchResult<B>,
) -> BenchResult<(Timed<A>, Timed<B>)> {
    let (mut best_a, mut best_b): (Option<Timed<A>>, Option<Timed<B>>) = (None, None);
    for round in 0..BEST_OF {
        for k in 0..2 {
            let start = Instant::now();
            if (k + round) % 2 == 0 {
                let t = a()?;
                let d = start.elapsed();
                if best_a.as_ref().is_none_or(|(x, _)| d < *x) {
                    best_a = Some((d, t));
                }
            } else {
                let t = b()?;
                let d = start.elapsed();
                if best_b.as_ref().is_none_or(|(x, _)| d < *x) {
                    best_b = Some((d, t));
                }
            }
        }
    }
    Ok((best_a.ok_or("no run")?, best_b.ok_or("no run")?))
}

/// What listing `n` closed sessions took, in milliseconds.
struct Listed {
    /// The owner's store: its first listing (which builds its catalog from the sessions' files),
    /// then the best of three from the catalog.
    first: f64,
    owner: f64,
    /// The read-only stores the CLI uses: every session's files each time.
    read_only: f64,
    sqlite: f64,
}

/// list_sessions over `n` sessions (closed, sidecars written), through the owner's stores
/// opened again (best of three) and through the read-only stores, beside SQLite's query (the two
/// taken in turn, best of [`BEST_OF`] each).
fn list_case(n: usize) -> BenchResult<Listed> {
    let dir = scratch()?;
    let (owner, m) = stores(dir.path())?;
    let conn = sqlite::db(&dir.path().join("state.db"))?;
    let threads: Vec<usize> = (0..16).collect();
    run_threads(threads, n / 16, |t, j| {
        m.sessions
            .create(header(&format!("s-{t:02}-{j:06}"), (j * 16 + *t) as u64))?;
        Ok(())
    })?;
    let tx = conn.unchecked_transaction()?;
    for t in 0..16 {
        for j in 0..n / 16 {
            sqlite::insert_session(
                &tx,
                &header(&format!("s-{t:02}-{j:06}"), (j * 16 + t) as u64),
            )?;
        }
    }
    tx.commit()?;
    m.close()?;
    drop(owner);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (owner, m) = stores(dir.path())?;
    let start = Instant::now();
    let first = m.sessions.list_sessions()?.len();
    let first_took = start.elapsed();
    let (owner_took, owned) = best(|| Ok(m.sessions.list_sessions()?.len()))?;
    m.close()?;
    drop(owner);
    let storage = RealStorage::new(dir.path().join("root"));
    let ((m_took, listed), (s_took, s_listed)) = best_pair(
        || Ok(ReadOnlySessions::new(&storage).list_sessions()?.len()),
        || Ok(sqlite::list_sessions(&conn)?.len()),
    )?;
    if [first, owned, listed, s_listed]
        .iter()
        .any(|&c| c != n / 16 * 16)
    {
        return Err(format!("listed {first}, {owned}, {listed} and {s_listed} sessions").into());
    }
    Ok(Listed {
        first: ms(first_took),
        owner: ms(owner_took),
        read_only: ms(m_took),
        sqlite: ms(s_took),
    })
}

/// read_messages of a session of `n` messages (closed, then read through the read-only stores),
/// beside SQLite's query, taken in turn; milliseconds of the best of [`BEST_OF`].
fn read_case(n: usize) -> BenchResult<(f64, f64)> {
    let dir = scratch()?;
    let (owner, m) = stores(dir.path())?;
    let mut conn = sqlite::db(&dir.path().join("state.db"))?;
    m.sessions.create(header("long", 1))?;
    sqlite::insert_session(&conn, &header("long", 1))?;
    // Written by 16 threads, so the durable appends share their syncs.
    let next = std::sync::atomic::AtomicUsize::new(0);
    run_threads((0..16).collect::<Vec<usize>>(), n / 16, |_, _| {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        m.sessions.append_message("long", message(i))?;
        Ok(())
    })?;
    let written = next.into_inner();
    conn.execute_batch("PRAGMA synchronous=OFF")?;
    for i in 0..written {
        sqlite::append_message(&mut conn, "long", &message(i))?;
    }
    m.close()?;
    drop(owner);
    let storage = RealStorage::new(dir.path().join("root"));
    let ((m_took, read), (s_took, s_read)) = best_pair(
        || {
            Ok(ReadOnlySessions::new(&storage)
                .read_messages("long", None)?
                .len())
        },
        || Ok(sqlite::read_messages(&conn, "long")?.len()),
    )?;
    if read != written || s_read != written {
        return Err(format!("read {read} and {s_read} of {written} messages").into());
    }
    Ok((m_took.as_secs_f64() * 1e3, s_took.as_secs_f64() * 1e3))
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let q = args.quick;
    let mut table = Vec::new();

    if args.runs("create_subagent") {
        let n = if q { 30 } else { 300 };
        println!("create_subagent with its claims, {n} children, 1 caller");
        let [m, raw, bare, s] = subagent_case(n)?;
        println!(
            "  makalog {} /s   raw floor {} /s   SQLite {} /s   makalog/raw {:.2} (bar ≥ 0.9)   makalog/SQLite {:.2}",
            group(m), group(raw), group(s), m / raw, m / s
        );
        println!(
            "  the raw floor's creation steps alone, without the cap's closes: {} /s   makalog/that {:.2}",
            group(bare), m / bare
        );
        table.push(format!(
            "| create_subagent with its claims | {} /s | {} /s | {:.2} | raw floor {} /s, makalog/raw {:.2} (bar ≥ 0.9); creation steps alone {} /s, {:.2} |",
            group(m), group(s), m / s, group(raw), m / raw, group(bare), m / bare
        ));
    }

    let append = |s: &ExecutionStores, session: &str, i: usize| {
        s.sessions.append_message(session, message(i))?;
        Ok(())
    };
    let s_append = |c: &mut Connection, session: &str, i: usize| {
        sqlite::append_message(c, session, &message(i))
    };
    let cases = [
        (
            "append message",
            WriteOp {
                makalog: &append,
                sqlite: &s_append,
                durable_writes: 1,
            },
        ),
        (
            "create run + terminal commit",
            WriteOp {
                makalog: &run_and_terminal,
                sqlite: &sqlite_run_and_terminal,
                durable_writes: 2,
            },
        ),
    ];
    for (name, op) in cases.iter().filter(|c| args.runs(c.0)) {
        for (writers, per) in [
            (1, if q { 60 } else { 1_500 }),
            (16, if q { 12 } else { 240 }),
        ] {
            println!("{name}, {writers} writer(s), a session each");
            let r = write_case(writers, per, op)?;
            let bar = if writers == 1 { 1.3 } else { 5.0 };
            println!(
                "  makalog {} /s   SQLite {} /s   floor {} /s   makalog/SQLite {:.2} (bar ≥ {bar})   makalog/floor {:.2}   floor/SQLite {:.2}",
                group(r.makalog),
                group(r.sqlite),
                group(r.floor),
                r.makalog / r.sqlite,
                r.makalog / r.floor,
                r.floor / r.sqlite
            );
            table.push(format!(
                "| {name}, {writers} writer(s) | {} /s | {} /s | {:.2} | bar ≥ {bar} ×; floor of its {} durable write(s) {} /s: makalog/floor {:.2}, floor/SQLite {:.2} |",
                group(r.makalog),
                group(r.sqlite),
                r.makalog / r.sqlite,
                op.durable_writes,
                group(r.floor),
                r.makalog / r.floor,
                r.floor / r.sqlite
            ));
        }
    }

    if args.runs("list_sessions") {
        let sessions = if q { 320 } else { 10_000 };
        println!("list_sessions over {sessions} sessions (closed, sidecars written)");
        let l = list_case(sessions)?;
        println!(
            "  owner's store {:.1} ms (its first listing {:.1} ms)   read-only {:.1} ms   SQLite {:.1} ms",
            l.owner, l.first, l.read_only, l.sqlite
        );
        table.push(format!(
            "| list_sessions over {} sessions, the owner's store | {:.1} ms | {:.1} ms | {:.2} × SQLite's speed | bar ≥ 1 ×; its first listing, which builds the catalog, {:.1} ms |",
            group(sessions as f64), l.owner, l.sqlite, l.sqlite / l.owner, l.first
        ));
        table.push(format!(
            "| list_sessions over {} sessions, read-only (the CLI) | {:.1} ms | {:.1} ms | {:.2} × SQLite's speed | every session's directory listed, its sidecar and last segment read |",
            group(sessions as f64), l.read_only, l.sqlite, l.sqlite / l.read_only
        ));
    }

    if args.runs("read_messages") {
        let messages = if q { 320 } else { 10_000 };
        println!("read_messages of a session of {messages} messages (read-only stores)");
        let (m, s) = read_case(messages)?;
        println!(
            "  makalog {m:.1} ms   SQLite {s:.1} ms   {:.2} × SQLite's speed (bar ≥ 1)",
            s / m
        );
        table.push(format!(
            "| read_messages of {} messages | {m:.1} ms | {s:.1} ms | {:.2} × SQLite's speed | bar ≥ 1 × |",
            group(messages as f64), s / m
        ));
    }

    common::print_table(&table);
    Ok(())
}
