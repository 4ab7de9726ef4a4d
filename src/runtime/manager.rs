//! `SessionManager` (MAKA-MODEL §12): creates sessions and runs their turns through their
//! backends, writing each turn in the order of §12. One turn runs at a time in a session (a
//! second waits); a running turn can be stopped.

use super::backend::{Backend, BackendContext, BackendRegistry, SendInput};
use super::blocking::on_disk;
use super::live_turns::{LiveTurn, LiveTurns};
use super::sources::Sources;
use super::stops::TurnStop;
use super::turn_events::TurnEvents;
use crate::error::{Error, Result};
use crate::model::SessionHeader;
use crate::store::ExecutionStores;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

/// One turn's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnInput {
    /// The turn's id (a new one when absent).
    pub turn_id: Option<String>,
    pub text: String,
    /// The files attached (§1.2 AttachmentRef): stated by the user message and event, counted
    /// by `run_created`, and handed to the backend.
    pub attachments: Vec<super::AttachmentRef>,
    /// The run's id (a new one when absent; an admission's stored id wins).
    pub run_id: Option<String>,
    /// The user message's id (a new one when absent; an admission's stored id wins).
    pub user_message_id: Option<String>,
    /// The agent a child session's turn runs as.
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    /// A hosted turn's execution descriptor (§8): the turn is admitted with it first.
    pub execution: Option<Value>,
    /// Where a turn no person typed comes from (§1.2's TurnOrigin: `scheduled_task`, `goal`,
    /// `agent_graph`, `legacy_automation`): its user event's author is then `host`.
    pub origin: Option<Value>,
    /// The turn, run or session the turn continues, retries, regenerates or branches from.
    pub lineage: super::TurnLineage,
}

/// How a turn ended, once its terminal commit, `turn_state` and header are durable; or, for a
/// turn parked waiting for the user, once its facts are.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub session_id: String,
    pub turn_id: String,
    pub run_id: String,
    pub user_message_id: String,
    /// The run's status: `completed`, `failed` or `cancelled`; `waiting_for_user` for a turn
    /// parked there (its stream closed while the user was asked), whose run the next start's
    /// recovery ends (or, for a claimed graph intent's child, a retry of the claim, which ends
    /// a run it finds open and not live, §12 step 4).
    pub status: String,
    pub failure_class: Option<String>,
    /// The last complete assistant text.
    pub summary: String,
    /// Events the backend streamed.
    pub event_count: usize,
    pub started_at: f64,
    pub completed_at: f64,
    /// Facts that could not be written (appended fail-open, §12).
    pub fact_failures: usize,
}

/// A turn in flight: its events as they stream, and its outcome.
pub struct Turn {
    pub session_id: String,
    pub events: TurnEvents,
    done: JoinHandle<Result<TurnOutcome>>,
}

impl Turn {
    /// Stops writing the turn where it is, as a crash would: what it wrote stays, nothing more
    /// is written, and its run is left for recovery. (A simulated restart uses it.) Returns
    /// once the turn's task is gone.
    pub async fn abandon(self) {
        self.done.abort();
        let _ = self.done.await;
    }

    /// Drains the remaining events and returns the outcome.
    pub async fn finish(mut self) -> Result<TurnOutcome> {
        while self.events.recv().await.is_some() {}
        self.done
            .await
            .map_err(|e| Error::InvalidInput(format!("the turn's task failed: {e}")))?
    }
}

/// A claimed run in flight: its call's fingerprint, and the lock a joining call waits on,
/// guarding the outcome of the call that ran (a result, or its failure told), which every call
/// joined to it answers.
pub(crate) type ClaimCall = (String, Arc<tokio::sync::Mutex<Option<Joined>>>);

/// What a call for a claim came to, for the calls joined to it.
pub(crate) type Joined = std::result::Result<super::ClaimedRunResult, String>;

/// What the runtime shares between its calls and their tasks.
pub(crate) struct Inner {
    pub stores: Arc<ExecutionStores>,
    pub sources: Sources,
    registry: BackendRegistry,
    pub(super) backends: Mutex<HashMap<String, Arc<dyn Backend>>>,
    /// Per session: the lock a turn holds while it runs.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Per session: the stop of the turn in flight.
    pub(super) stops: Mutex<HashMap<String, TurnStop>>,
    /// Set by `dispose`, under the lock of stops: no turn starts after it.
    pub(super) disposed: std::sync::atomic::AtomicBool,
    /// Per claim in flight: its call's fingerprint and the lock a joining call waits on.
    pub claimed: Mutex<HashMap<String, ClaimCall>>,
    /// Per child session: the lock a claimed call holds from its checks to its end, so calls
    /// for one session run one after the other, whole.
    pub(super) claim_calls: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The runs started and not yet ended, as the open-runs file holds them.
    pub open_runs: Mutex<super::open_runs::OpenRuns>,
    /// The turn tasks running, for a shutdown to wait for.
    pub(super) live: Arc<LiveTurns>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stores.detach_runtime();
    }
}

/// Creates sessions and runs their turns.
#[derive(Clone)]
pub struct SessionManager {
    pub(crate) inner: Arc<Inner>,
}

impl SessionManager {
    /// A manager over `stores`, making backends from `registry`, with ids and time from
    /// `sources`. One runs over a store at a time: a second is refused
    /// ([`Error::AlreadyOpen`]) until the first, its clones and its turns are gone. A turn
    /// holds the runtime until it ends, so a host that drops its last manager with a turn
    /// waiting (on a question, say) stops it first ([`SessionManager::dispose`]), and a backend
    /// keeps no manager of its own (that cycle would hold the runtime for good).
    pub fn new(
        stores: Arc<ExecutionStores>,
        registry: BackendRegistry,
        sources: Sources,
    ) -> Result<Self> {
        stores.attach_runtime()?;
        Ok(SessionManager {
            inner: Arc::new(Inner {
                stores,
                sources,
                registry,
                backends: Mutex::default(),
                turns: Mutex::default(),
                stops: Mutex::default(),
                disposed: Default::default(),
                claimed: Mutex::default(),
                claim_calls: Mutex::default(),
                open_runs: Mutex::default(),
                live: Arc::default(),
            }),
        })
    }

    /// The stores the manager writes.
    pub fn stores(&self) -> &Arc<ExecutionStores> {
        &self.inner.stores
    }

    /// Creates a session from `input`, a partial header (§5): what it leaves out is filled in
    /// (a new id, `cwd` as the workspace root, now as the times, backend `ai-sdk`, permission
    /// mode `ask`, an active status, no labels, every flag false).
    pub fn create_session(&self, input: Value) -> Result<SessionHeader> {
        let Value::Object(given) = input else {
            return Err(Error::InvalidInput(
                "a session's input is a JSON object".into(),
            ));
        };
        let s = &self.inner.sources;
        let now = s.now();
        let cwd = given.get("cwd").cloned().unwrap_or(json!("/"));
        let mut header = json!({
            "schemaVersion": 1, "id": s.new_id(), "workspaceRoot": cwd, "cwd": cwd,
            "name": "New session", "llmConnectionSlug": "default", "model": "default",
            "createdAt": now, "lastUsedAt": now, "titleIsManual": false, "isFlagged": false,
            "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
            "status": "active", "backend": "ai-sdk", "permissionMode": "ask",
        });
        for (key, value) in given {
            header[key] = value;
        }
        self.inner.stores.sessions.create(header)
    }

    /// Sends a message: opens the turn (§12 steps 0–6, durable before this returns), then
    /// streams it in a task that writes the rest. A second turn of the same session waits for
    /// the first.
    pub async fn send_message(&self, session_id: &str, mut input: TurnInput) -> Result<Turn> {
        let guard = self.turn_lock(session_id)?.lock_owned().await;
        // A stop recorded by now was an earlier turn's (or came as this one took the session,
        // a window of a few instructions, and is dropped with it).
        let turn_id = input
            .turn_id
            .get_or_insert_with(|| self.inner.sources.new_id());
        let (stop_asked, live) = self.inner.turn_started(session_id, turn_id)?;
        let turn_id = turn_id.clone();
        // A call that fails before its turn streams forgets the turn's stop.
        let opening = self
            .open_turn(session_id, input, guard, (stop_asked, live))
            .await;
        if opening.is_err() {
            self.inner.turn_over(session_id, &turn_id);
        }
        opening
    }

    /// [`SessionManager::send_message`] once its turn is recorded in flight.
    async fn open_turn(
        &self,
        session_id: &str,
        input: TurnInput,
        guard: tokio::sync::OwnedMutexGuard<()>,
        (stop_asked, live): (Arc<Notify>, LiveTurn),
    ) -> Result<Turn> {
        let inner = self.inner.clone();
        // The backend first: a session whose backend cannot be made gets no run. It is made
        // outside the disk waits (its factory is the host's, and a wait in place must never
        // wait for a task), so a session's first turn reads its header once more.
        let read_header = || -> Result<SessionHeader> {
            inner
                .stores
                .sessions
                .read_session(session_id)?
                .ok_or_else(|| Error::NotFound {
                    what: format!("session {session_id} to send a message to"),
                })
        };
        let made = lock(&inner.backends)?.get(session_id).cloned();
        let backend = match made {
            Some(backend) => backend,
            None => self.backend(session_id, &on_disk(read_header)?)?,
        };
        // One disk wait for the header read and the opening's sync.
        let begun = on_disk(|| super::begin::begin(&inner, session_id, read_header()?, &input))?;
        // A stop asked while the opening was written is this turn's (it holds the session):
        // the backend gets it once it has started the turn. A backend that panics is one
        // whose stream ends at once, without a terminal event: the turn fails
        // (`missing_terminal_event`) and the runtime's locks stay sound.
        let send = SendInput {
            session_id: session_id.to_owned(),
            turn_id: begun.ids.turn_id.clone(),
            text: input.text.clone(),
            attachments: input.attachments.clone(),
        };
        let from_backend = inner.send_to(session_id, &*backend, || {
            catch_unwind(AssertUnwindSafe(|| backend.send(send)))
                .unwrap_or_else(|_| mpsc::channel(1).1)
        })?;
        let (to_caller, events) = mpsc::channel(super::turn_events::BURSTS);
        let session = session_id.to_owned();
        let begun_turn = begun.ids.turn_id.clone();
        let done = tokio::spawn(async move {
            // Dropped in the reverse order: the runtime (and its stores) before the count.
            let _live = live;
            let inner = inner;
            let _turn = guard;
            let source = |inner: &Inner| inner.stop_source(&session);
            let stream = super::stream::Stream {
                from_backend,
                to_caller,
                stop_asked: &stop_asked,
                abort_source: &|| source(&inner),
            };
            let outcome = super::stream::run(&inner, begun, stream).await;
            inner.turn_over(&session, &begun_turn);
            outcome
        });
        Ok(Turn {
            session_id: session_id.to_owned(),
            events: TurnEvents::new(events),
            done,
        })
    }

    /// Answers a question the session's backend asked.
    pub fn respond_to_user_question(
        &self,
        session_id: &str,
        request_id: &str,
        answers: Vec<Option<String>>,
    ) -> Result<bool> {
        let backend = lock(&self.inner.backends)?.get(session_id).cloned();
        Ok(backend.is_some_and(|b| b.respond_to_user_question(request_id, answers)))
    }

    /// Decides a sandbox request the session's backend made (`allow` or `deny`); false when
    /// no such request waits. Another decision is refused, and nothing is asked.
    pub fn respond_to_sandbox_boundary(
        &self,
        session_id: &str,
        request_id: &str,
        decision: &str,
    ) -> Result<bool> {
        if !matches!(decision, "allow" | "deny") {
            return Err(Error::InvalidInput(format!(
                "decision: {decision:?} is neither allow nor deny"
            )));
        }
        let backend = lock(&self.inner.backends)?.get(session_id).cloned();
        Ok(backend.is_some_and(|b| b.respond_to_sandbox_boundary(request_id, decision)))
    }

    /// The lock a turn of `session_id` holds while it runs, also when the call that started it
    /// was dropped: whoever holds it knows no turn of the session is live.
    pub(crate) fn turn_lock(&self, session_id: &str) -> Result<Arc<tokio::sync::Mutex<()>>> {
        let mut turns = lock(&self.inner.turns)?;
        Ok(turns.entry(session_id.to_owned()).or_default().clone())
    }

    /// Drops the session's turn lock from the map when nobody holds or waits on it: a caller
    /// that only looked (recovery visiting every session) leaves no entry behind.
    pub(crate) fn forget_turn_lock(&self, session_id: &str) -> Result<()> {
        let mut turns = lock(&self.inner.turns)?;
        if turns
            .get(session_id)
            .is_some_and(|l| Arc::strong_count(l) == 1)
        {
            turns.remove(session_id);
        }
        Ok(())
    }

    /// The session's backend, made on first use from its header's `backend` kind.
    fn backend(&self, session_id: &str, header: &SessionHeader) -> Result<Arc<dyn Backend>> {
        let mut backends = lock(&self.inner.backends)?;
        // Under the lock `dispose` takes the backends under, after its mark: a backend made
        // before is disposed of with the others, none is made after.
        if self.inner.is_disposed() {
            return Err(super::stops::disposed(session_id));
        }
        if let Some(b) = backends.get(session_id) {
            return Ok(b.clone());
        }
        let kind = header.value()["backend"].as_str().unwrap_or_default();
        let ctx = BackendContext {
            session_id: session_id.to_owned(),
            sources: self.inner.sources.clone(),
        };
        let backend = self.inner.registry.create(kind, &ctx)?;
        backends.insert(session_id.to_owned(), backend.clone());
        Ok(backend)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| Error::InvalidInput("a runtime lock was poisoned by a panic".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn lock only looked at is dropped from the map; one held, or waited on, stays.
    #[test]
    fn a_turn_lock_nobody_holds_is_forgotten() {
        let t = tempfile::tempdir().expect("tmp");
        let owner = crate::root::try_acquire_owner(t.path())
            .expect("root")
            .expect("lease");
        let stores =
            Arc::new(crate::store::open_execution_stores_for_write(&owner).expect("stores"));
        let m = SessionManager::new(stores, BackendRegistry::with_fake(), Sources::system())
            .expect("manager");
        let held = m.turn_lock("held").expect("lock");
        drop(m.turn_lock("looked").expect("lock"));
        m.forget_turn_lock("held").expect("forget");
        m.forget_turn_lock("looked").expect("forget");
        let names: Vec<String> = lock(&m.inner.turns).expect("map").keys().cloned().collect();
        assert_eq!(names, ["held"]);
        drop(held);
        m.forget_turn_lock("held").expect("forget");
        assert!(lock(&m.inner.turns).expect("map").is_empty());
    }
}
