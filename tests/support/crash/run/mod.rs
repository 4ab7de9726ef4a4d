//! Running a workload: each operation through the public API, what was submitted and
//! acknowledged kept in the model.

mod claims;
mod event_store;

use super::*;

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
                let ev = events::opening(
                    EVENT_SESSION,
                    &format!("run-{run}"),
                    &format!("turn-{run}"),
                    f64::from(*run),
                );
                self.event(*run, ev, false)
            }
            Op::EventText { run, i } => self.event(
                *run,
                e(*run, format!("text-{run}-{i}"), f64::from(*i), events::text),
                false,
            ),
            Op::EventPartial { run, i } => self.event(
                *run,
                e(
                    *run,
                    format!("chunk-{run}-{i}"),
                    f64::from(*i),
                    events::partial,
                ),
                false,
            ),
            Op::EventEnd { run } => {
                let ev = events::terminal(
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
