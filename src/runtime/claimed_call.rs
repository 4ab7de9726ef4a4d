//! A call of [`run_claimed_agent_graph_intent`] and what it answers (MAKA-MODEL §12
//! `runClaimedAgentGraphIntent`'s parameters and result).
//!
//! [`run_claimed_agent_graph_intent`]: super::SessionManager::run_claimed_agent_graph_intent

use super::abort::AbortSignal;
use super::events::SessionEvent;
use super::intent::AgentGraphRunnableIntent;
use crate::claims::AgentGraphIntentClaim;
use crate::error::Result;
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;

/// One call of [`run_claimed_agent_graph_intent`].
///
/// [`run_claimed_agent_graph_intent`]: super::SessionManager::run_claimed_agent_graph_intent
pub struct ClaimedIntentRun {
    pub intent: AgentGraphRunnableIntent,
    pub graph_id: String,
    pub intent_id: String,
    pub prompt: String,
    /// Aborting it stops the run, with abort source `stop_button`.
    pub abort: Option<AbortSignal>,
    /// Called once the run has started (its opening writes are durable).
    pub on_ready: Option<Box<dyn FnOnce() + Send>>,
    /// §12's `admitExecution`: asked, with the claim, once the call would start the run (the
    /// claim matches, its turn is unused, the child is live) and before anything is written;
    /// its error is the call's, the claim's status stays as it was and a later call may run
    /// it. A call answered from the ledger starts nothing and does not ask. Its answer is a
    /// future: a gate that waits on the host's disk or network awaits it, holding no worker.
    /// It must not wait for another call of the same claim, which joins this one and waits.
    pub admit_execution: Option<AdmitExecution>,
    /// §12's `onEvent`: each event of the run this call starts, in order, once durable as the
    /// caller's stream hands it on. A call answered from the ledger streams nothing.
    pub on_event: Option<OnEvent>,
}

/// The host's gate before a claimed run starts (see [`ClaimedIntentRun::admit_execution`]).
pub type AdmitExecution = Box<dyn FnOnce(AgentGraphIntentClaim) -> Admitted + Send>;

/// What [`AdmitExecution`] answers: the run may start, or the host's error.
pub type Admitted = Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// The host's watch of a claimed run's events (see [`ClaimedIntentRun::on_event`]).
pub type OnEvent = Box<dyn FnMut(&SessionEvent) + Send>;

impl ClaimedIntentRun {
    /// A call running intent `intent_id` of graph `graph_id` with `prompt`: no abort signal,
    /// no callbacks.
    pub fn new(
        intent: AgentGraphRunnableIntent,
        graph_id: impl Into<String>,
        intent_id: impl Into<String>,
        prompt: impl Into<String>,
    ) -> ClaimedIntentRun {
        ClaimedIntentRun {
            intent,
            graph_id: graph_id.into(),
            intent_id: intent_id.into(),
            prompt: prompt.into(),
            abort: None,
            on_ready: None,
            admit_execution: None,
            on_event: None,
        }
    }
}

/// What a claimed run came to; a retry gets the same answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedRunResult {
    pub claim_id: String,
    pub graph_id: String,
    pub intent_id: String,
    pub operator_id: String,
    pub child_session_id: String,
    pub agent_id: String,
    pub agent_name: String,
    pub profile: String,
    pub turn_id: String,
    pub run_id: String,
    pub status: String,
    pub permission_mode: String,
    pub summary: String,
    pub artifact_ids: Vec<String>,
    pub started_at: f64,
    pub completed_at: Option<f64>,
    pub duration_ms: Option<f64>,
    pub event_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<String>,
}
