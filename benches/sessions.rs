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

use common::{group, owner, parse_args, scratch, BenchResult};
use create::create_case;
use host::{list_all, touch_sessions};
use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::RuntimeEventStore;
use serde_json::json;
use sqlite::{
    sqlite_bytes, sqlite_db, sqlite_events, sqlite_list_all, sqlite_session_row, sqlite_touch,
};
use std::os::unix::fs::MetadataExt;
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

#[path = "sessions/create.rs"]
mod create;
#[path = "sessions/host.rs"]
mod host;
#[path = "sessions/sqlite.rs"]
mod sqlite;
