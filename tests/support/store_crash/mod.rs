//! The crash harness of the execution stores (MAKA-MODEL §5–§8): sessions created and updated,
//! subagents spawned under their claims (and spawned again with a fresh id), messages, runs
//! with their events, terminal commits, root-turn admissions and rejections, with the stores closed and
//! opened again in between. Every operation's outcome is recorded; after a crash, recovery
//! (opening the stores, which completes interrupted spawns) must keep everything acknowledged,
//! invent nothing, and answer the same through every view.

mod check;
mod view;
mod workload;

pub use check::check;
pub use view::{recover, StoreView};
pub use workload::*;

use super::events::terminal;
use super::scenario::Harness;
use super::stores::session_header;
use makalog::root::{create_or_open_root, Owner};
use makalog::storage::SimStorage;
use makalog::store::{open_execution_stores_with, ExecutionStores};
use makalog::Error;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Root sessions a workload writes (`p0`, `p1`) and the runs and turns it uses per session.
pub const PARENTS: u8 = 2;
pub const RUNS: u32 = 3;
pub const TURNS: u32 = 3;

pub fn parent(n: u8) -> String {
    format!("p{n}")
}

/// One operation of a store workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    /// Creates session `p{n}`.
    Create(u8),
    /// Writes a new header of `p{n}` with `lastUsedAt` set.
    Touch(u8, u64),
    /// Spawns child `c{child}` of `p{parent}` under spawn key `tool-{key}`: the same key with
    /// another child id is a retry, answered with the first child.
    Spawn { parent: u8, key: u8, child: u8 },
    /// Appends message `m{i}` (of turn `t{i % TURNS}`) to `p{n}`.
    Message(u8, u32),
    /// Creates run `r{i}` of `p{n}` (status `created`).
    Run(u8, u32),
    /// Appends a lifecycle event to run `r{i}` of `p{n}`.
    RunEvent(u8, u32),
    /// Moves run `r{i}` of `p{n}` to `running`, while it is `created`.
    Start(u8, u32),
    /// Commits run `r{i}` of `p{n}` as completed (§7); again if it is already.
    Terminal(u8, u32),
    /// Admits turn `t{i}` of `p{n}` (§8); again with the same payload if it is already.
    Admit(u8, u32),
    /// Rejects turn `t{i}` of `p{n}` (§8): refused if it is admitted, a repeat if rejected.
    Reject(u8, u32),
    /// Closes the stores (sidecars written, zeros cut) and opens them again.
    Reopen,
    /// Lists the sessions: every acknowledged header (or a later one) must be listed.
    List,
}

/// Small segments, so short workloads roll and seal.
pub fn config() -> makalog::segment::WriterConfig {
    super::crash::config()
}

/// What the workload handed to the stores, each with whether it was acknowledged.
#[derive(Debug, Default, Clone)]
pub struct StoreModel {
    /// Per session: every header written (canonical JSON), in order.
    pub headers: BTreeMap<String, Vec<(String, bool)>>,
    /// Per session: every message (canonical JSON), in order.
    pub messages: BTreeMap<String, Vec<(String, bool)>>,
    /// Per run: every status it was given (`created` first), in order.
    pub statuses: BTreeMap<(String, String), Vec<(String, bool)>>,
    /// Per run: every lifecycle event appended by the workload (canonical JSON), in order.
    pub run_events: BTreeMap<(String, String), Vec<(String, bool)>>,
    /// Per run: whether a terminal commit was made, and whether one was acknowledged.
    pub terminals: BTreeMap<(String, String), bool>,
    /// Per admitted turn: the admission (canonical JSON) and whether it was acknowledged.
    pub admissions: BTreeMap<(String, String), (String, bool)>,
    /// Per rejected turn: the rejection (canonical JSON) and whether it was acknowledged.
    pub rejections: BTreeMap<(String, String), (String, bool)>,
    /// Per spawn key: each child id asked for, with the child the call answered (if it did).
    pub spawns: BTreeMap<String, Vec<(String, Option<SpawnAnswer>)>>,
    /// Operations that returned an error.
    pub errors: usize,
    /// What listings taken during the run got wrong.
    pub listing_errors: Vec<String>,
}

/// What an acknowledged spawn call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnAnswer {
    pub child: String,
    pub created: bool,
}

/// The store workload as a crash harness.
pub struct Stores;

impl Harness for Stores {
    type Op = StoreOp;
    type Model = StoreModel;
    type Recovered = StoreView;
    fn run(storage: &Arc<SimStorage>, ops: &[StoreOp]) -> StoreModel {
        run(storage, ops)
    }
    fn recover(storage: &Arc<SimStorage>) -> Result<StoreView, String> {
        recover(storage)
    }
    fn check(model: &StoreModel, got: &StoreView) -> Result<(), String> {
        check(model, got)
    }
}

struct Running<'a> {
    storage: Arc<SimStorage>,
    owner: Option<Owner>,
    stores: Option<ExecutionStores>,
    /// Per run: lifecycle events the workload appended, and whether it is still `created`.
    events_made: BTreeMap<(String, String), usize>,
    started: BTreeMap<(String, String), bool>,
    model: &'a mut StoreModel,
}

impl Running<'_> {
    fn stores(&mut self) -> Result<&ExecutionStores, Error> {
        if self.owner.is_none() {
            create_or_open_root(&*self.storage)?;
            self.owner = Some(
                Owner::try_acquire(self.storage.clone())?
                    .ok_or(Error::InvalidInput("lease busy".into()))?,
            );
        }
        if self.stores.is_none() {
            let owner = self
                .owner
                .as_ref()
                .ok_or(Error::InvalidInput("no owner".into()))?;
            self.stores = Some(open_execution_stores_with(owner, config())?);
        }
        self.stores
            .as_ref()
            .ok_or(Error::InvalidInput("no stores".into()))
    }

    /// Runs `f` on the stores, opening them if needed; an error counts, and its write may or
    /// may not have survived.
    fn call<T>(&mut self, f: impl FnOnce(&ExecutionStores) -> Result<T, Error>) -> Option<T> {
        match self.stores().and_then(f) {
            Ok(t) => Some(t),
            Err(_) => {
                self.model.errors += 1;
                None
            }
        }
    }

    fn op(&mut self, op: StoreOp) {
        match op {
            StoreOp::Create(n) => {
                let h = session_header(&parent(n), 1);
                let ok = self.call(|s| s.sessions.create(h.clone())).is_some();
                push(&mut self.model.headers, parent(n), canonical(&h), ok);
            }
            StoreOp::Touch(n, at) => {
                let mut h = session_header(&parent(n), 1);
                h["lastUsedAt"] = json!(at);
                let ok = self
                    .call(|s| s.sessions.update_session(h.clone()))
                    .is_some();
                push(&mut self.model.headers, parent(n), canonical(&h), ok);
            }
            StoreOp::Spawn { parent, key, child } => {
                let h = child_header(parent, key, child);
                let answer = self.call(|s| s.sessions.create_subagent(h.clone()));
                let answer = answer.map(|a| SpawnAnswer {
                    child: a.header.id().to_owned(),
                    created: a.created,
                });
                if answer.as_ref().is_some_and(|a| a.created) {
                    push(
                        &mut self.model.headers,
                        format!("c{child}"),
                        canonical(&h),
                        true,
                    );
                } else if answer.is_none() {
                    push(
                        &mut self.model.headers,
                        format!("c{child}"),
                        canonical(&h),
                        false,
                    );
                }
                self.model
                    .spawns
                    .entry(format!("{}/tool-{key}", self::parent(parent)))
                    .or_default()
                    .push((format!("c{child}"), answer));
            }
            StoreOp::Message(n, i) => {
                let m = message(i);
                let ok = self
                    .call(|s| s.sessions.append_message(&parent(n), m.clone()))
                    .is_some();
                push(&mut self.model.messages, parent(n), canonical(&m), ok);
            }
            StoreOp::Run(n, i) => {
                let key = (parent(n), format!("r{i}"));
                if self.model.statuses.contains_key(&key) {
                    return;
                }
                let ok = self.call(|s| s.runs.create_run(run_header(n, i))).is_some();
                self.started.insert(key.clone(), false);
                push(&mut self.model.statuses, key, "created".into(), ok);
            }
            StoreOp::RunEvent(n, i) => {
                let key = (parent(n), format!("r{i}"));
                if !self.model.statuses.contains_key(&key) {
                    return;
                }
                let k = self.events_made.entry(key.clone()).or_default();
                let e = run_event(n, i, *k);
                *k += 1;
                let ok = self.call(|s| s.runs.append_event(e.clone())).is_some();
                push(&mut self.model.run_events, key, canonical(&e), ok);
            }
            StoreOp::Start(n, i) => {
                let key = (parent(n), format!("r{i}"));
                if self.started.get(&key) != Some(&false) || self.model.terminals.contains_key(&key)
                {
                    return;
                }
                self.started.insert(key.clone(), true);
                let update = json!({"status": "running", "updatedAt": 40 + i});
                let ok = self
                    .call(|s| s.runs.update_run(&key.0, &key.1, &update))
                    .is_some();
                push(&mut self.model.statuses, key, "running".into(), ok);
            }
            StoreOp::Terminal(n, i) => {
                let key = (parent(n), format!("r{i}"));
                if !self.model.statuses.contains_key(&key) {
                    return;
                }
                let end = terminal(
                    &key.0,
                    &key.1,
                    &format!("t{}", i % TURNS),
                    &format!("end-r{i}"),
                    50.0,
                    "completed",
                );
                let ok = self
                    .call(|s| s.runs.commit_terminal(&key.0, &key.1, &end, None))
                    .is_some();
                push(
                    &mut self.model.statuses,
                    key.clone(),
                    "completed".into(),
                    ok,
                );
                let acked = self.model.terminals.entry(key).or_default();
                *acked |= ok;
            }
            StoreOp::Admit(n, i) => {
                let a = admission(n, i);
                let ok = self.call(|s| s.runs.admit_root_turn(a.clone())).is_some();
                decided(&mut self.model.admissions, (n, i), &a, ok);
            }
            StoreOp::Reject(n, i) => {
                let r = rejection(n, i);
                let ok = self
                    .call(|s| s.runs.commit_root_turn_start_rejection(r.clone()))
                    .is_some();
                decided(&mut self.model.rejections, (n, i), &r, ok);
            }
            StoreOp::List => {
                let Some(listed) = self.call(|s| s.sessions.list_sessions()) else {
                    return;
                };
                let listed: BTreeMap<String, String> = listed
                    .iter()
                    .map(|h| (h.id().to_owned(), canonical(h.value())))
                    .collect();
                for id in listed
                    .keys()
                    .filter(|id| !self.model.headers.contains_key(*id))
                {
                    self.model
                        .listing_errors
                        .push(format!("listed {id}, never submitted"));
                }
                for (id, versions) in &self.model.headers {
                    let got = listed.get(id).map(String::as_str);
                    if let Err(e) = check::latest(&format!("listed session {id}"), got, versions) {
                        self.model.listing_errors.push(e);
                    }
                }
            }
            StoreOp::Reopen => {
                if let Some(stores) = self.stores.take() {
                    if stores.close().is_err() {
                        self.model.errors += 1;
                    }
                }
            }
        }
    }
}

/// Records a decision of turn `t{i}` of `p{n}` (an admission or a rejection): its first
/// submission's record, acknowledged once any call for it was.
fn decided(
    map: &mut BTreeMap<(String, String), (String, bool)>,
    (n, i): (u8, u32),
    v: &Value,
    ok: bool,
) {
    let entry = map
        .entry((parent(n), format!("t{i}")))
        .or_insert((canonical(v), false));
    entry.1 |= ok;
}

fn push<K: Ord>(map: &mut BTreeMap<K, Vec<(String, bool)>>, key: K, what: String, ok: bool) {
    map.entry(key).or_default().push((what, ok));
}

/// A JSON value as the stores write it: canonical (sorted keys, no spaces).
pub fn canonical(v: &Value) -> String {
    makalog::event::canonical_string(v)
}

/// Runs `ops` on `storage` and returns what was submitted and acknowledged; the stores are
/// closed at the end (a close that fails acknowledges nothing more).
pub fn run(storage: &Arc<SimStorage>, ops: &[StoreOp]) -> StoreModel {
    let mut model = StoreModel::default();
    let mut running = Running {
        storage: storage.clone(),
        owner: None,
        stores: None,
        events_made: BTreeMap::new(),
        started: BTreeMap::new(),
        model: &mut model,
    };
    for op in ops {
        running.op(*op);
    }
    running.op(StoreOp::Reopen);
    drop(running);
    model
}
