//! The crash harness: runs a workload of the public API on simulated storage, records what was
//! acknowledged, crashes at a chosen persistence point with a chosen tear, recovers, and checks
//! the invariants against a model of what was submitted.
//!
//! Each capability adds its operations to [`Op`] and its expectations to [`Model`]: segments
//! (durable and buffered appends, syncs, rolls and seals through a small segment size), the
//! claims log (claims, retries, conflicts, status changes, spawn and session claims), and the
//! runtime-event store with its index sidecar (openings, texts, partials, terminals, sealed
//! runs, closes that write the sidecar).

pub use super::scenario::Scenario;
use super::scenario::{every_operation_failing_in, scenario_of, Harness};
use makalog::claims::{
    AdmissionStatus, AdmissionStatusChange, AgentGraphIntentClaim, AgentGraphIntentClaimRequest,
    ClaimRecord, ClaimTables, ClaimsLog, Decision, SessionCreateClaim, SubagentSpawnClaim,
};
use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::index::{encode_sidecar, rebuild, runtime_invocations_from_session_events};
use makalog::root::{create_or_open_root, Owner};
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::{FaultKind, SimRng, SimStorage, Storage};
use makalog::store::RuntimeEventStore;
use makalog::Error;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Sessions a workload writes to.
pub const SESSIONS: [&str; 2] = ["crash-a", "crash-b"];

/// Small segments and zero-fill steps, so short workloads roll, seal and preallocate.
pub fn config() -> WriterConfig {
    WriterConfig {
        segment_size: 700,
        prealloc_step: 128,
        max_payload: 4096,
        buffered_limit: 400,
    }
}

/// One operation of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Append {
        session: usize,
        len: usize,
        durable: bool,
    },
    Sync {
        session: usize,
    },
    Claim {
        n: u32,
    },
    RetryClaim {
        n: u32,
    },
    ConflictClaim {
        n: u32,
    },
    Status {
        n: u32,
        status: AdmissionStatus,
    },
    Spawn {
        n: u32,
    },
    SessionClaim {
        n: u32,
    },
    /// Runtime events of run `run` in the event session: its opening, a text, a partial chunk,
    /// its terminal event.
    EventOpen {
        run: u32,
    },
    EventText {
        run: u32,
        i: u32,
    },
    EventPartial {
        run: u32,
        i: u32,
    },
    EventEnd {
        run: u32,
    },
    /// Closes the event store (syncing and writing the sidecar) and opens it again.
    EventClose,
    /// An immutable event `i` in small session `session`, through a store that keeps only
    /// [`SMALL_OPEN`] sessions open: touching a third evicts one (closing it cleanly).
    SmallEvent {
        session: u32,
        i: u32,
    },
    /// Closes the small sessions' store (each session synced, its sidecar written, its zeros
    /// cut); the next small event opens it again.
    SmallClose,
}

/// How many small sessions a workload writes, and how many of them stay open at once.
pub const SMALL_SESSIONS: u32 = 5;
pub const SMALL_OPEN: usize = 2;

fn small_session(n: u32) -> String {
    format!("crash-small-{n}")
}

/// Small sessions' segments: a first block of 1 KiB, growth past it, rolls at 1,500 bytes.
pub fn small_config() -> WriterConfig {
    WriterConfig {
        segment_size: 1500,
        prealloc_step: 1024,
        max_payload: 4096,
        buffered_limit: 400,
    }
}

/// The session the runtime-event store writes.
pub const EVENT_SESSION: &str = "crash-events";

/// A random workload of `len` operations.
pub fn random_workload(rng: &mut SimRng, len: usize) -> Vec<Op> {
    let mut claims = 0u32;
    (0..len)
        .map(|_| {
            let session = rng.below(SESSIONS.len() as u64) as usize;
            match rng.below(13) {
                0..=3 => Op::Append {
                    session,
                    len: 20 + rng.below(200) as usize,
                    durable: rng.below(3) > 0,
                },
                4 => Op::Sync { session },
                5 => {
                    claims += 1;
                    Op::Claim { n: claims }
                }
                6 => Op::RetryClaim {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                },
                7 => Op::ConflictClaim {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                },
                8 => Op::Status {
                    n: 1 + rng.below(claims.max(1) as u64) as u32,
                    status: if rng.below(2) == 0 {
                        AdmissionStatus::Executing
                    } else {
                        AdmissionStatus::Cancelled
                    },
                },
                9 => {
                    if rng.below(2) == 0 {
                        Op::Spawn {
                            n: rng.below(4) as u32,
                        }
                    } else {
                        Op::SessionClaim {
                            n: rng.below(4) as u32,
                        }
                    }
                }
                _ => {
                    let run = rng.below(3) as u32;
                    let i = rng.below(100) as u32;
                    match rng.below(6) {
                        0 => Op::EventOpen { run },
                        1 | 2 => Op::EventText { run, i },
                        3 => Op::EventPartial { run, i },
                        4 => Op::EventEnd { run },
                        _ => Op::EventClose,
                    }
                }
            }
        })
        .collect()
}

/// A random workload of many small sessions: created, filled, evicted, closed and reopened.
pub fn random_sessions_workload(rng: &mut SimRng, len: usize) -> Vec<Op> {
    (0..len)
        .map(|_| match rng.below(8) {
            0 => Op::SmallClose,
            _ => Op::SmallEvent {
                session: rng.below(u64::from(SMALL_SESSIONS)) as u32,
                i: rng.below(12) as u32,
            },
        })
        .collect()
}

/// Small fixed workloads for exhaustive crash testing.
pub fn small_workloads() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        vec![
            EventOpen { run: 1 },
            EventText { run: 1, i: 1 },
            EventPartial { run: 1, i: 2 },
            EventEnd { run: 1 },
            EventText { run: 1, i: 3 },
            EventClose,
            EventOpen { run: 2 },
        ],
        vec![
            Append {
                session: 0,
                len: 100,
                durable: true,
            },
            Append {
                session: 0,
                len: 150,
                durable: false,
            },
            Append {
                session: 0,
                len: 200,
                durable: true,
            },
            Append {
                session: 0,
                len: 300,
                durable: true,
            },
            Append {
                session: 0,
                len: 250,
                durable: true,
            },
        ],
        vec![
            Claim { n: 1 },
            RetryClaim { n: 1 },
            ConflictClaim { n: 1 },
            Status {
                n: 1,
                status: AdmissionStatus::Executing,
            },
            Claim { n: 2 },
            Spawn { n: 1 },
            SessionClaim { n: 1 },
        ],
        vec![
            Append {
                session: 0,
                len: 300,
                durable: false,
            },
            Append {
                session: 1,
                len: 300,
                durable: true,
            },
            Claim { n: 1 },
            Append {
                session: 0,
                len: 300,
                durable: false,
            },
            Sync { session: 0 },
            Status {
                n: 1,
                status: AdmissionStatus::Cancelled,
            },
            Append {
                session: 1,
                len: 400,
                durable: true,
            },
        ],
        // Many small sessions: created, filled past their first block, evicted, closed.
        vec![
            SmallEvent { session: 0, i: 1 },
            SmallEvent { session: 1, i: 1 },
            SmallEvent { session: 2, i: 1 },
            SmallEvent { session: 0, i: 2 },
            SmallEvent { session: 0, i: 3 },
            SmallEvent { session: 0, i: 4 },
            SmallClose,
            SmallEvent { session: 1, i: 2 },
        ],
    ]
}

fn payload(session: usize, i: usize, len: usize) -> Vec<u8> {
    let mut p = format!("{}:{i}:", SESSIONS[session]).into_bytes();
    p.resize(len, b'a' + (i % 26) as u8);
    p
}

fn graph_request(n: u32) -> AgentGraphIntentClaimRequest {
    AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{n:032x}"),
        graph_id: "graph-crash".into(),
        intent_id: format!("graph_intent_{n:032x}"),
        intent_fingerprint: format!("sha256:{n:064x}"),
        readiness_context_fingerprint: format!("sha256:{}", "d".repeat(64)),
        target_operator_id: "local-read".into(),
        target_session_id: "child".into(),
        target_turn_id: format!("turn-{n}"),
        target_run_id: format!("run-{n}"),
    }
}

fn spawn_claim(n: u32) -> SubagentSpawnClaim {
    SubagentSpawnClaim {
        parent_session_id: "parent".into(),
        parent_run_id: "run".into(),
        tool_call_id: format!("tool-{n}"),
        swarm_id: String::new(),
        item_id: String::new(),
        request_fingerprint: format!("{n:064x}"),
        child_session_id: format!("child-{n}"),
        child_header: None,
    }
}

/// What a run submitted and what it had acknowledged.
#[derive(Debug, Default, Clone)]
pub struct Model {
    /// Per session: every record handed to the writer, in order.
    pub submitted: BTreeMap<usize, Vec<Vec<u8>>>,
    /// Per session: how many of them were acknowledged durable.
    pub durable: BTreeMap<usize, usize>,
    /// Claim records whose decision was to append, in order.
    pub claim_records: Vec<ClaimRecord>,
    /// How many of them were acknowledged.
    pub claims_acked: usize,
    /// Operations that returned an error.
    pub errors: usize,
    /// Immutable runtime events handed to the store (canonical JSON), in order.
    pub events: Vec<String>,
    /// Those of them acknowledged. One whose append failed may or may not survive: the store
    /// opens a session whose writer failed again, recovering it from its files.
    pub events_acked: Vec<String>,
    /// Per small session: its immutable events handed to the store (canonical JSON), in order,
    /// and those acknowledged.
    pub small: BTreeMap<u32, Vec<String>>,
    pub small_acked: BTreeMap<u32, Vec<String>>,
    /// Calls made to a writer after it had failed.
    pub calls_after_failure: usize,
    /// Those of them it acknowledged: must stay empty.
    pub acked_after_failure: Vec<String>,
}

struct Run<'a> {
    owner: Option<Owner>,
    writers: BTreeMap<usize, SegmentWriter>,
    claims: Option<ClaimsLog>,
    events: Option<RuntimeEventStore>,
    small: Option<RuntimeEventStore>,
    /// Runs of the event session that have a terminal event.
    sealed: Vec<u32>,
    /// Runs whose terminal event failed to append: it may or may not have survived.
    maybe_sealed: Vec<u32>,
    /// Events whose append failed: each may or may not be stored.
    maybe_stored: Vec<String>,
    /// Sessions (and the claims log, as `usize::MAX`) whose writer failed once. The harness keeps
    /// calling them and requires every later call to fail: a poisoned writer acknowledges nothing.
    broken: Vec<usize>,
    /// Sessions (or the claims log) that never opened: nothing more is sent to them.
    unopened: Vec<usize>,
    shadow: ClaimTables,
    model: &'a mut Model,
    storage: Arc<SimStorage>,
}

const CLAIMS: usize = usize::MAX;

impl Run<'_> {
    fn owner(&mut self) -> Result<&Owner, Error> {
        if self.owner.is_none() {
            create_or_open_root(&*self.storage)?;
            self.owner = Some(
                Owner::try_acquire(self.storage.clone())?
                    .ok_or(Error::InvalidInput("lease busy".into()))?,
            );
        }
        self.owner
            .as_ref()
            .ok_or(Error::InvalidInput("no owner".into()))
    }

    fn writer(&mut self, session: usize) -> Result<&SegmentWriter, Error> {
        if !self.writers.contains_key(&session) {
            let (w, _) = SegmentWriter::open(self.owner()?, SESSIONS[session], config())?;
            self.writers.insert(session, w);
        }
        self.writers
            .get(&session)
            .ok_or(Error::InvalidInput("no writer".into()))
    }

    fn claims(&mut self) -> Result<&ClaimsLog, Error> {
        if self.claims.is_none() {
            let (c, _) = ClaimsLog::open(self.owner()?)?;
            self.claims = Some(c);
        }
        self.claims
            .as_ref()
            .ok_or(Error::InvalidInput("no claims".into()))
    }

    fn event_store(&mut self) -> Result<&RuntimeEventStore, Error> {
        if self.events.is_none() {
            self.events = Some(RuntimeEventStore::open(self.owner()?, config()));
        }
        self.events
            .as_ref()
            .ok_or(Error::InvalidInput("no event store".into()))
    }

    /// An event through the event session's store. A failed append poisons the session's
    /// writer; the store's next call opens it again, writing back and syncing what the failed
    /// writer had written before reading it, so the failed event may or may not survive.
    fn event(&mut self, run: u32, e: RuntimeEvent, terminal: bool) {
        let opened = self
            .event_store()
            .and_then(|s| s.open_session_now(EVENT_SESSION));
        if opened.is_err() {
            self.model.errors += 1;
            return;
        }
        let json = e.canonical_json().to_owned();
        let maybe = self.maybe_stored.contains(&json);
        let repeat = self.model.events.contains(&json) && !maybe;
        let sealed = self.sealed.contains(&run) && !repeat && !maybe;
        let maybe_sealed = self.maybe_sealed.contains(&run) && !repeat && !maybe;
        let immutable = !e.partial();
        if immutable && !sealed && !repeat && !maybe {
            self.model.events.push(json.clone());
        }
        let result = self
            .event_store()
            .and_then(|s| s.append(&e, Durability::Buffered));
        match result {
            Ok(_) if sealed => panic!("an event for sealed run {run} was accepted"),
            Ok(a) if repeat => assert!(!a.created, "an identical event was stored twice"),
            Ok(_) if immutable => {
                if !self.model.events_acked.contains(&json) {
                    self.model.events_acked.push(json.clone());
                }
                self.maybe_stored.retain(|m| *m != json);
                if terminal {
                    self.sealed.push(run);
                }
            }
            Ok(_) => {}
            Err(Error::RunSealed { .. }) if sealed => {}
            // The failed terminal survived: the run is sealed after all.
            Err(Error::RunSealed { .. }) if maybe_sealed => self.sealed.push(run),
            Err(e) if sealed => panic!("expected RunSealed, got {e}"),
            Err(_) => {
                self.model.errors += 1;
                if immutable && !self.maybe_stored.contains(&json) {
                    self.maybe_stored.push(json);
                }
                if terminal {
                    self.maybe_sealed.push(run);
                }
            }
        }
    }

    /// An event through the small sessions' store. A failure poisons only that session's
    /// writer; evicting it closes it, and a later call opens it again and recovers it from
    /// disk, which is allowed: so a failed event may or may not survive, and later ones still
    /// count.
    fn small_event(&mut self, session: u32, i: u32) {
        let id = small_session(session);
        let e = super::events::text(
            &id,
            &format!("small-run-{i}"),
            &format!("small-turn-{i}"),
            &format!("small-{session}-{i}"),
            f64::from(i),
            "a small session's words",
        );
        let json = e.canonical_json().to_owned();
        let submitted = self.model.small.entry(session).or_default();
        if !submitted.contains(&json) {
            submitted.push(json.clone());
        }
        if self.small.is_none() {
            match self.owner() {
                Ok(o) => {
                    let store = RuntimeEventStore::with_open_limit(o, small_config(), SMALL_OPEN);
                    self.small = Some(store);
                }
                Err(_) => {
                    self.model.errors += 1;
                    return;
                }
            }
        }
        let result = self
            .small
            .as_ref()
            .map(|s| s.append(&e, Durability::Durable));
        match result {
            Some(Ok(_)) => {
                let acked = self.model.small_acked.entry(session).or_default();
                if !acked.contains(&json) {
                    acked.push(json);
                }
            }
            _ => self.model.errors += 1,
        }
    }

    fn close_small(&mut self) {
        if let Some(store) = self.small.take() {
            if store.close().is_err() {
                self.model.errors += 1;
            }
        }
    }

    fn close_events(&mut self) {
        // A failed close loses nothing acknowledged (immutable events were durable before they
        // were acknowledged); the next call opens the store again and recovers.
        if let Some(store) = self.events.take() {
            if store.close().is_err() {
                self.model.errors += 1;
            }
        }
    }

    fn op(&mut self, op: &Op) {
        let e = |run: u32,
                 id: String,
                 ts: f64,
                 f: fn(&str, &str, &str, &str, f64, &str) -> RuntimeEvent| {
            f(
                EVENT_SESSION,
                &format!("run-{run}"),
                &format!("turn-{run}"),
                &id,
                ts,
                "words",
            )
        };
        match op {
            Op::EventOpen { run } => {
                let ev = super::events::opening(
                    EVENT_SESSION,
                    &format!("run-{run}"),
                    &format!("turn-{run}"),
                    f64::from(*run),
                );
                self.event(*run, ev, false)
            }
            Op::EventText { run, i } => self.event(
                *run,
                e(
                    *run,
                    format!("text-{run}-{i}"),
                    f64::from(*i),
                    super::events::text,
                ),
                false,
            ),
            Op::EventPartial { run, i } => self.event(
                *run,
                e(
                    *run,
                    format!("chunk-{run}-{i}"),
                    f64::from(*i),
                    super::events::partial,
                ),
                false,
            ),
            Op::EventEnd { run } => {
                let ev = super::events::terminal(
                    EVENT_SESSION,
                    &format!("run-{run}"),
                    &format!("turn-{run}"),
                    &format!("end-{run}"),
                    500.0,
                    "completed",
                );
                self.event(*run, ev, true)
            }
            Op::EventClose => self.close_events(),
            Op::SmallEvent { session, i } => self.small_event(*session, *i),
            Op::SmallClose => self.close_small(),
            Op::Append {
                session,
                len,
                durable,
            } => self.append(*session, *len, *durable),
            Op::Sync { session } => {
                if self.unopened.contains(session) {
                    return;
                }
                let result = self.writer(*session).and_then(|w| w.sync());
                if self.broken.contains(session) {
                    return self.require_failed(*session, result.is_ok());
                }
                match result {
                    Ok(()) => {
                        let n = self.model.submitted.get(session).map_or(0, Vec::len);
                        self.model.durable.insert(*session, n);
                    }
                    Err(_) => self.fail(*session),
                }
            }
            Op::Claim { n } | Op::RetryClaim { n } => {
                let claim = AgentGraphIntentClaim::new(graph_request(*n), u64::from(*n));
                self.claim(ClaimRecord::Graph(claim));
            }
            Op::ConflictClaim { n } => {
                let mut r = graph_request(*n);
                r.target_operator_id = "another-operator".into();
                self.claim(ClaimRecord::Graph(AgentGraphIntentClaim::new(r, 0)));
            }
            Op::Status { n, status } => {
                let reason = (*status == AdmissionStatus::Cancelled).then(|| "stopped".to_owned());
                self.claim(ClaimRecord::Status(AdmissionStatusChange {
                    graph_id: "graph-crash".into(),
                    intent_id: graph_request(*n).intent_id,
                    status: *status,
                    reason,
                }));
            }
            Op::Spawn { n } => self.claim(ClaimRecord::Spawn(spawn_claim(*n))),
            Op::SessionClaim { n } => self.claim(ClaimRecord::Session(SessionCreateClaim {
                session_id: format!("session-{n}"),
                created_at: u64::from(*n),
            })),
        }
    }

    fn fail(&mut self, who: usize) {
        self.model.errors += 1;
        self.broken.push(who);
    }

    fn require_failed(&mut self, who: usize, acked: bool) {
        self.model.calls_after_failure += 1;
        if acked {
            self.model
                .acked_after_failure
                .push(format!("writer {who} acknowledged after failing"));
        }
    }

    fn append(&mut self, session: usize, len: usize, durable: bool) {
        if self.unopened.contains(&session) {
            return;
        }
        if self.writer(session).is_err() {
            self.model.errors += 1;
            return self.unopened.push(session);
        }
        if self.broken.contains(&session) {
            let p = payload(session, usize::MAX, len);
            let result = self
                .writer(session)
                .and_then(|w| w.append(RecordKind::RuntimeEvent, &p, Durability::Durable));
            return self.require_failed(session, result.is_ok());
        }
        let i = self.model.submitted.get(&session).map_or(0, Vec::len);
        let p = payload(session, i, len);
        self.model
            .submitted
            .entry(session)
            .or_default()
            .push(p.clone());
        let durability = if durable {
            Durability::Durable
        } else {
            Durability::Buffered
        };
        let result = self
            .writer(session)
            .and_then(|w| w.append(RecordKind::RuntimeEvent, &p, durability));
        match result {
            Ok(_) if durable => {
                self.model.durable.insert(session, i + 1);
            }
            Ok(_) => {}
            Err(_) => self.fail(session),
        }
    }

    fn claim(&mut self, record: ClaimRecord) {
        if self.unopened.contains(&CLAIMS) {
            return;
        }
        if self.claims().is_err() {
            self.model.errors += 1;
            return self.unopened.push(CLAIMS);
        }
        if self.broken.contains(&CLAIMS) {
            let acked = match self.claims() {
                Ok(log) => log.list_agent_graph_intent_claims(None).is_ok(),
                Err(_) => false,
            };
            return self.require_failed(CLAIMS, acked);
        }
        let decision = self.shadow.decide(&record);
        let appends = matches!(decision, Ok(Decision::Append));
        if appends {
            self.model.claim_records.push(record.clone());
        }
        let log = match self.claims() {
            Ok(l) => l,
            Err(_) => return self.fail(CLAIMS),
        };
        let result = match &record {
            ClaimRecord::Graph(c) => log
                .claim_agent_graph_intent_at(c.request(), c.claimed_at)
                .map(|o| o.created),
            ClaimRecord::Status(s) => log
                .set_agent_graph_intent_status(
                    &s.graph_id,
                    &s.intent_id,
                    s.status,
                    s.reason.as_deref(),
                )
                .map(|_| appends),
            ClaimRecord::Spawn(c) => log.claim_subagent_spawn(c.clone()).map(|o| o.created),
            ClaimRecord::Session(c) => log
                .claim_session_create_at(&c.session_id, c.created_at)
                .map(|_| true),
        };
        match (&decision, result) {
            (Ok(Decision::Append), Ok(true)) => {
                self.shadow
                    .apply(record, self.model.claim_records.len() as u64);
                self.model.claims_acked = self.model.claim_records.len();
            }
            (Ok(Decision::Stored { .. }), Ok(false)) => {}
            (Err(Error::ClaimConflict { .. }), Err(Error::ClaimConflict { .. })) => {}
            (Err(Error::InvalidInput(_)), Err(Error::InvalidInput(_))) => {}
            (Ok(Decision::Append), Err(_)) => {
                self.shadow
                    .apply(record, self.model.claim_records.len() as u64);
                self.fail(CLAIMS);
            }
            (_, Err(Error::Poisoned { .. } | Error::Io { .. })) => self.fail(CLAIMS),
            (d, r) => {
                panic!("the log disagrees with the rules: decided {d:?}, got {r:?} for {record:?}")
            }
        }
    }
}

/// Runs `ops` on `storage` (whatever faults or crash point it was given) and returns the model.
pub fn run(storage: &Arc<SimStorage>, ops: &[Op]) -> Model {
    let mut model = Model::default();
    let mut run = Run {
        owner: None,
        writers: BTreeMap::new(),
        claims: None,
        events: None,
        small: None,
        sealed: Vec::new(),
        maybe_sealed: Vec::new(),
        maybe_stored: Vec::new(),
        broken: Vec::new(),
        unopened: Vec::new(),
        shadow: ClaimTables::default(),
        model: &mut model,
        storage: storage.clone(),
    };
    for op in ops {
        run.op(op);
    }
    // A clean close syncs what is buffered: a close that fails acknowledges nothing more.
    run.close_events();
    run.close_small();
    let writers = std::mem::take(&mut run.writers);
    for (session, w) in writers {
        if !run.broken.contains(&session) && w.close().is_ok() {
            let n = run.model.submitted.get(&session).map_or(0, Vec::len);
            run.model.durable.insert(session, n);
        }
    }
    drop(run);
    model
}

/// The state a recovery leaves, as compared between recoveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub sessions: BTreeMap<usize, Vec<Vec<u8>>>,
    pub claims: Vec<serde_json::Value>,
    /// The event session's immutable events in commit order (canonical JSON).
    pub events: Vec<String>,
    /// Each small session's immutable events in commit order.
    pub small: BTreeMap<u32, Vec<String>>,
}

/// Opens the root for writing (which recovers it) and reads everything back. Any error is a
/// failed invariant: crashes never leave damage that recovery may refuse.
pub fn recover(storage: &Arc<SimStorage>) -> Result<Recovered, String> {
    create_or_open_root(&**storage).map_err(|e| format!("root: {e}"))?;
    let owner = Owner::try_acquire(storage.clone())
        .map_err(|e| format!("lease: {e}"))?
        .ok_or("lease busy after a crash")?;
    let mut sessions = BTreeMap::new();
    for (i, id) in SESSIONS.iter().enumerate() {
        let (w, _) =
            SegmentWriter::open(&owner, id, config()).map_err(|e| format!("open {id}: {e}"))?;
        drop(w);
        let records: Result<Vec<Vec<u8>>, String> = SessionReader::open(&**storage, id, 1)
            .map_err(|e| format!("reader {id}: {e}"))?
            .map(|r| r.map(|r| r.payload).map_err(|e| format!("read {id}: {e}")))
            .collect();
        sessions.insert(i, records?);
    }
    let (log, _) = ClaimsLog::open(&owner).map_err(|e| format!("claims: {e}"))?;
    drop(log);
    let bytes = storage
        .read_file(std::path::Path::new(makalog::claims::CLAIMS_FILE))
        .map_err(|e| format!("claims.log: {e}"))?;
    let id = makalog::root::read_marker(&**storage)
        .and_then(|m| m.root_id_bytes())
        .map_err(|e| format!("marker: {e}"))?;
    let replay = makalog::claims::replay_claims(&bytes, &id);
    if !replay.problems.is_empty() {
        return Err(format!("claims after recovery: {:?}", replay.problems));
    }
    let events = recover_events(storage, &owner)?;
    let small = recover_small(storage, &owner)?;
    Ok(Recovered {
        sessions,
        claims: replay.tables.to_json_lines(None),
        events,
        small,
    })
}

/// Opens the event store (recovering its session and index), checks that the index answers
/// what a rebuild from the events alone answers and that the sidecar it writes on close equals
/// a rebuild byte for byte, and returns the immutable events in commit order.
fn recover_events(storage: &Arc<SimStorage>, owner: &Owner) -> Result<Vec<String>, String> {
    let store = RuntimeEventStore::open(owner, config());
    let dir = std::path::Path::new("sessions").join(EVENT_SESSION);
    let exists = storage
        .entry_kind(&dir)
        .map_err(|e| format!("stat: {e}"))?
        .is_some();
    // Reads of a session that is not open go through a read-only view of its files; opening
    // it for writing recovers it. Both must answer the same.
    let read_only = store
        .list_session_invocations(EVENT_SESSION)
        .map_err(|e| format!("read-only view: {e}"))?;
    if exists {
        store
            .open_session_now(EVENT_SESSION)
            .map_err(|e| format!("event store: {e}"))?;
    }
    let listed = store
        .list_session_invocations(EVENT_SESSION)
        .map_err(|e| format!("event store: {e}"))?;
    if listed != read_only {
        return Err("the read-only view disagrees with the recovered session".into());
    }
    let events = store
        .read_session_runtime_events(EVENT_SESSION)
        .map_err(|e| format!("events: {e}"))?;
    if listed != runtime_invocations_from_session_events(EVENT_SESSION, &events) {
        return Err("the invocation index disagrees with a rebuild from the events".into());
    }
    store
        .close()
        .map_err(|e| format!("event store close: {e}"))?;
    if !exists {
        return if listed.is_empty() {
            Ok(Vec::new())
        } else {
            Err("invocations listed for a session with no directory".into())
        };
    }
    let view = rebuild(&**storage, EVENT_SESSION).map_err(|e| format!("rebuild: {e}"))?;
    let want = encode_sidecar(&view, &[]).map_err(|e| format!("encode: {}", e.what))?;
    let path = std::path::Path::new("sessions")
        .join(EVENT_SESSION)
        .join("index");
    let got = storage
        .read_file(&path)
        .map_err(|e| format!("sidecar: {e}"))?;
    if got != want {
        return Err("the sidecar differs from a rebuild".into());
    }
    let mut out = Vec::new();
    for record in
        SessionReader::open(&**storage, EVENT_SESSION, 1).map_err(|e| format!("reader: {e}"))?
    {
        let r = record.map_err(|e| format!("read events: {e}"))?;
        let text = String::from_utf8(r.payload).map_err(|_| "event is not UTF-8".to_owned())?;
        let e = RuntimeEvent::decode(&text).map_err(|e| format!("event: {e}"))?;
        if !e.partial() {
            out.push(text);
        }
    }
    Ok(out)
}

/// Opens every small session through a store with room for [`SMALL_OPEN`] (so recovery itself
/// evicts), checks that the read-only view of each answers what the recovered session does,
/// closes the store, and checks each sidecar equals a rebuild byte for byte and each segment
/// ends where its data ends (a clean close cut the zeros).
fn recover_small(
    storage: &Arc<SimStorage>,
    owner: &Owner,
) -> Result<BTreeMap<u32, Vec<String>>, String> {
    let store = RuntimeEventStore::with_open_limit(owner, small_config(), SMALL_OPEN);
    let mut out = BTreeMap::new();
    let mut present = Vec::new();
    for n in 0..SMALL_SESSIONS {
        let id = small_session(n);
        let dir = std::path::Path::new("sessions").join(&id);
        let exists = storage
            .entry_kind(&dir)
            .map_err(|e| format!("stat: {e}"))?
            .is_some();
        let read_only = store
            .list_session_invocations(&id)
            .map_err(|e| format!("{id} read-only view: {e}"))?;
        if !exists {
            if !read_only.is_empty() {
                return Err(format!("{id}: invocations listed with no directory"));
            }
            continue;
        }
        present.push(id.clone());
        store
            .open_session_now(&id)
            .map_err(|e| format!("{id}: {e}"))?;
        let listed = store
            .list_session_invocations(&id)
            .map_err(|e| format!("{id}: {e}"))?;
        if listed != read_only {
            return Err(format!("{id}: the read-only view disagrees with recovery"));
        }
        let events = store
            .read_session_runtime_events(&id)
            .map_err(|e| format!("{id} events: {e}"))?;
        if listed != runtime_invocations_from_session_events(&id, &events) {
            return Err(format!("{id}: the index disagrees with a rebuild"));
        }
        let mut committed = Vec::new();
        for r in SessionReader::open(&**storage, &id, 1).map_err(|e| format!("{id}: {e}"))? {
            let r = r.map_err(|e| format!("{id} read: {e}"))?;
            committed.push(String::from_utf8(r.payload).map_err(|_| "not UTF-8".to_owned())?);
        }
        // An empty session equals an absent one (the harness's restore keeps files only).
        if !committed.is_empty() {
            out.insert(n, committed);
        }
    }
    store
        .close()
        .map_err(|e| format!("small store close: {e}"))?;
    for id in present {
        let view = rebuild(&**storage, &id).map_err(|e| format!("rebuild {id}: {e}"))?;
        let want = encode_sidecar(&view, &[]).map_err(|e| format!("encode: {}", e.what))?;
        let dir = std::path::Path::new("sessions").join(&id);
        let got = storage
            .read_file(&dir.join("index"))
            .map_err(|e| format!("{id} sidecar: {e}"))?;
        if got != want {
            return Err(format!("{id}: the sidecar differs from a rebuild"));
        }
        let seg = makalog::segment::layout::list_session(&**storage, &id)
            .map_err(|e| format!("{id}: {e}"))?
            .segments
            .pop()
            .ok_or("no segment")?;
        let bytes = storage
            .read_file(&seg.path)
            .map_err(|e| format!("{id}: {e}"))?;
        if let makalog::segment::ScanResult::Scanned(scan) = makalog::segment::scan_segment(&bytes)
        {
            if scan.data_end != bytes.len() as u64 {
                return Err(format!(
                    "{id}: {} bytes after a clean close, data ends at {}",
                    bytes.len(),
                    scan.data_end
                ));
            }
        }
    }
    Ok(out)
}

/// Checks a recovered state against the model: no writer acknowledged anything after failing,
/// every acknowledged write is present, and each log is the model after some prefix of what was
/// submitted.
pub fn check(model: &Model, got: &Recovered) -> Result<(), String> {
    if let Some(what) = model.acked_after_failure.first() {
        return Err(what.clone());
    }
    for (session, records) in &got.sessions {
        let submitted = model.submitted.get(session).cloned().unwrap_or_default();
        let durable = model.durable.get(session).copied().unwrap_or(0);
        if records.len() > submitted.len() || records[..] != submitted[..records.len()] {
            return Err(format!(
                "session {}: recovered {} records that are not a prefix of the {} submitted",
                SESSIONS[*session],
                records.len(),
                submitted.len()
            ));
        }
        if records.len() < durable {
            return Err(format!(
                "session {}: {} records acknowledged durable, {} recovered",
                SESSIONS[*session],
                durable,
                records.len()
            ));
        }
    }
    // In commit order, a subsequence of what was handed over (a failed event may be missing
    // while a later one, after the session was opened again, is there), holding every
    // acknowledged one.
    let mut rest = model.events.iter();
    if !got.events.iter().all(|e| rest.any(|s| s == e)) {
        return Err(format!(
            "events: the {} recovered are out of order or were never submitted ({} submitted)",
            got.events.len(),
            model.events.len()
        ));
    }
    if let Some(lost) = model.events_acked.iter().find(|a| !got.events.contains(a)) {
        return Err(format!("events: acknowledged {lost} is missing"));
    }
    for (n, got_events) in &got.small {
        let submitted = model.small.get(n).cloned().unwrap_or_default();
        let acked = model.small_acked.get(n).cloned().unwrap_or_default();
        // In commit order, a subsequence of what was handed over (a failed event may be
        // missing while a later one, after the session was reopened, is there)…
        let mut rest = submitted.iter();
        if !got_events.iter().all(|e| rest.any(|s| s == e)) {
            return Err(format!(
                "small session {n}: recovered events out of order or never submitted"
            ));
        }
        // …holding every acknowledged one.
        if let Some(lost) = acked.iter().find(|a| !got_events.contains(a)) {
            return Err(format!("small session {n}: acknowledged {lost} is missing"));
        }
    }
    if let Some(n) = model
        .small_acked
        .iter()
        .find(|(n, a)| !a.is_empty() && !got.small.contains_key(n))
        .map(|(n, _)| n)
    {
        return Err(format!(
            "small session {n}: acknowledged events and no session"
        ));
    }
    let mut tables = ClaimTables::default();
    let mut prefixes = vec![tables.to_json_lines(None)];
    for (i, r) in model.claim_records.iter().enumerate() {
        tables.apply(r.clone(), i as u64 + 1);
        prefixes.push(tables.to_json_lines(None));
    }
    match prefixes.iter().position(|p| *p == got.claims) {
        Some(k) if k >= model.claims_acked => Ok(()),
        Some(k) => Err(format!(
            "claims: {} acknowledged, only {k} recovered",
            model.claims_acked
        )),
        None => Err(format!(
            "claims: the recovered tables are no prefix of the {} submitted claim records",
            model.claim_records.len()
        )),
    }
}

/// The segments, claims and runtime-event workload as a crash harness.
pub struct Engine;

impl Harness for Engine {
    type Op = Op;
    type Model = Model;
    type Recovered = Recovered;
    fn run(storage: &Arc<SimStorage>, ops: &[Op]) -> Model {
        run(storage, ops)
    }
    fn recover(storage: &Arc<SimStorage>) -> Result<Recovered, String> {
        recover(storage)
    }
    fn check(model: &Model, got: &Recovered) -> Result<(), String> {
        check(model, got)
    }
    fn calls_after_failure(model: &Model) -> usize {
        model.calls_after_failure
    }
}

/// The workload and scenario a random seed stands for.
pub fn random_scenario(seed: u64) -> (Vec<Op>, Scenario) {
    let mut rng = SimRng::new(seed);
    let len = 5 + rng.below(25) as usize;
    let ops = random_workload(&mut rng, len);
    scenario_of::<Engine>(ops, seed, rng)
}

/// The many-sessions workload and scenario a random seed stands for.
pub fn random_sessions_scenario(seed: u64) -> (Vec<Op>, Scenario) {
    let mut rng = SimRng::new(seed ^ 0x5e55_1055);
    let len = 5 + rng.below(20) as usize;
    let ops = random_sessions_workload(&mut rng, len);
    scenario_of::<Engine>(ops, seed, rng)
}

/// Persistence points a workload passes when nothing fails.
pub fn count_points(ops: &[Op]) -> u64 {
    super::scenario::count_points::<Engine>(ops)
}

/// [`super::scenario::check_scenario`] for this harness.
pub fn check_scenario(ops: &[Op], s: Scenario) -> Result<(), String> {
    super::scenario::check_scenario::<Engine>(ops, s)
}

/// The fault workload (the small workloads, then a random one) with `kind` injected at every
/// operation in turn, once and for ever; returns the cases run and the calls failed writers
/// refused.
pub fn every_operation_failing(kind: FaultKind) -> Result<(u64, usize), String> {
    let mut ops = small_workloads().concat();
    let mut rng = SimRng::new(7);
    ops.extend(random_workload(&mut rng, 20));
    every_operation_failing_in::<Engine>(&ops, kind)
}
