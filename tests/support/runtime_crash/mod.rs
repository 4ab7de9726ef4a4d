//! The crash harness of the runtime (MAKA-MODEL §12): whole turns through the SessionManager
//! and the instant fake backend, a question turn stopped, a linked child's claimed intent run
//! and run again, a claimed run aborted once started, recovery passes and reopens in between.
//! After a crash, recovery (opening the composition and `recover()`) must keep every
//! acknowledged turn as it ended, end every other run exactly once, and run no claim twice.

mod check;
mod view;

pub use check::check;
pub use view::{recover, RuntimeView};

use super::scenario::Harness;
use super::stores::session_header;
use makalog::root::{create_or_open_root, Owner};
use makalog::runtime::{
    AbortController, AgentGraphRunnableIntent, BackendRegistry, ClaimedIntentRun,
    ExecutionComposition, Sources, TurnInput, FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::storage::SimStorage;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One operation of a runtime workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeOp {
    /// A whole turn in session `s{n}` (created first if it is not there).
    Turn(u8),
    /// A turn in `s{n}` that asks questions, stopped while it waits.
    StoppedQuestion(u8),
    /// The claimed intent of child `c{n}` of `p`, run (again, if it ran).
    Claimed(u8),
    /// The claimed intent of child `a{n}` (a question prompt), aborted once it started.
    AbortedClaim(u8),
    /// A recovery pass, as at a start.
    Recover,
    /// Closes the composition and opens it again.
    Reopen,
}

/// What the workload asked for and what was acknowledged.
#[derive(Debug, Default, Clone)]
pub struct RuntimeModel {
    /// Every run a turn asked for, by (session, run).
    pub asked: BTreeSet<(String, String)>,
    /// Runs whose opening writes were acknowledged (send_message returned).
    pub started: BTreeSet<(String, String)>,
    /// Runs whose turn was acknowledged as ended, with the run's status then.
    pub ended: BTreeMap<(String, String), String>,
    /// Claimed children whose run was acknowledged, with its status.
    pub claims: BTreeMap<String, String>,
    pub errors: usize,
}

pub struct Runtime;

impl Harness for Runtime {
    type Op = RuntimeOp;
    type Model = RuntimeModel;
    type Recovered = RuntimeView;
    fn run(storage: &Arc<SimStorage>, ops: &[RuntimeOp]) -> RuntimeModel {
        let mut r = Running {
            storage: storage.clone(),
            owner: None,
            c: None,
            model: RuntimeModel::default(),
            next_run: 0,
            lives: 0,
        };
        for (i, op) in ops.iter().enumerate() {
            r.op(i, *op);
        }
        if let Some(c) = r.c.take() {
            let _ = c.close();
        }
        r.model
    }
    fn recover(storage: &Arc<SimStorage>) -> Result<RuntimeView, String> {
        recover(storage)
    }
    fn check(model: &RuntimeModel, got: &RuntimeView) -> Result<(), String> {
        check(model, got)
    }
}

/// Deterministic ids and clock, so every replay of a workload writes the same bytes; `epoch`
/// keeps the ids of one life of the process apart from every other's, as random ids are.
pub fn sources(epoch: &str) -> Sources {
    let ids = AtomicU64::new(0);
    let clock = AtomicU64::new(1_000);
    let epoch = epoch.to_owned();
    Sources::new(
        move || format!("{epoch}-{:06}", ids.fetch_add(1, Ordering::SeqCst)),
        move || clock.fetch_add(1, Ordering::SeqCst) as f64,
    )
}

pub fn composition(owner: &Owner, epoch: &str) -> makalog::Result<ExecutionComposition> {
    ExecutionComposition::open_with(
        owner,
        super::crash::config(),
        BackendRegistry::with_instant_fake(),
        sources(epoch),
    )
}

struct Running {
    storage: Arc<SimStorage>,
    owner: Option<Owner>,
    c: Option<ExecutionComposition>,
    model: RuntimeModel,
    next_run: u64,
    /// Compositions opened so far: each is a life with ids of its own.
    lives: u64,
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

impl Running {
    fn composition(&mut self) -> makalog::Result<&ExecutionComposition> {
        if self.owner.is_none() {
            create_or_open_root(&*self.storage)?;
            let owner = Owner::try_acquire(self.storage.clone())?
                .ok_or(makalog::Error::InvalidInput("lease busy".into()))?;
            self.owner = Some(owner);
        }
        if self.c.is_none() {
            let owner = self
                .owner
                .as_ref()
                .ok_or(makalog::Error::InvalidInput("no owner".into()))?;
            self.lives += 1;
            self.c = Some(composition(owner, &format!("life{}", self.lives))?);
        }
        self.c
            .as_ref()
            .ok_or(makalog::Error::InvalidInput("no composition".into()))
    }

    fn op(&mut self, i: usize, op: RuntimeOp) {
        let done = match op {
            RuntimeOp::Turn(n) => self.turn(n, "a question of the workload", None),
            RuntimeOp::StoppedQuestion(n) => self.turn(n, FAKE_ASK_USER_QUESTION_PROMPT, Some(())),
            RuntimeOp::Claimed(n) => self.claimed(&format!("c{n}"), "run the claimed work", false),
            RuntimeOp::AbortedClaim(n) => {
                self.claimed(&format!("a{n}"), FAKE_ASK_USER_QUESTION_PROMPT, true)
            }
            RuntimeOp::Recover => self.composition().and_then(|c| c.recover()).map(|_| ()),
            RuntimeOp::Reopen => match self.c.take() {
                Some(c) => c.close(),
                None => Ok(()),
            },
        };
        if std::env::var_os("RT_DEBUG").is_some() {
            eprintln!(
                "op {i} {op:?}: {:?} ops {}",
                done.as_ref().err(),
                self.storage.operations()
            );
        }
        if done.is_err() {
            self.model.errors += 1;
            // A failed write poisons its writer: the next operation opens afresh.
            if let Some(c) = self.c.take() {
                let _ = c.close();
            }
        }
        let _ = i;
    }

    fn turn(&mut self, n: u8, text: &str, stop: Option<()>) -> makalog::Result<()> {
        let s = format!("s{n}");
        let run = format!("r{}", self.next_run);
        self.next_run += 1;
        self.model.asked.insert((s.clone(), run.clone()));
        let c = self.composition()?;
        if c.stores().sessions.read_session(&s)?.is_none() {
            c.manager()
                .create_session(json!({"id": s, "backend": "fake", "cwd": "/w", "model": "m"}))?;
        }
        let manager = c.manager().clone();
        let input = TurnInput {
            text: text.into(),
            run_id: Some(run.clone()),
            ..TurnInput::default()
        };
        let (started, outcome) = rt().block_on(async {
            let mut turn = match manager.send_message(&s, input).await {
                Ok(t) => t,
                Err(e) => return (false, Err(e)),
            };
            if stop.is_some() {
                while let Some(e) = turn.events.recv().await {
                    if e.type_name() == "user_question_request" {
                        let _ = manager.stop(&s, "stop_button");
                        break;
                    }
                }
            }
            (true, turn.finish().await)
        });
        if started {
            self.model.started.insert((s.clone(), run.clone()));
        }
        let outcome = outcome?;
        self.model.ended.insert((s, run), outcome.status);
        Ok(())
    }

    fn claimed(&mut self, child: &str, prompt: &str, abort: bool) -> makalog::Result<()> {
        let run = format!("{child}-run");
        self.model.asked.insert((child.to_owned(), run.clone()));
        let c = self.composition()?;
        let stores = c.stores();
        if stores.sessions.read_session("p")?.is_none() {
            stores.sessions.create(session_header("p", 1))?;
        }
        if stores.sessions.read_session(child)?.is_none() {
            stores.sessions.create_subagent(child_header(child))?;
        }
        let intent = intent(child);
        if stores
            .claims
            .read_agent_graph_intent_claim(&intent.graph_id, &intent.intent_id)?
            .is_none()
        {
            let request = intent.claim_request(prompt, &format!("{child}-turn"), &run)?;
            stores.claims.claim_agent_graph_intent(request)?;
        }
        let manager = c.manager().clone();
        let controller = AbortController::new();
        let signal = controller.signal();
        let (graph, id) = (intent.graph_id.clone(), intent.intent_id.clone());
        let call = ClaimedIntentRun {
            abort: abort.then_some(signal),
            on_ready: abort
                .then(|| Box::new(move || controller.abort()) as Box<dyn FnOnce() + Send>),
            ..ClaimedIntentRun::new(intent, graph, id, prompt)
        };
        let result = rt().block_on(manager.run_claimed_agent_graph_intent(call))?;
        self.model.claims.insert(child.to_owned(), result.status);
        Ok(())
    }
}

fn intent(child: &str) -> AgentGraphRunnableIntent {
    let hex = |c: char| c.to_string().repeat(32);
    AgentGraphRunnableIntent {
        schema_version: 1,
        intent_id: format!(
            "graph_intent_{}",
            hex(if child.starts_with('a') { 'a' } else { 'c' })
        ),
        graph_id: format!("graph-{child}"),
        readiness_context_fingerprint: format!("sha256:{}", "d".repeat(64)),
        policy_fingerprint: format!("sha256:{}", "e".repeat(64)),
        readiness_id: "readiness".into(),
        operator_id: "local-read".into(),
        target_session_id: child.into(),
        policy_kind: "map".into(),
        trigger_route_ids: vec![],
        trigger_record_ids: vec![],
    }
}

fn child_header(child: &str) -> serde_json::Value {
    let mut h = session_header(child, 2);
    h["subagentParent"] = json!({"kind": "subagent", "parentSessionId": "p",
        "spawnedBy": {"parentRunId": "pr", "parentTurnId": "pt", "toolCallId": format!("tool-{child}")},
        "lifecycle": "foreground"});
    h["subagentRuntime"] = json!({"schemaVersion": 1, "definitionVersion": 1, "agentId": "local-read",
        "agentName": "Local Read", "profile": "local_read", "systemPrompt": "read",
        "toolNames": [], "categoryPolicy": {}});
    h["subagentSpawn"] = json!({"schemaVersion": 1, "requestFingerprint": "f".repeat(64),
        "initialTurnId": format!("{child}-turn"), "initialRunId": format!("{child}-run")});
    h
}

/// Small workloads for exhaustive crash testing.
pub fn small_runtime_workloads() -> Vec<Vec<RuntimeOp>> {
    use RuntimeOp::*;
    vec![
        vec![Turn(0), Turn(0), Reopen, Turn(1)],
        vec![StoppedQuestion(0), Recover, Turn(0)],
        vec![Claimed(0), Claimed(0), Reopen, Claimed(0)],
        vec![AbortedClaim(0), Recover, AbortedClaim(0)],
    ]
}
