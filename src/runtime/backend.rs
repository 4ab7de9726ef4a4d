//! The backend seam (MAKA-MODEL §11): a backend streams a turn's `SessionEvent`s, can be
//! stopped, answers a pending user question, decides a pending sandbox request, and is
//! disposed of; a registry makes one per session by backend kind.

use super::events::SessionEvent;
use super::sources::Sources;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What a backend is asked to answer: one turn's user input.
#[derive(Debug, Clone, PartialEq)]
pub struct SendInput {
    pub session_id: String,
    pub turn_id: String,
    pub text: String,
    /// The attached files, by reference: the backend reads their bytes where they live.
    pub attachments: Vec<super::AttachmentRef>,
}

/// One session's backend.
pub trait Backend: Send + Sync {
    /// The backend kind (`fake`, `ai-sdk`).
    fn kind(&self) -> &str;
    /// Starts a turn: its events arrive on the returned channel, which closes after the last.
    /// Called from within a tokio runtime. `send` and `stop` are called under a lock of the
    /// runtime's, so a stop and a turn's start are ordered: neither may call the runtime.
    fn send(&self, input: SendInput) -> mpsc::Receiver<SessionEvent>;
    /// Stops the turn in flight: its stream ends with `abort{user_stop}` and
    /// `complete{user_stop}`, and a pending question resolves unanswered.
    fn stop(&self);
    /// Answers the pending question `request_id` (an answer per question, `None` for one left
    /// unanswered); false when no such question waits.
    fn respond_to_user_question(&self, request_id: &str, answers: Vec<Option<String>>) -> bool {
        let _ = (request_id, answers);
        false
    }
    /// Decides the pending sandbox request `request_id` (§11's respondToSandboxBoundary;
    /// `decision` is `allow` or `deny`): the backend then streams its
    /// `sandbox_boundary_decision_ack`. False when no such request waits.
    fn respond_to_sandbox_boundary(&self, request_id: &str, decision: &str) -> bool {
        let _ = (request_id, decision);
        false
    }
    /// Releases what the backend holds; it is not used again.
    fn dispose(&self) {}
}

/// What a backend is made for: its session, and the runtime's id and clock sources.
#[derive(Clone)]
pub struct BackendContext {
    pub session_id: String,
    pub sources: Sources,
}

/// Makes a backend for a session.
pub type BackendFactory = Arc<dyn Fn(&BackendContext) -> Arc<dyn Backend> + Send + Sync>;

/// The backends a runtime can make, by kind.
#[derive(Clone, Default)]
pub struct BackendRegistry {
    factories: HashMap<String, BackendFactory>,
}

impl BackendRegistry {
    /// A registry holding only the fake backend, with its delays of §11.
    pub fn with_fake() -> BackendRegistry {
        let mut registry = BackendRegistry::default();
        registry.register("fake", |ctx| {
            Arc::new(super::fake::FakeBackend::new(ctx.sources.clone()))
        });
        registry
    }

    /// A registry holding only the fake backend, without its delays (demos and benchmarks).
    pub fn with_instant_fake() -> BackendRegistry {
        let mut registry = BackendRegistry::default();
        registry.register("fake", |ctx| {
            Arc::new(super::fake::FakeBackend::new(ctx.sources.clone()).with_delays(false))
        });
        registry
    }

    /// Registers (or replaces) the factory of backend `kind`. A factory is called on a runtime
    /// worker, when a session's first turn needs its backend: it must not wait for a task of
    /// the runtime.
    pub fn register(
        &mut self,
        kind: &str,
        factory: impl Fn(&BackendContext) -> Arc<dyn Backend> + Send + Sync + 'static,
    ) {
        self.factories.insert(kind.to_owned(), Arc::new(factory));
    }

    /// A new backend of `kind` for the context's session; an error when none is registered or
    /// its factory panics.
    pub fn create(&self, kind: &str, ctx: &BackendContext) -> Result<Arc<dyn Backend>> {
        let factory = self.factories.get(kind).ok_or_else(|| {
            Error::InvalidInput(format!("no backend of kind {kind:?} is registered"))
        })?;
        // A factory is the host's code: its panic is this call's error, not the runtime's.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| factory(ctx))).map_err(|_| {
            Error::InvalidInput(format!("the factory of backend kind {kind:?} panicked"))
        })
    }
}
