//! Running a claimed agent-graph intent exactly once (MAKA-MODEL §12,
//! `runClaimedAgentGraphIntent`): the claim is checked against the intent and the prompt;
//! a run that exists is answered from the ledger (recovered first if a restart interrupted
//! it) without calling the backend; otherwise the child's turn runs under the claim's ids,
//! admitted with a `claimed_agent_graph_intent` descriptor. Calls for one claim join (see
//! `claimed_join`); calls for one child session run one after the other, whole.

use super::abort::AbortSignal;
use super::blocking::on_disk;
use super::claimed_call::{ClaimedIntentRun, ClaimedRunResult};
use super::manager::{lock, SessionManager, TurnInput};
use super::recover::recover_run;
use crate::claims::{AdmissionStatus, AgentGraphIntentClaim};
use crate::error::{Error, Result};
use crate::model::RunHeader;
use serde_json::{json, Value};
use std::sync::Arc;

pub(super) fn conflict(what: String) -> Error {
    Error::ClaimConflict { what }
}

pub(super) fn aborted(claim: &AgentGraphIntentClaim, when: &str) -> Error {
    Error::Aborted {
        what: format!("the call for claim {} was aborted {when}", claim.claim_id),
    }
}

impl SessionManager {
    /// Runs a claim's call once calls for its child session before it are done (§12 step 2:
    /// calls for one session are serialized), waiting for them as long as the call's abort
    /// allows.
    pub(super) async fn run_claim(
        &self,
        claim: &AgentGraphIntentClaim,
        run: ClaimedIntentRun,
    ) -> Result<ClaimedRunResult> {
        let child = &claim.target_session_id;
        let serial = {
            let mut calls = lock(&self.inner.claim_calls)?;
            calls.entry(child.clone()).or_default().clone()
        };
        let turn = serial.clone().lock_owned();
        let result = match run.abort.clone() {
            Some(signal) => tokio::select! {
                biased;
                turn = turn => {
                    let _turn = turn;
                    self.run_claim_alone(claim, run).await
                }
                () = signal.wait() => Err(aborted(claim, "waiting for the child's other calls")),
            },
            None => {
                let _turn = turn.await;
                self.run_claim_alone(claim, run).await
            }
        };
        // The child's entry goes once no call holds or waits on it.
        let mut calls = lock(&self.inner.claim_calls)?;
        if Arc::strong_count(&serial) == 2 {
            calls.remove(child);
        }
        result
    }

    async fn run_claim_alone(
        &self,
        claim: &AgentGraphIntentClaim,
        run: ClaimedIntentRun,
    ) -> Result<ClaimedRunResult> {
        let stores = self.stores();
        let child = &claim.target_session_id;
        let header =
            on_disk(|| stores.sessions.read_session(child))?.ok_or_else(|| Error::NotFound {
                what: format!("child session {child} of claim {}", claim.claim_id),
            })?;
        let h = header.value();
        let runtime = &h["subagentRuntime"];
        if h["subagentParent"]["kind"] != json!("subagent") || !runtime.is_object() {
            return Err(conflict(format!("session {child} is not a linked child")));
        }
        let agent = |k: &str| runtime[k].as_str().unwrap_or_default().to_owned();
        let (agent_id, agent_name) = (agent("agentId"), agent("agentName"));
        match on_disk(|| stores.runs.read_run(child, &claim.target_run_id)) {
            Ok(existing) => {
                let names = (agent_id.as_str(), agent_name.as_str());
                self.answer_existing(claim, &run.prompt, existing, names, run.abort.as_ref())
                    .await?
            }
            Err(Error::NotFound { .. }) => {
                self.start_claim(claim, run, &agent_id, &agent_name, h)
                    .await?
            }
            Err(e) => return Err(e),
        }
        let result = on_disk(|| self.stored_result(claim, runtime))?;
        if result.status == "cancelled" {
            // Checked on every answer, not only the first: a crash or a failed write between
            // the run's terminal commit and this leaves the claim `executing`, and the retry
            // an orchestrator makes then moves it on.
            on_disk(|| {
                let now = stores
                    .claims
                    .read_agent_graph_intent_claim(&claim.graph_id, &claim.intent_id)?;
                if now.is_some_and(|c| c.status != AdmissionStatus::Cancelled) {
                    stores.claims.set_agent_graph_intent_status(
                        &claim.graph_id,
                        &claim.intent_id,
                        AdmissionStatus::Cancelled,
                        Some("run cancelled"),
                    )?;
                }
                Ok(())
            })?;
        }
        Ok(result)
    }

    /// Step 4 of §12: the run exists. It must match the claim; while it is live (a turn of the
    /// child holds the session's turn lock, also one whose call was dropped) it is waited for,
    /// and one still open once no turn holds the lock was interrupted by a restart, so it is
    /// recovered, under the lock, so no turn starts meanwhile.
    async fn answer_existing(
        &self,
        claim: &AgentGraphIntentClaim,
        prompt: &str,
        existing: RunHeader,
        (agent_id, agent_name): (&str, &str),
        abort: Option<&AbortSignal>,
    ) -> Result<()> {
        let stores = self.stores();
        let child = &claim.target_session_id;
        on_disk(|| -> Result<()> {
            let v = existing.value();
            // Session-inline: the child's own run, not one another run delegated.
            let same = v["turnId"] == json!(claim.target_turn_id)
                && v.get("parentRunId").is_none()
                && v["agentId"] == json!(agent_id)
                && v["agentName"] == json!(agent_name);
            let users: Vec<_> = stores
                .sessions
                .read_messages(child, Some(&claim.target_turn_id))?
                .into_iter()
                .filter(|m| m.message_type() == "user")
                .collect();
            if !same || users.len() != 1 || users[0].value()["text"] != json!(prompt) {
                return Err(conflict(format!(
                    "run {} does not match claim {}",
                    claim.target_run_id, claim.claim_id
                )));
            }
            Ok(())
        })?;
        if existing.is_terminal() {
            return Ok(());
        }
        // The call's own abort ends its wait, not the run.
        let idle = self.turn_lock(child)?.lock_owned();
        let _idle = match abort {
            Some(signal) => tokio::select! {
                biased;
                idle = idle => idle,
                () = signal.wait() => return Err(aborted(claim, "waiting for its live run")),
            },
            None => idle.await,
        };
        on_disk(|| {
            let now = stores.runs.read_run(child, &claim.target_run_id)?;
            if !now.is_terminal() {
                recover_run(&self.inner, &now)?;
            }
            Ok(())
        })
    }

    async fn start_claim(
        &self,
        claim: &AgentGraphIntentClaim,
        run: ClaimedIntentRun,
        agent_id: &str,
        agent_name: &str,
        header: &Value,
    ) -> Result<()> {
        let stores = self.stores();
        let child = &claim.target_session_id;
        // Before the claim is marked executing: a disposed runtime starts no turn, and a
        // claim marked for one would wait for a later process's retry.
        if self.inner.is_disposed() {
            return Err(super::stops::disposed(child));
        }
        let turn_used = on_disk(|| stores.runs.list_session_runs(child))?
            .iter()
            .any(|r| r.value()["turnId"] == json!(claim.target_turn_id));
        if turn_used || header["isArchived"] == json!(true) {
            return Err(conflict(format!(
                "turn {} of {child} is used, or the child is archived",
                claim.target_turn_id
            )));
        }
        // An abort before the run starts writes nothing: checked before the host is asked,
        // and again once it answered.
        let aborted_now = || run.abort.as_ref().is_some_and(AbortSignal::aborted);
        if aborted_now() {
            return Err(aborted(claim, "before its run started"));
        }
        if let Some(admit) = run.admit_execution {
            admit(claim.clone()).await?;
        }
        if aborted_now() {
            return Err(aborted(claim, "before its run started"));
        }
        on_disk(|| {
            stores.claims.set_agent_graph_intent_status(
                &claim.graph_id,
                &claim.intent_id,
                AdmissionStatus::Executing,
                None,
            )
        })?;
        let claim_value =
            serde_json::to_value(claim).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let input = TurnInput {
            turn_id: Some(claim.target_turn_id.clone()),
            text: run.prompt.clone(),
            run_id: Some(claim.target_run_id.clone()),
            agent_id: Some(agent_id.to_owned()),
            agent_name: Some(agent_name.to_owned()),
            execution: Some(
                json!({"kind": "claimed_agent_graph_intent", "claim": claim_value,
                                   "agentId": agent_id, "agentName": agent_name}),
            ),
            ..TurnInput::default()
        };
        let mut turn = self.send_message(child, input).await?;
        if let Some(ready) = run.on_ready {
            ready();
        }
        let mut on_event = run.on_event;
        // The signal is watched here, beside the turn's end, not in a task of its own: nothing
        // of the run (and so of the stores) outlives the call.
        let finish = async move {
            if let Some(on_event) = on_event.as_mut() {
                while let Some(event) = turn.events.recv().await {
                    on_event(&event);
                }
            }
            turn.finish().await
        };
        tokio::pin!(finish);
        let outcome = match run.abort {
            // The turn's end first: an abort racing it stops nothing (and names this turn, so
            // it never stops the session's next one).
            Some(signal) => tokio::select! {
                biased;
                outcome = &mut finish => outcome,
                _ = signal.wait() => {
                    let _ = self.stop_turn(child, &claim.target_turn_id, "stop_button");
                    finish.await
                }
            },
            None => finish.await,
        };
        outcome.map(|_| ())
    }

    /// The claim's result as the ledger holds it: the run's header, the last assistant text of
    /// its turn, and its RuntimeEvents.
    fn stored_result(
        &self,
        claim: &AgentGraphIntentClaim,
        runtime: &Value,
    ) -> Result<ClaimedRunResult> {
        let stores = self.stores();
        let child = &claim.target_session_id;
        let run = stores.runs.read_run(child, &claim.target_run_id)?;
        let summary = stores
            .sessions
            .read_messages(child, Some(&claim.target_turn_id))?
            .iter()
            .rev()
            .find(|m| m.message_type() == "assistant")
            .and_then(|m| m.value()["text"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let events = stores
            .runtime_events
            .read_immutable_runtime_events(child, &claim.target_run_id)?;
        let v = run.value();
        let started_at = v["createdAt"].as_f64().unwrap_or(0.0);
        let completed_at = v["completedAt"].as_f64();
        let text = |k: &str| runtime[k].as_str().unwrap_or_default().to_owned();
        Ok(ClaimedRunResult {
            claim_id: claim.claim_id.clone(),
            graph_id: claim.graph_id.clone(),
            intent_id: claim.intent_id.clone(),
            operator_id: claim.target_operator_id.clone(),
            child_session_id: child.clone(),
            agent_id: text("agentId"),
            agent_name: text("agentName"),
            profile: text("profile"),
            turn_id: claim.target_turn_id.clone(),
            run_id: claim.target_run_id.clone(),
            status: run.status().to_owned(),
            permission_mode: v["permissionMode"].as_str().unwrap_or_default().to_owned(),
            summary,
            artifact_ids: Vec::new(),
            started_at,
            completed_at,
            duration_ms: completed_at.map(|c| c - started_at),
            event_count: events.len(),
            failure_class: v["failureClass"].as_str().map(str::to_owned),
        })
    }
}
