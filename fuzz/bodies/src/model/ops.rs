//! The operations of the model target and the machine that runs them (its faults, crashes
//! and reopens in `restart.rs`).

use super::records::{claim_request, config, message, run, run_with_id, session_header, OPERATORS};
use super::state::State;
use arbitrary::Arbitrary;
use makalog::index::SIDECAR_FILE;
use makalog::root::{create_or_open_root, Owner};
use makalog::storage::{SimRng, SimStorage, Tear};
use makalog::store::{open_execution_stores_with, ExecutionStores};
use makalog::Error;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// One operation. Sessions, messages and runs get fresh ids; `session` picks one of the
/// sessions the model holds (none: a session that does not exist).
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    CreateSession,
    Message {
        session: u8,
        len: u8,
    },
    CreateRun {
        session: u8,
    },
    /// A run created again: refused.
    DuplicateRun {
        session: u8,
    },
    /// Graph claim `n % 4`, naming one of two operators: the same again is a retry, the
    /// other a conflict.
    Claim {
        n: u8,
        other_operator: bool,
    },
    /// Closes everything cleanly, verifies the root and opens it again.
    Reopen,
    /// The machine loses power: unsynced bytes survive as the tear says.
    Crash {
        tear: u8,
        seed: u64,
    },
    /// Arms a fault `after` operations on: EIO, a short write, no space, a lost sync, or the
    /// process dying at a persistence point.
    Fault {
        after: u8,
        kind: u8,
    },
}

/// What the model expects of a write: the state after it, or a refusal with nothing written.
#[derive(Debug)]
enum Expect {
    Lands(State),
    Refused,
}

pub struct Machine {
    pub(super) storage: Arc<SimStorage>,
    pub(super) live: Option<(Owner, ExecutionStores)>,
    pub(super) model: State,
    pub(super) next: u32,
    /// A fault or a death is armed: a write may fail, and then may or may not have landed.
    pub(super) armed: Option<Tear>,
    /// Sessions written since the last crash: opened for writing, so recovered.
    pub(super) touched: BTreeSet<String>,
    pub(super) rng: SimRng,
}

impl Machine {
    pub fn start() -> Machine {
        let storage = Arc::new(SimStorage::new());
        create_or_open_root(&*storage).expect("a new root");
        let mut m = Machine {
            storage,
            live: None,
            model: State::default(),
            next: 0,
            armed: None,
            touched: BTreeSet::new(),
            rng: SimRng::new(0),
        };
        m.open();
        m
    }

    pub(super) fn open(&mut self) {
        let owner = Owner::try_acquire(self.storage.clone())
            .expect("acquire")
            .expect("the lease is free");
        let stores = open_execution_stores_with(&owner, config()).expect("open the stores");
        self.live = Some((owner, stores));
    }

    fn stores(&self) -> &ExecutionStores {
        &self.live.as_ref().expect("open").1
    }

    pub fn step(&mut self, op: &Op) {
        if std::env::var_os("MODEL_TRACE").is_some() {
            eprintln!("op: {op:?}");
        }
        match op {
            Op::Reopen => return self.reopen(),
            Op::Crash { tear, seed } => {
                self.rng = SimRng::new(*seed);
                return self.crash(Tear::ALL[usize::from(*tear) % Tear::ALL.len()], &[]);
            }
            Op::Fault { after, kind } => return self.arm(*after, *kind),
            _ => {}
        }
        let expect = self.expect(op);
        if let (Expect::Refused, Some(s)) = (&expect, self.refused_in(op)) {
            // Opening a session for writing recovers it, which may write: what a refusal must
            // not write is counted from after that.
            if let Err(e) = self.stores().runtime_events.open_session_now(&s) {
                let tear = self
                    .armed
                    .take()
                    .unwrap_or_else(|| panic!("opening {s}: {e}"));
                return self.crash(tear, &[]);
            }
        }
        let before = matches!(expect, Expect::Refused).then(|| records(&self.storage));
        let result = self.apply(op);
        match (&result, &expect) {
            (Ok(()), Expect::Lands(next)) => {
                self.touched.extend(written(&self.model, next));
                self.model = next.clone();
            }
            (Err(_), Expect::Refused) => {
                if self.armed.is_none() {
                    let after = Some(records(&self.storage));
                    assert!(
                        after == before,
                        "{op:?} refused, yet wrote: {}",
                        changed(&before, &after)
                    );
                }
            }
            (Err(_), Expect::Lands(next)) if self.armed.is_some() => {
                let (tear, next) = (self.armed.take().unwrap_or(Tear::None), next.clone());
                return self.crash(tear, &[next]);
            }
            _ => panic!("{op:?}: {result:?}, the model expected {expect:?}"),
        }
        self.check();
    }

    /// Compares the stores' answers with the model; under an armed fault a read may fail too,
    /// which ends in a crash like a failed write.
    pub(super) fn check(&mut self) {
        match (self.observe(), self.armed) {
            (Ok(seen), _) => assert_eq!(seen, self.model, "the stores against the model"),
            (Err(_), Some(tear)) => {
                self.armed = None;
                self.crash(tear, &[]);
            }
            (Err(e), None) => panic!("reading the stores failed: {e}"),
        }
    }

    pub(super) fn observe(&self) -> Result<State, Error> {
        State::of_stores(self.stores())
    }

    fn expect(&self, op: &Op) -> Expect {
        let mut next = self.model.clone();
        let id = format!("{}", self.next);
        let target = |s: u8| self.session(s);
        match op {
            Op::CreateSession => next.sessions.push(format!("s{id}")),
            Op::Message { session, .. } => match target(*session) {
                Some(s) => next.messages.entry(s).or_default().push(format!("m{id}")),
                None => return Expect::Refused,
            },
            Op::CreateRun { session } => match target(*session) {
                Some(s) => {
                    let runs = next.runs.entry(s).or_default();
                    runs.push(format!("r{id}"));
                    runs.sort();
                }
                None => return Expect::Refused,
            },
            Op::DuplicateRun { .. } => return Expect::Refused,
            Op::Claim { n, other_operator } => {
                let operator = OPERATORS[usize::from(*other_operator)];
                match next.claims.get(&(n % 4)) {
                    Some(held) if held != operator => return Expect::Refused,
                    Some(_) => {}
                    None => {
                        next.claims.insert(n % 4, operator.to_owned());
                    }
                }
            }
            Op::Reopen | Op::Crash { .. } | Op::Fault { .. } => unreachable!("not a write"),
        }
        Expect::Lands(next)
    }

    /// The existing session a refused operation is refused in, if any.
    fn refused_in(&self, op: &Op) -> Option<String> {
        match op {
            Op::DuplicateRun { session } => self
                .session(*session)
                .filter(|s| self.model.runs.contains_key(s)),
            _ => None,
        }
    }

    fn session(&self, pick: u8) -> Option<String> {
        let n = self.model.sessions.len();
        (n > 0).then(|| self.model.sessions[usize::from(pick) % n].clone())
    }

    fn apply(&mut self, op: &Op) -> Result<(), Error> {
        let id = self.next;
        self.next += 1;
        let target = |s: u8| self.session(s).unwrap_or_else(|| "nobody".into());
        let stores = self.stores();
        match op {
            Op::CreateSession => stores.sessions.create(session_header(id)).map(drop),
            Op::Message { session, len } => stores
                .sessions
                .append_message(&target(*session), message(id, *len))
                .map(drop),
            Op::CreateRun { session } => {
                stores.runs.create_run(run(&target(*session), id)).map(drop)
            }
            Op::DuplicateRun { session } => {
                let s = target(*session);
                let run_id = self.model.runs.get(&s).and_then(|r| r.first()).cloned();
                let header = match run_id {
                    Some(r) => run_with_id(&s, &r, id),
                    // No run to repeat: a run of a session that does not exist, refused too.
                    None => run("nobody", id),
                };
                stores.runs.create_run(header).map(drop)
            }
            Op::Claim { n, other_operator } => {
                let operator = OPERATORS[usize::from(*other_operator)];
                stores
                    .claims
                    .claim_agent_graph_intent_at(claim_request(n % 4, operator), u64::from(id))
                    .map(drop)
            }
            Op::Reopen | Op::Crash { .. } | Op::Fault { .. } => unreachable!("not a write"),
        }
    }

    /// The end of the input: a last clean reopen checks what it left.
    pub fn finish(mut self) {
        self.reopen();
    }
}

/// The sessions a write changed from `before` to `after`.
fn written(before: &State, after: &State) -> Vec<String> {
    after
        .sessions
        .iter()
        .filter(|s| {
            !before.sessions.contains(s)
                || before.messages.get(*s) != after.messages.get(*s)
                || before.runs.get(*s) != after.runs.get(*s)
        })
        .cloned()
        .collect()
}

/// The files that differ, with their sizes, for a failure's message.
fn changed(before: &Option<Files>, after: &Option<Files>) -> String {
    let (empty, mut out) = (Files::new(), Vec::new());
    let (b, a) = (
        before.as_ref().unwrap_or(&empty),
        after.as_ref().unwrap_or(&empty),
    );
    for path in b.keys().chain(a.keys()).collect::<BTreeSet<_>>() {
        let (x, y) = (b.get(path), a.get(path));
        if x != y {
            let len =
                |f: Option<&Vec<u8>>| f.map_or("none".to_owned(), |f| format!("{} bytes", f.len()));
            out.push(format!("{} {} -> {}", path.display(), len(x), len(y)));
        }
    }
    out.join(", ")
}

type Files = BTreeMap<PathBuf, Vec<u8>>;

/// The files that hold records: every file but the index sidecars, caches a store may write
/// whenever it opens a session.
fn records(storage: &SimStorage) -> Files {
    let mut files = storage.live_files();
    files.retain(|p, _| !p.ends_with(SIDECAR_FILE));
    files
}
