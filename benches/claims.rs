//! Durable agent-graph intent claims (MAKA-MODEL §9) per second: makalog's claims log side by
//! side with SQLite, in one run.
//!
//! Run with `cargo bench --bench claims [-- --quick | --records N]`. Each case runs a fixed number
//! of claims, cut into rounds that take the engines in turn; every run of an engine gets a fresh
//! directory under the target directory. Every claim is a distinct valid request and must come
//! back created. One line per engine is printed as each case ends, and the run ends with a
//! markdown table for README.md. Setup (opening, creating tables, building the requests) and the
//! final count check are outside the timed section.

mod common;

use common::{
    group, owner, parse_args, round_share, run_threads, scratch, sqlite_connection, Args,
    BenchResult, Tally, ROUNDS, SQLITE_CONCURRENT_SHARE,
};
use makalog::claims::{AgentGraphIntentClaim, AgentGraphIntentClaimRequest, ClaimsLog};
use sha2::{Digest, Sha256};
use std::sync::Mutex;
use std::time::Duration;
use std::vec;

/// Claimer threads of the concurrent case.
const CONCURRENCY: usize = 16;

/// `claimedAt` of the first claim of each thread (2026-01-01, in ms); the i-th adds i.
const CLAIMED_AT: u64 = 1_767_225_600_000;

/// Claim counts for each case.
struct Plan {
    /// Claims in the one-claimer case.
    single: usize,
    /// Claims in each concurrent case, split evenly over its threads.
    concurrent_total: usize,
}

impl Plan {
    fn new(args: &Args) -> Plan {
        let single = args
            .records
            .unwrap_or(if args.quick { 2_000 } else { 20_000 });
        Plan {
            single,
            concurrent_total: single * 4,
        }
    }

    fn per_thread(&self, threads: usize) -> usize {
        (self.concurrent_total / threads).max(1)
    }
}

/// The competitors of one case, in the order of [`ClaimsRow`]'s rates.
const ENGINES: [Engine; 2] = [Engine::Makalog, Engine::Sqlite];

/// The competitors of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Makalog,
    Sqlite,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Makalog => "makalog",
            Engine::Sqlite => "SQLite",
        }
    }
}

/// Claims per second of each engine in one case.
struct ClaimsRow {
    claimers: usize,
    makalog: f64,
    sqlite: f64,
}

fn main() -> BenchResult<()> {
    let args = parse_args()?;
    let plan = Plan::new(&args);
    println!(
        "claims bench: durable agent-graph intent claims; {} claims with one claimer, {} per \
         case at {CONCURRENCY} claimers",
        group(plan.single as f64),
        group(plan.concurrent_total as f64),
    );
    let rows = [
        claims_case(1, plan.single)?,
        claims_case(CONCURRENCY, plan.per_thread(CONCURRENCY))?,
    ];
    println!();
    print_table(&rows);
    Ok(())
}

/// Runs both engines with `threads` claimers of `per_thread` claims each.
fn claims_case(threads: usize, per_thread: usize) -> BenchResult<ClaimsRow> {
    println!(
        "durable intent claims, {} ({} claims per engine unless noted, in {ROUNDS} rounds)",
        claimers_label(threads),
        group((threads * per_thread) as f64)
    );
    let mut tallies = [Tally::default(); ENGINES.len()];
    for round in 0..ROUNDS {
        for k in 0..ENGINES.len() {
            let e = (round + k) % ENGINES.len();
            let n = round_share(engine_per_thread(ENGINES[e], threads, per_thread), round);
            if n > 0 {
                tallies[e].add(threads * n, run_claims(ENGINES[e], threads, n)?);
            }
        }
    }
    let [makalog, sqlite] = tallies.map(|t| t.rate());
    for (engine, tally) in ENGINES.iter().zip(&tallies) {
        let versus = (*engine != Engine::Makalog).then_some(makalog);
        common::print_rate(engine.name(), tally, versus, "claims/s");
    }
    Ok(ClaimsRow {
        claimers: threads,
        makalog,
        sqlite,
    })
}

/// Claims per thread an engine runs in a case.
fn engine_per_thread(engine: Engine, threads: usize, per_thread: usize) -> usize {
    match engine {
        Engine::Sqlite if threads > 1 => (per_thread / SQLITE_CONCURRENT_SHARE).max(1),
        _ => per_thread,
    }
}

/// Runs one engine once, in a fresh directory, and returns the timed part.
fn run_claims(engine: Engine, threads: usize, per_thread: usize) -> BenchResult<Duration> {
    let requests = requests(threads, per_thread);
    match engine {
        Engine::Makalog => makalog_claims(requests, per_thread),
        Engine::Sqlite => sqlite_claims(requests, per_thread),
    }
}

/// Distinct valid requests, one list per claimer thread. Thread `t` claims intents of graph
/// `graph-t` for its operator session; ids and fingerprints are hashes, as in the runtime, and
/// every claim has its own target turn and run.
fn requests(threads: usize, per_thread: usize) -> Vec<vec::IntoIter<AgentGraphIntentClaimRequest>> {
    (0..threads)
        .map(|t| {
            (0..per_thread)
                .map(|i| AgentGraphIntentClaimRequest {
                    schema_version: 1,
                    claim_id: format!("graph_claim_{}", &hex_digest("claim", t, i)[..32]),
                    graph_id: format!("graph-{t}"),
                    intent_id: format!("graph_intent_{}", &hex_digest("intent", t, i)[..32]),
                    intent_fingerprint: format!("sha256:{}", hex_digest("intent-fp", t, i)),
                    readiness_context_fingerprint: format!(
                        "sha256:{}",
                        hex_digest("readiness-fp", t, i)
                    ),
                    target_operator_id: "summarizer".to_owned(),
                    target_session_id: format!("session-graph-{t}-summarizer"),
                    target_turn_id: format!("turn-{t}-{i}"),
                    target_run_id: format!("run-{t}-{i}"),
                })
                .collect::<Vec<_>>()
                .into_iter()
        })
        .collect()
}

/// 64 lowercase hex digits: the SHA-256 of `label/t/i`.
fn hex_digest(label: &str, t: usize, i: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(format!("{label}/{t}/{i}"));
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

/// makalog: one claims log in a fresh root, shared by every claimer thread (group commit).
fn makalog_claims(
    requests: Vec<vec::IntoIter<AgentGraphIntentClaimRequest>>,
    per_thread: usize,
) -> BenchResult<Duration> {
    let total = requests.len() * per_thread;
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let (log, _report) = ClaimsLog::open(&owner)?;
    let elapsed = run_threads(requests, per_thread, |requests, i| {
        let request = requests.next().ok_or("out of requests")?;
        let outcome = log.claim_agent_graph_intent_at(request, CLAIMED_AT + i as u64)?;
        if !outcome.created {
            return Err(format!("makalog: claim {} not created", outcome.claim.claim_id).into());
        }
        Ok(())
    })?;
    let stored = log.list_agent_graph_intent_claims(None)?.len();
    expect_stored("makalog", stored, total)?;
    Ok(elapsed)
}

/// SQLite with the original runtime's settings (WAL, `synchronous=FULL`) and one connection
/// shared by every thread behind a mutex, as in the original runtime. A claim is what the
/// original does: `INSERT OR IGNORE` (autocommit: one transaction, one sync), then a `SELECT` of
/// the row by (graph_id, intent_id); created when the insert changed a row.
fn sqlite_claims(
    requests: Vec<vec::IntoIter<AgentGraphIntentClaimRequest>>,
    per_thread: usize,
) -> BenchResult<Duration> {
    let total = requests.len() * per_thread;
    let dir = scratch()?;
    let conn = sqlite_connection(&dir.path().join("state.db"))?;
    conn.execute_batch(INTENT_CLAIMS_SCHEMA)?;
    let conn = Mutex::new(conn);
    let elapsed = run_threads(requests, per_thread, |requests, i| {
        let r = requests.next().ok_or("out of requests")?;
        let conn = conn.lock().map_err(|_| "sqlite mutex poisoned")?;
        let inserted = conn
            .prepare_cached(INSERT_CLAIM)?
            .execute(rusqlite::params![
                r.graph_id,
                r.intent_id,
                r.claim_id,
                r.intent_fingerprint,
                r.readiness_context_fingerprint,
                r.target_operator_id,
                r.target_session_id,
                r.target_turn_id,
                r.target_run_id,
                (CLAIMED_AT + i as u64) as i64,
            ])?;
        let (stored, status, reason) = conn.prepare_cached(SELECT_CLAIM)?.query_row(
            rusqlite::params![r.graph_id, r.intent_id],
            |row| {
                let claim = AgentGraphIntentClaim {
                    schema_version: 1,
                    graph_id: row.get(0)?,
                    intent_id: row.get(1)?,
                    claim_id: row.get(2)?,
                    intent_fingerprint: row.get(3)?,
                    readiness_context_fingerprint: row.get(4)?,
                    target_operator_id: row.get(5)?,
                    target_session_id: row.get(6)?,
                    target_turn_id: row.get(7)?,
                    target_run_id: row.get(8)?,
                    claimed_at: row.get::<_, i64>(9)? as u64,
                };
                let status: String = row.get(10)?;
                let reason: Option<String> = row.get(11)?;
                Ok((claim, status, reason))
            },
        )?;
        drop(conn);
        if inserted != 1 || stored.claim_id != r.claim_id || status != "claimed" || reason.is_some()
        {
            return Err(format!("SQLite: claim {} not created", r.claim_id).into());
        }
        Ok(())
    })?;
    let conn = conn.into_inner().map_err(|_| "sqlite mutex poisoned")?;
    let stored: i64 =
        conn.query_row("SELECT count(*) FROM agent_graph_intent_claims", [], |r| {
            r.get(0)
        })?;
    expect_stored("SQLite", stored as usize, total)?;
    Ok(elapsed)
}

/// The claims table with the unique keys of §9 and the admission status.
/// The original runtime's table: the claim id is the key, (graph, intent) unique, plus the
/// index it reads claims of a graph through.
const INTENT_CLAIMS_SCHEMA: &str = "CREATE TABLE agent_graph_intent_claims (
    claim_id TEXT PRIMARY KEY,
    schema_version INTEGER NOT NULL DEFAULT 1,
    graph_id TEXT NOT NULL,
    intent_id TEXT NOT NULL,
    intent_fingerprint TEXT NOT NULL,
    readiness_context_fingerprint TEXT NOT NULL,
    target_operator_id TEXT NOT NULL,
    target_session_id TEXT NOT NULL,
    target_turn_id TEXT NOT NULL,
    target_run_id TEXT NOT NULL,
    claimed_at INTEGER NOT NULL,
    admission_status TEXT NOT NULL DEFAULT 'claimed',
    admission_updated_at INTEGER,
    cancellation_reason TEXT,
    UNIQUE (graph_id, intent_id),
    UNIQUE (target_session_id, target_turn_id),
    UNIQUE (target_session_id, target_run_id)
);
CREATE INDEX agent_graph_intent_claims_by_graph
    ON agent_graph_intent_claims (graph_id, claimed_at, intent_id)";

const INSERT_CLAIM: &str = "INSERT OR IGNORE INTO agent_graph_intent_claims (graph_id, \
    intent_id, claim_id, intent_fingerprint, readiness_context_fingerprint, target_operator_id, \
    target_session_id, target_turn_id, target_run_id, claimed_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

const SELECT_CLAIM: &str = "SELECT graph_id, intent_id, claim_id, intent_fingerprint, \
    readiness_context_fingerprint, target_operator_id, target_session_id, target_turn_id, \
    target_run_id, claimed_at, admission_status, cancellation_reason \
    FROM agent_graph_intent_claims WHERE graph_id = ?1 AND intent_id = ?2";

/// Fails unless an engine holds exactly the claims it acknowledged.
fn expect_stored(engine: &str, stored: usize, expected: usize) -> BenchResult<()> {
    if stored == expected {
        Ok(())
    } else {
        Err(format!("{engine}: {stored} claims stored, {expected} acknowledged").into())
    }
}

/// The markdown table for README.md.
fn print_table(rows: &[ClaimsRow]) {
    println!("| case | makalog | SQLite | makalog/SQLite |");
    println!("| --- | ---: | ---: | ---: |");
    for row in rows {
        println!(
            "| durable intent claims, {} | {} | {} | {:.2} |",
            claimers_label(row.claimers),
            group(row.makalog),
            group(row.sqlite),
            row.makalog / row.sqlite,
        );
    }
    println!(
        "\nRates in claims/s; ratios above 1 mean makalog is faster. Each claim is durable before \
         it returns. With many claimers SQLite (one shared connection, as in the original \
         runtime) runs 1/{SQLITE_CONCURRENT_SHARE} of the claims."
    );
}

fn claimers_label(n: usize) -> String {
    if n == 1 {
        "1 claimer".to_owned()
    } else {
        format!("{n} claimers")
    }
}
