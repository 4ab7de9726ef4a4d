//! A sandbox request is decided through the manager (`respond_to_sandbox_boundary`, MAKA-MODEL
//! §11's respondToSandboxBoundary), which refuses a decision other than allow or deny and asks
//! nothing then; the backend's ack ends the wait, and the run records the request and its
//! grant.

mod support;

use makalog::runtime::{BackendRegistry, SessionEvent, SessionManager, Sources};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::Arc;
use support::permissions::{complete, run_events, sandbox_escalation};
use support::turns::text;

/// Asks to cross its sandbox, then waits for the decision, streams its ack and ends the turn.
#[derive(Default)]
struct Sandboxed {
    waiting: std::sync::Mutex<Option<(String, tokio::sync::mpsc::Sender<SessionEvent>)>>,
}

impl makalog::runtime::Backend for Sandboxed {
    fn kind(&self) -> &str {
        "sandboxed"
    }
    fn send(
        &self,
        input: makalog::runtime::SendInput,
    ) -> tokio::sync::mpsc::Receiver<SessionEvent> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let t = input.turn_id;
        let request = SessionEvent::SandboxBoundaryRequest {
            id: format!("sr-{t}"),
            turn_id: t.clone(),
            ts: 2.0,
            request: sandbox_escalation("request-7"),
        };
        tx.try_send(request).expect("room");
        *self.waiting.lock().expect("lock") = Some((t, tx));
        rx
    }
    fn stop(&self) {
        self.waiting.lock().expect("lock").take();
    }
    fn respond_to_sandbox_boundary(&self, request_id: &str, decision: &str) -> bool {
        if request_id != "request-7" {
            return false;
        }
        let Some((t, tx)) = self.waiting.lock().expect("lock").take() else {
            return false;
        };
        let ack = SessionEvent::SandboxBoundaryDecisionAck {
            id: format!("sd-{t}"),
            turn_id: t.clone(),
            ts: 3.0,
            request_id: request_id.into(),
            decision: decision.into(),
        };
        tx.try_send(ack).expect("room");
        tx.try_send(complete(&t)).expect("room");
        true
    }
}

#[tokio::test(start_paused = true)]
async fn a_sandbox_request_is_decided_through_the_manager() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let mut registry = BackendRegistry::with_fake();
    registry.register("ai-sdk", |_| Arc::new(Sandboxed::default()));
    let manager = SessionManager::new(stores, registry, Sources::system()).expect("manager");
    manager
        .create_session(json!({"id": "s", "backend": "ai-sdk", "model": "m"}))
        .expect("session");
    let mut turn = manager.send_message("s", text("go")).await.expect("send");
    let first = turn.events.recv().await.expect("the request");
    assert_eq!(first.type_name(), "sandbox_boundary_request");
    let refused = manager.respond_to_sandbox_boundary("s", "request-7", "maybe");
    assert!(
        matches!(&refused, Err(makalog::Error::InvalidInput(why)) if why.contains("decision")),
        "{refused:?}"
    );
    assert!(!manager
        .respond_to_sandbox_boundary("s", "request-8", "allow")
        .expect("asked"));
    assert!(manager
        .respond_to_sandbox_boundary("s", "request-7", "allow")
        .expect("asked"));
    while turn.events.recv().await.is_some() {}
    assert_eq!(turn.finish().await.expect("ends").status, "completed");
    let names: Vec<String> = run_events(&manager).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        names,
        [
            "sandbox_escalation_requested",
            "run_status_changed",
            "sandbox_escalation_granted",
            "run_status_changed",
            "run_completed"
        ]
    );
}
