//! A turn's stream and its end (MAKA-MODEL §12, steps 7–8): every backend event goes to the
//! caller; what it means is written first (`writer`), and the terminal event, with whatever
//! follows it, only once the terminal commit is durable. The stream takes what the backend has
//! ready, writes it, then hands it on in one go: the caller is woken once a burst, not once
//! an event, and the facts of a burst share one sync, waited for before the burst is handed
//! on (so a fact reaches the caller once durable). Deltas ahead of a fact are handed on
//! before it is queued, without waiting for its sync. After the stream: the terminal
//! commit, the final `turn_state` and the session header, in one sync that also covers the
//! facts still queued. A stream that ends without a terminal event gets a synthetic one
//! (`missing_terminal_event`).

mod writer;

use super::begin::{runtime_event, Begun};
use super::blocking::on_disk;
use super::events::SessionEvent;
use super::manager::{Inner, TurnOutcome};
use super::mapping::{terminal_event, Ending};
use crate::error::Result;
use crate::index::SessionRecord;
use crate::model::{SessionHeader, StoredMessage};
use serde_json::{json, Value};
use tokio::sync::mpsc::{self, error::TryRecvError};
use writer::Writer;

/// Events handed on together at most, so a fast backend's deltas still reach the caller as
/// they come.
const BURST: usize = 64;

pub(super) async fn run(
    inner: &Inner,
    begun: Begun,
    mut from_backend: mpsc::Receiver<SessionEvent>,
    to_caller: mpsc::Sender<Vec<SessionEvent>>,
    abort_source: impl Fn() -> Option<String>,
) -> Result<TurnOutcome> {
    let mut w = Writer::new(inner, &begun);
    let mut held: Vec<SessionEvent> = Vec::new();
    let mut events = 0usize;
    let mut terminal: Option<(Value, Ending)> = None;
    loop {
        // Wait only with nothing in hand; otherwise take what is ready, and hand the burst on
        // once nothing is. Once the terminal event is in hand, nothing more goes on before the
        // terminal commit is durable: the stream is read to its end (at most a burst more).
        let next = if held.is_empty() || terminal.is_some() {
            from_backend.recv().await
        } else {
            match from_backend.try_recv() {
                Ok(event) => Some(event),
                Err(TryRecvError::Empty) => {
                    hand_on(&mut w, &mut held, &to_caller).await;
                    continue;
                }
                Err(TryRecvError::Disconnected) => None,
            }
        };
        let Some(event) = next else { break };
        events += 1;
        if event.is_fact() && !w.unsynced() && terminal.is_none() {
            hand_on(&mut w, &mut held, &to_caller).await;
        }
        if terminal.is_none() {
            terminal = w.apply(&event, &abort_source);
        }
        held.push(event);
        if held.len() >= BURST {
            if terminal.is_some() {
                break;
            }
            hand_on(&mut w, &mut held, &to_caller).await;
        }
    }
    w.flush();
    let (terminal, ending) = terminal.unwrap_or_else(|| {
        let s = &inner.sources;
        let ending = Ending {
            status: "failed",
            failure_class: Some("missing_terminal_event".into()),
        };
        let event = terminal_event(
            &begun.ids,
            &s.new_id(),
            s.now(),
            "error",
            &ending,
            None,
            None,
        );
        (event, ending)
    });
    let summary = std::mem::take(&mut w.summary);
    let outcome = on_disk(|| finish(inner, &begun, terminal, &ending, events, summary));
    // The terminal commit's sync made the queued facts durable (or failed them with it).
    hand_on(&mut w, &mut held, &to_caller).await;
    outcome.map(|o| TurnOutcome {
        fact_failures: w.fact_failures,
        ..o
    })
}

/// Hands the held events to the caller once the facts among them are durable. A caller that
/// stopped listening ends nothing: the turn is still written.
async fn hand_on(
    w: &mut Writer<'_>,
    held: &mut Vec<SessionEvent>,
    to_caller: &mpsc::Sender<Vec<SessionEvent>>,
) {
    w.settle();
    if !held.is_empty() {
        let burst = std::mem::replace(held, Vec::with_capacity(held.len()));
        let _ = to_caller.send(burst).await;
    }
}

/// Step 8: the terminal commit, `turn_state`, and the session's header.
fn finish(
    inner: &Inner,
    begun: &Begun,
    terminal: Value,
    ending: &Ending,
    events: usize,
    summary: String,
) -> Result<TurnOutcome> {
    let ids = &begun.ids;
    let event = runtime_event(terminal)?;
    let abort_source = event.value()["actions"]["stateDelta"]["abortSource"]
        .as_str()
        .map(str::to_owned);
    let now = inner.sources.now();
    let mut state = json!({"type": "turn_state", "id": inner.sources.new_id(), "turnId": ids.turn_id,
                           "ts": now, "status": ending.status, "partialOutputRetained": false});
    match ending.status {
        "failed" => state["errorClass"] = json!(ending.failure_class),
        "aborted" => {
            state["abortedAt"] = json!(event.ts());
            if let Some(source) = &abort_source {
                state["abortSource"] = json!(source);
            }
        }
        _ => {}
    }
    // The turn's end in one sync: the terminal commit, then turn_state, then the header.
    let mut then = vec![SessionRecord::Message(StoredMessage::from_value(state)?)];
    if let Some(h) = inner.stores.sessions.read_session_queued(&ids.session_id)? {
        let mut next = h.value().clone();
        next["lastMessageAt"] = json!(now);
        next["hasUnread"] = json!(true);
        next["status"] = json!("active");
        next["statusUpdatedAt"] = json!(now);
        then.push(SessionRecord::Header(SessionHeader::from_value(next)?));
    }
    let run = inner.stores.runs.commit_terminal_then(
        &ids.session_id,
        &ids.run_id,
        &event,
        None,
        &then,
    )?;
    super::manager::lock(&inner.open_runs)?.ended(&ids.session_id);
    Ok(TurnOutcome {
        session_id: ids.session_id.clone(),
        turn_id: ids.turn_id.clone(),
        run_id: ids.run_id.clone(),
        user_message_id: begun.user_message_id.clone(),
        status: run.status().to_owned(),
        failure_class: run.value()["failureClass"].as_str().map(str::to_owned),
        summary,
        event_count: events,
        started_at: begun.started_at,
        completed_at: event.ts(),
        fact_failures: 0,
    })
}
