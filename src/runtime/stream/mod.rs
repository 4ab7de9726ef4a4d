//! A turn's stream and its end (MAKA-MODEL §12, steps 7–8): every backend event goes to the
//! caller (one that falls behind a stopped turn past its grace gets a prefix of them, see
//! [`hand_on`]); what it means is written first (`writer`), and the terminal event, with whatever
//! follows it, only once the terminal commit is durable. The stream takes what the backend has
//! ready, writes it, then hands it on in one go: the caller is woken once a burst, not once
//! an event, and the facts of a burst share one sync, waited for before the burst is handed
//! on (so a fact reaches the caller once durable). Deltas ahead of a fact are handed on
//! before it is queued, without waiting for its sync. After the stream: the terminal
//! commit, the final `turn_state` and the session header, in one sync that also covers the
//! facts still queued. A stream that ends without a terminal event gets a synthetic one:
//! `aborted` if a stop was asked, else failed (`missing_terminal_event`), unless the run
//! waits for the user: that turn is parked, and commits no terminal. An ending the runtime
//! makes is told to the caller as §11's backends end a turn (`abort` or `error`, then
//! `complete`), in place of a backend terminal event the ledger refused.
//!
//! A backend is the host's code, and the turn does not wait on it for good: once stopped, it
//! has [`STOP_GRACE`] to end its stream, after which the turn ends `aborted` without it; once
//! it sent its terminal event, it has [`CLOSE_GRACE`] to close the stream. A terminal event the
//! ledger refuses (a repeated id, a field it cannot hold) is replaced by a synthetic one that
//! fails the run (`invalid_terminal_event`), so the run never stays `running` in this life.

mod ending;
mod facts;
mod partials;
mod permissions;
mod writer;

use super::begin::Begun;
use super::blocking::on_disk;
use super::events::SessionEvent;
use super::manager::{Inner, TurnOutcome};
use super::mapping::Ending;
use crate::error::Result;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc::{self, error::TryRecvError};
use tokio::sync::Notify;
use tokio::time::Instant;
use writer::Writer;

/// How long a stopped backend has to end its stream.
pub const STOP_GRACE: Duration = Duration::from_secs(30);
/// How long a backend has to close its stream after its terminal event.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Events handed on together at most, so a fast backend's deltas still reach the caller as
/// they come.
const BURST: usize = 64;

/// A turn's stream: the backend's events, the caller's channel, the turn's stop signal, and
/// the source of the stop asked for (if one was).
pub(super) struct Stream<'a> {
    pub from_backend: mpsc::Receiver<SessionEvent>,
    pub to_caller: mpsc::Sender<Vec<SessionEvent>>,
    pub stop_asked: &'a Notify,
    pub abort_source: &'a (dyn Fn() -> Option<String> + Sync),
}

/// What waiting on the backend gave.
enum Waited {
    Event(SessionEvent),
    /// The stream closed.
    Closed,
    /// The backend's grace ran out first.
    GaveUp,
}

pub(super) async fn run(inner: &Inner, begun: Begun, stream: Stream<'_>) -> Result<TurnOutcome> {
    let Stream {
        mut from_backend,
        to_caller,
        stop_asked,
        abort_source,
    } = stream;
    let mut waits = Waits {
        stop: std::pin::pin!(stop_asked.notified()),
        stopped: false,
        give_up: None,
        caller_lost: false,
    };
    let mut w = Writer::new(inner, &begun);
    let mut held: Vec<SessionEvent> = Vec::new();
    let mut events = 0usize;
    let mut terminal: Option<(Value, Ending)> = None;
    // Where the backend's terminal event is among the events held (none is handed on after it
    // before the terminal commit).
    let mut terminal_at: Option<usize> = None;
    loop {
        // Wait only with nothing in hand; otherwise take what is ready, and hand the burst on
        // once nothing is. Once the terminal event is in hand, nothing more goes on before the
        // terminal commit is durable: the stream is read to its end (at most a burst more).
        let next = if held.is_empty() || terminal.is_some() {
            let waited = if let Some(at) = waits.give_up {
                wait_until(&mut from_backend, at).await
            } else {
                tokio::select! {
                    biased;
                    e = from_backend.recv() => e.map_or(Waited::Closed, Waited::Event),
                    () = waits.stop.as_mut() => {
                        waits.stop_came();
                        continue;
                    }
                }
            };
            match waited {
                Waited::Event(e) => Some(e),
                Waited::Closed => None,
                Waited::GaveUp => break,
            }
        } else {
            match from_backend.try_recv() {
                Ok(event) => Some(event),
                Err(TryRecvError::Empty) => {
                    hand_on(&mut w, &mut held, &to_caller, &mut waits).await;
                    continue;
                }
                Err(TryRecvError::Disconnected) => None,
            }
        };
        let Some(event) = next else { break };
        events += 1;
        if event.is_fact() && !w.unsynced() && terminal.is_none() {
            hand_on(&mut w, &mut held, &to_caller, &mut waits).await;
        }
        if terminal.is_none() {
            terminal = w.apply(&event, abort_source);
            if terminal.is_some() {
                terminal_at = Some(held.len());
                waits.give_up_by(Instant::now() + CLOSE_GRACE);
            }
        }
        held.push(event);
        if held.len() >= BURST {
            if terminal.is_some() {
                break;
            }
            hand_on(&mut w, &mut held, &to_caller, &mut waits).await;
        }
    }
    w.flush();
    // A turn parked in `waiting_for_user` (its stream closed while the user was asked, and no
    // stop was asked) commits no terminal (§12 step 8): its run stays open, for the next
    // start's recovery to end (`stale_user_wait`). Its facts are made durable before the
    // caller has them, as ever.
    if terminal.is_none() && w.waiting_for_user() && abort_source().is_none() {
        drop(from_backend);
        hand_on(&mut w, &mut held, &to_caller, &mut waits).await;
        return Ok(ending::parked(inner, &begun, events, &w));
    }
    // A stream that ended without a terminal event (closed, or given up on after a stop's
    // grace) ends the turn `aborted` if a stop was asked, as it asked, else failed.
    // (`made`: the ending the runtime made, none came.)
    let (terminal, made) = match terminal {
        Some(terminal) => (terminal, None),
        None => {
            let made = match abort_source() {
                Some(source) => ending::synthetic(inner, &begun, "aborted", None, Some(&source)),
                None => {
                    let missing = Some("missing_terminal_event".into());
                    ending::synthetic(inner, &begun, "failed", missing, None)
                }
            };
            (made.clone(), Some(made))
        }
    };
    // The stream is let go: a backend still sending finds it closed.
    drop(from_backend);
    let output = std::mem::take(&mut w.output);
    let outcome = on_disk(|| ending::commit(inner, &begun, terminal, events, &output));
    let outcome = outcome.map(|(outcome, replaced)| {
        // The caller's stream ends as the ledger ended the turn: an ending the runtime made
        // (the backend gave none, or one the ledger refused) is told in the backend's place.
        if let Some(at) = terminal_at.filter(|_| replaced.is_some()) {
            held.remove(at);
        }
        if let Some((event, ending)) = replaced.as_ref().or(made.as_ref()) {
            held.extend(ending::told(inner, event, ending));
        }
        outcome
    });
    // The terminal commit's sync made the queued facts durable (or failed them with it).
    hand_on(&mut w, &mut held, &to_caller, &mut waits).await;
    outcome.map(|o| TurnOutcome {
        fact_failures: w.fact_failures,
        ..o
    })
}

/// The next event, unless the stream closes first or `give_up` passes.
async fn wait_until(from_backend: &mut mpsc::Receiver<SessionEvent>, give_up: Instant) -> Waited {
    match tokio::time::timeout_at(give_up, from_backend.recv()).await {
        Ok(e) => e.map_or(Waited::Closed, Waited::Event),
        Err(_) => Waited::GaveUp,
    }
}

/// What the stream waits on besides the backend: the turn's stop, and when it gives up on
/// the backend and on the caller (set by a stop, or by the terminal event).
struct Waits<'a, 'n> {
    stop: std::pin::Pin<&'a mut tokio::sync::futures::Notified<'n>>,
    stopped: bool,
    give_up: Option<Instant>,
    /// A burst was dropped, the caller having had no room for it in time: so is every later
    /// one, and the caller's events are a prefix of the turn's, with no gap.
    caller_lost: bool,
}

impl Waits<'_, '_> {
    fn stop_came(&mut self) {
        self.stopped = true;
        self.give_up_by(Instant::now() + STOP_GRACE);
    }

    fn give_up_by(&mut self, at: Instant) {
        self.give_up = Some(self.give_up.map_or(at, |was| was.min(at)));
    }
}

/// Hands the held events to the caller once the facts among them are durable. A caller that
/// stopped listening ends nothing: the turn is still written. A caller that listens but has
/// no room (it fell [`BURSTS`](super::turn_events::BURSTS) behind) is waited for, which holds
/// the backend back; once the turn is stopped, only until the stop's grace runs out, as a
/// backend is: then the burst and every later one are dropped (the ledger holds what they
/// meant, and the turn's outcome how it ended), so a caller that never reads cannot hold a
/// stop or a shutdown for good, and one that reads late still gets every event.
async fn hand_on(
    w: &mut Writer<'_>,
    held: &mut Vec<SessionEvent>,
    to_caller: &mpsc::Sender<Vec<SessionEvent>>,
    waits: &mut Waits<'_, '_>,
) {
    w.settle();
    if held.is_empty() {
        return;
    }
    let burst = std::mem::replace(held, Vec::with_capacity(held.len()));
    if waits.caller_lost {
        return;
    }
    let room = loop {
        if !waits.stopped {
            tokio::select! {
                biased;
                room = to_caller.reserve() => break Some(room),
                () = waits.stop.as_mut() => waits.stop_came(),
            }
        } else {
            let by = waits.give_up.unwrap_or_else(Instant::now);
            break tokio::time::timeout_at(by, to_caller.reserve()).await.ok();
        }
    };
    match room {
        Some(Ok(room)) => room.send(burst),
        // The caller stopped listening.
        Some(Err(_)) => {}
        None => waits.caller_lost = true,
    }
}
