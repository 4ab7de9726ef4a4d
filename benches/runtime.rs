//! The runtime side by side with the segment writer (MAKA-MODEL §12): streamed turns through
//! the SessionManager and the fake backend at zero delay (deltas coalesced into buffered
//! partial events, a durable terminal commit a turn) with 1 and 16 sessions, beside the
//! segment writer streaming the same number of events a turn (buffered, one durable a turn);
//! claimed-intent runs and their retries; and recovery at start of a root with many sessions,
//! a few with an interrupted run, beside opening every session.
//!
//! Run: `cargo bench --bench runtime` (`-- --quick` for a smoke run, `-- --only streamed`,
//! `claimed` or `recovery` for one case).

mod common;

use common::{group, owner, parse_args, run_threads, scratch, BenchResult, ROUNDS};
use makalog::format::RecordKind;
use makalog::root::Owner;
use makalog::runtime::{BackendRegistry, ExecutionComposition, Sources, TurnInput};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use serde_json::json;
use std::time::{Duration, Instant};

/// A prompt the fake echoes back in 9-character deltas: about 230 a turn.
fn prompt() -> String {
    "explain how the group commit shares one sync between concurrent appends; ".repeat(28)
}

fn rt() -> BenchResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?)
}

fn session_input(id: &str) -> serde_json::Value {
    json!({"id": id, "backend": "fake", "cwd": "/work", "model": "fake-model",
           "llmConnectionSlug": "fake"})
}

/// `turns` turns in each of `sessions` sessions through the runtime: (events streamed, time).
fn runtime_turns(
    c: &ExecutionComposition,
    names: &[String],
    turns: usize,
) -> BenchResult<(usize, Duration)> {
    let rt = rt()?;
    let start = Instant::now();
    let events = rt.block_on(async {
        let mut tasks = Vec::new();
        for s in names {
            let (manager, s, text) = (c.manager().clone(), s.clone(), prompt());
            tasks.push(tokio::spawn(async move {
                let mut events = 0usize;
                for _ in 0..turns {
                    let input = TurnInput {
                        text: text.clone(),
                        ..TurnInput::default()
                    };
                    let mut turn = manager.send_message(&s, input).await?;
                    while turn.events.recv().await.is_some() {
                        events += 1;
                    }
                    turn.finish().await?;
                }
                Ok::<usize, makalog::Error>(events)
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.map_err(|e| e.to_string())??;
        }
        Ok::<usize, Box<dyn std::error::Error + Send + Sync>>(total)
    })?;
    Ok((events, start.elapsed()))
}

/// The segment writer streaming `per_turn` events a turn (buffered, the last durable), one
/// thread and one writer a session.
fn writer_turns(sessions: usize, turns: usize, per_turn: usize) -> BenchResult<(usize, Duration)> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let payload = json!({"author": "agent", "content": {"kind": "text", "text": "chunk of 9"},
        "id": "e", "invocationId": "i", "partial": true, "refs": {"providerEventId": "m"},
        "role": "model", "runId": "r", "sessionId": "s", "ts": 1, "turnId": "t"})
    .to_string();
    let writers: Vec<SegmentWriter> = (0..sessions)
        .map(|n| {
            SegmentWriter::open(&owner, &format!("w-{n}"), WriterConfig::default()).map(|w| w.0)
        })
        .collect::<Result<_, _>>()?;
    let took = run_threads(writers, turns, |w, _| {
        for k in 0..per_turn {
            let d = if k + 1 == per_turn {
                Durability::Durable
            } else {
                Durability::Buffered
            };
            w.append(RecordKind::RuntimeEvent, payload.as_bytes(), d)?;
        }
        Ok(())
    })?;
    Ok((sessions * turns * per_turn, took))
}

/// A composition over `owner`'s root, with the fake backend without its delays.
fn composition(owner: &Owner) -> BenchResult<ExecutionComposition> {
    Ok(ExecutionComposition::open(
        owner,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )?)
}

/// What the streamed case measured: the runtime's events/s and turns/s, the writer's own
/// streaming rate in events/s, and the turns/s of the writer appending the runtime's own
/// records with its durable points, with those points a turn.
struct Streamed {
    events: f64,
    turns: f64,
    writer: f64,
    replay_turns: f64,
    syncs_a_turn: f64,
}

fn stream_case(sessions: usize, turns: usize) -> BenchResult<Streamed> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let c = composition(&owner)?;
    // As a host starts: recovery creates the open-runs file, so turns are tracked in it.
    c.recover()?;
    let names: Vec<String> = (0..sessions).map(|n| format!("s-{n}")).collect();
    for s in &names {
        c.manager().create_session(session_input(s))?;
    }
    let before: Vec<usize> = names
        .iter()
        .map(|s| replay::count(&owner, s))
        .collect::<Result<_, _>>()?;
    let per = (turns / ROUNDS).max(1);
    let (mut r_events, mut r_took, mut w_events, mut w_took) =
        (0, Duration::ZERO, 0, Duration::ZERO);
    let (mut p_turns, mut p_took) = (0, Duration::ZERO);
    let mut first_round: Option<Vec<replay::Written>> = None;
    let mut runtime_rounds = 0;
    for round in 0..ROUNDS {
        for k in 0..2 {
            if (k + round) % 2 == 0 {
                let (e, t) = runtime_turns(&c, &names, per)?;
                (r_events, r_took) = (r_events + e, r_took + t);
                runtime_rounds += 1;
                if first_round.is_none() {
                    let w = names
                        .iter()
                        .zip(&before)
                        .map(|(s, &skip)| replay::written(&owner, s, skip));
                    first_round = Some(w.collect::<Result<_, _>>()?);
                }
            } else {
                // Events a turn so far: the writer streams as many (round 1 runs it first).
                let per_turn = (r_events / (sessions * per * runtime_rounds)).max(1);
                let (e, t) = writer_turns(sessions, per, per_turn)?;
                (w_events, w_took) = (w_events + e, w_took + t);
                let (_, t) = replay::replay(first_round.as_deref().unwrap_or_default())?;
                (p_turns, p_took) = (p_turns + sessions * per, p_took + t);
            }
        }
    }
    c.close()?;
    let turns_done = (per * ROUNDS * sessions) as f64;
    let syncs: usize = first_round.iter().flatten().map(replay::syncs).sum();
    Ok(Streamed {
        events: r_events as f64 / r_took.as_secs_f64(),
        turns: turns_done / r_took.as_secs_f64(),
        writer: w_events as f64 / w_took.as_secs_f64(),
        replay_turns: p_turns as f64 / p_took.as_secs_f64(),
        syncs_a_turn: syncs as f64 / (sessions * per) as f64,
    })
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let q = args.quick;
    let mut table = Vec::new();
    let streams = [(1, if q { 6 } else { 60 }), (16, if q { 3 } else { 12 })];
    for (sessions, turns) in streams.into_iter().filter(|_| args.runs("streamed")) {
        println!("streamed turns through the SessionManager, {sessions} session(s)");
        let r = stream_case(sessions, turns)?;
        let (ratio, same) = (r.events / r.writer, r.turns / r.replay_turns);
        println!(
            "  runtime {} events/s ({} turns/s)   segment writer {} events/s   runtime/writer {ratio:.2} (bar ≥ 0.7)",
            group(r.events), group(r.turns), group(r.writer)
        );
        println!(
            "  segment writer appending the runtime's own records with its {:.1} syncs a turn: {} turns/s   runtime/that {same:.2}",
            r.syncs_a_turn, group(r.replay_turns)
        );
        table.push(format!(
            "| streamed turns, {sessions} session(s) | {} events/s, {} turns/s | {} events/s; the runtime's records replayed {} turns/s | {ratio:.2}; {same:.2} | bar ≥ 0.7 × |",
            group(r.events), group(r.turns), group(r.writer), group(r.replay_turns)
        ));
    }
    if args.runs("claimed") {
        let n = if q { 10 } else { 100 };
        println!("claimed-intent runs, {n} claims, each run then retried");
        let (runs, retries) = claimed::claimed_case(n)?;
        println!(
            "  {} runs/s   {} retries/s (answered from the ledger)",
            group(runs),
            group(retries)
        );
        table.push(format!(
            "| claimed-intent runs | {} runs/s | — | — | retries {} /s, answered from the ledger |",
            group(runs),
            group(retries)
        ));
    }
    if args.runs("recovery") {
        let (sessions, interrupted) = if q { (300, 10) } else { (10_000, 100) };
        println!("recovery at start, {sessions} sessions, {interrupted} with an interrupted turn");
        let r = restart::recovery_case(sessions, interrupted)?;
        let ratio = r.open_all / r.with_file;
        println!(
            "  recovery {:.0} ms (without the open-runs file {:.0} ms)   opening every session {:.0} ms   {ratio:.1} × faster (bar ≥ 10)",
            r.with_file, r.without_file, r.open_all
        );
        table.push(format!(
            "| recovery at start, {} sessions, {interrupted} interrupted | {:.0} ms | opening every session {:.0} ms | {ratio:.1} × faster | bar ≥ 10 ×; without the open-runs file (every session visited) {:.0} ms |",
            group(sessions as f64), r.with_file, r.open_all, r.without_file
        ));
    }
    println!("\n| case | makalog | baseline | ratio | notes |\n| --- | --- | --- | --- | --- |");
    for row in table {
        println!("{row}");
    }
    Ok(())
}

#[path = "runtime/claimed.rs"]
mod claimed;
#[path = "runtime/replay.rs"]
mod replay;
#[path = "runtime/restart.rs"]
mod restart;
