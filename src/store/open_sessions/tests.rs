//! Eviction with closer threads, over sessions that are plain names: a close is logged, and
//! held up where a test needs a close in flight.

use super::{OpenSessions, MAX_CLOSING};
use crate::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What happened, in order: "open X", "close X".
type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, what: String) {
    log.lock().expect("log").push(what);
}

fn open(sessions: &OpenSessions<String>, log: &Log, id: &str) {
    let opened = sessions
        .get_or_open(
            id,
            || {
                note(log, format!("open {id}"));
                Ok(id.to_owned())
            },
            &|_| true,
        )
        .expect("open");
    assert_eq!(*opened, id);
}

fn position(log: &Log, what: &str) -> usize {
    let log = log.lock().expect("log");
    log.iter()
        .position(|w| w == what)
        .unwrap_or_else(|| panic!("{what} is not in {log:?}"))
}

/// Sessions closed behind a gate the test holds; the close logs "close X".
fn gated(log: &Log, gate: &Arc<Mutex<()>>) -> OpenSessions<String> {
    let (l, g) = (log.clone(), gate.clone());
    OpenSessions::new(
        1,
        move |s: String| {
            let _held = g.lock().expect("gate");
            note(&l, format!("close {s}"));
            match s.as_str() {
                "boom" => panic!("{s} panics while closing"),
                _ => Ok(()),
            }
        },
        true,
    )
}

/// A store of one open session whose closes wait at a gate, and its log.
struct Gated {
    log: Log,
    gate: Arc<Mutex<()>>,
    sessions: OpenSessions<String>,
}

fn gated_store() -> Gated {
    let (log, gate): (Log, _) = (Arc::default(), Arc::new(Mutex::new(())));
    let sessions = gated(&log, &gate);
    Gated {
        log,
        gate,
        sessions,
    }
}

impl Gated {
    /// Opens `victim`, then `next`, which evicts `victim` to a closer thread held at the gate
    /// (the evictor does not wait for it); runs `meanwhile` on another thread, lets the close
    /// go after giving a wrong `meanwhile` the chance to run ahead of it, and returns what
    /// `meanwhile` returned.
    fn while_closing<R: Send>(
        &self,
        victim: &str,
        next: &str,
        meanwhile: impl FnOnce() -> R + Send,
    ) -> R {
        open(&self.sessions, &self.log, victim);
        let held = self.gate.lock().expect("gate");
        open(&self.sessions, &self.log, next);
        assert!(!self.logged(&format!("close {victim}")));
        std::thread::scope(|scope| {
            let waiter = scope.spawn(meanwhile);
            std::thread::sleep(Duration::from_millis(50));
            drop(held);
            waiter.join().expect("meanwhile")
        })
    }

    fn logged(&self, what: &str) -> bool {
        self.log.lock().expect("log").iter().any(|w| w == what)
    }

    /// Where `what` was last logged.
    fn last(&self, what: &str) -> usize {
        let log = self.log.lock().expect("log");
        log.iter()
            .rposition(|w| w == what)
            .unwrap_or_else(|| panic!("{what} is not in {log:?}"))
    }
}

#[test]
fn an_evicted_session_is_opened_again_only_once_its_close_is_done() {
    let g = gated_store();
    g.while_closing("a", "b", || open(&g.sessions, &g.log, "a"));
    assert!(
        position(&g.log, "close a") < g.last("open a"),
        "reopened before its close"
    );
    let (open_now, deferred) = g.sessions.drain();
    assert!(deferred.is_none());
    assert_eq!(open_now.len(), 1);
}

#[test]
fn at_most_max_closing_closes_run_at_once_and_drain_waits_for_them_all() {
    let (active, peak, closed) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (a, p, c) = (active.clone(), peak.clone(), closed.clone());
    let sessions = OpenSessions::new(
        1,
        move |_s: String| {
            let now = a.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            a.fetch_sub(1, Ordering::SeqCst);
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        },
        true,
    );
    let log: Log = Arc::default();
    for i in 0..10 {
        open(&sessions, &log, &format!("s{i}"));
        assert!(sessions.open_count() <= 1);
    }
    let (open_now, deferred) = sessions.drain();
    assert!(deferred.is_none());
    assert_eq!(open_now.len(), 1, "the last one is still open");
    assert_eq!(
        closed.load(Ordering::SeqCst),
        9,
        "drain waited for every close"
    );
    let peak = peak.load(Ordering::SeqCst);
    assert!((1..=MAX_CLOSING).contains(&peak), "{peak} closes at once");
}

#[test]
fn a_failed_close_behind_is_reported_by_drain_and_in_place_closes_run_in_order() {
    for background in [true, false] {
        let log: Log = Arc::default();
        let l = log.clone();
        let sessions = OpenSessions::new(
            1,
            move |s: String| {
                note(&l, format!("close {s}"));
                match s.as_str() {
                    "bad" => Err(Error::InvalidInput(format!("{s} would not close"))),
                    _ => Ok(()),
                }
            },
            background,
        );
        for id in ["bad", "x", "y"] {
            open(&sessions, &log, id);
        }
        let (_, deferred) = sessions.drain();
        let e = deferred.expect("the failed close is reported");
        assert!(e.to_string().contains("bad would not close"), "{e}");
        if !background {
            // In place, each close runs within the open that evicted it, once its new session
            // is open: before the next open.
            let at = |what| position(&log, what);
            assert!(at("open x") < at("close bad") && at("close bad") < at("open y"));
            assert!(at("open y") < at("close x"));
        }
    }
}

#[test]
fn a_read_of_a_session_being_closed_waits_for_its_close() {
    let g = gated_store();
    let read = g.while_closing("a", "b", || {
        let open_now = g.sessions.get_open("a");
        note(&g.log, "read a".into());
        open_now
    });
    assert!(read.is_none(), "a is closed");
    assert!(position(&g.log, "close a") < position(&g.log, "read a"));
}

#[test]
fn a_store_dropped_with_closes_in_flight_waits_for_them() {
    let Gated {
        log,
        gate,
        sessions,
    } = gated_store();
    open(&sessions, &log, "a");
    let holding = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let held = gate.lock().expect("gate");
            holding.wait();
            std::thread::sleep(Duration::from_millis(50));
            note(&log, "released".into());
            drop(held);
        });
        holding.wait();
        open(&sessions, &log, "b");
        drop(sessions);
        note(&log, "dropped".into());
    });
    assert!(position(&log, "released") < position(&log, "close a"));
    assert!(position(&log, "close a") < position(&log, "dropped"));
}

#[test]
fn a_close_that_panics_on_its_thread_releases_its_waiters_and_is_reported() {
    let g = gated_store();
    // The reopen waits for the close, which panics once released; it is not stuck.
    g.while_closing("boom", "next", || open(&g.sessions, &g.log, "boom"));
    assert!(position(&g.log, "close boom") < g.last("open boom"));
    let (_, deferred) = g.sessions.drain();
    let e = deferred.expect("the panic is reported");
    assert!(e.to_string().contains("panicked"), "{e}");
}

#[test]
fn a_closed_session_leaves_the_map_once_its_closer_is_done() {
    let sessions = OpenSessions::new(1, |_s: String| Ok(()), true);
    let log: Log = Arc::default();
    for i in 0..20 {
        open(&sessions, &log, &format!("s{i}"));
    }
    assert!(sessions.shared.join_closers().is_none());
    let left: Vec<String> = super::lock(&sessions.shared.slots)
        .keys()
        .cloned()
        .collect();
    assert_eq!(left, ["s19"], "only the open session keeps a slot");
}

#[test]
fn an_empty_slot_left_behind_is_dropped_by_the_next_caller_that_finds_it_idle() {
    let sessions = OpenSessions::new(1, |_s: String| Ok(()), true);
    // What a closer leaves when someone held the slot as it finished.
    let left = Arc::new(super::Slot {
        session: Mutex::new(None),
        last_used: std::sync::atomic::AtomicU64::new(0),
        closing: std::sync::atomic::AtomicBool::new(false),
    });
    super::lock(&sessions.shared.slots).insert("gone".into(), left);
    assert!(sessions.get_open("gone").is_none());
    assert!(super::lock(&sessions.shared.slots).is_empty());
}

#[test]
fn closer_threads_are_kept_across_evictions_and_ended_by_drain() {
    let (threads, closes) = (
        Arc::new(Mutex::new(std::collections::HashSet::new())),
        Arc::new(AtomicUsize::new(0)),
    );
    let (t, c) = (threads.clone(), closes.clone());
    let sessions = OpenSessions::new(
        1,
        move |_s: String| {
            t.lock().expect("ids").insert(std::thread::current().id());
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        },
        true,
    )
    .lingering(Duration::from_secs(600));
    let log: Log = Arc::default();
    for i in 0..30 {
        open(&sessions, &log, &format!("s{i}"));
    }
    let (open_now, deferred) = sessions.drain();
    assert!(deferred.is_none());
    assert_eq!(open_now.len(), 1);
    assert_eq!(
        closes.load(Ordering::SeqCst),
        29,
        "drain waited for every close"
    );
    let used = threads.lock().expect("ids").len();
    assert!(
        (1..=MAX_CLOSING).contains(&used),
        "29 closes ran on {used} threads"
    );
    assert_eq!(super::lock(&sessions.shared.closing).workers, 0);
    // Sessions evicted after a drain are closed by new closer threads.
    for i in 30..33 {
        open(&sessions, &log, &format!("s{i}"));
    }
    assert!(sessions.shared.join_closers().is_none());
    assert_eq!(closes.load(Ordering::SeqCst), 31);
    assert_eq!(super::lock(&sessions.shared.closing).workers, 0);
}

/// A closer thread never waits for a slot's lock once its close is done: callers holding the
/// slots of sessions just closed (as a reopen holds its slot while it waits for the close, and
/// may then wait for a closer itself) must not strand a close queued behind them.
#[test]
fn a_close_queued_while_callers_hold_the_slots_of_closed_sessions_still_runs() {
    let Gated {
        log,
        gate,
        sessions,
    } = gated_store();
    open(&sessions, &log, "s0");
    let held = gate.lock().expect("gate");
    // Each open evicts the one before it to a closer held at the gate: MAX_CLOSING at work.
    for i in 1..=MAX_CLOSING {
        open(&sessions, &log, &format!("s{i}"));
    }
    let slots: Vec<_> = (0..MAX_CLOSING)
        .map(|i| super::lock(&sessions.shared.slots)[&format!("s{i}")].clone())
        .collect();
    let holding: Vec<_> = slots.iter().map(|s| super::lock(&s.session)).collect();
    drop(held);
    open(&sessions, &log, "next");
    let last = format!("close s{MAX_CLOSING}");
    let start = std::time::Instant::now();
    while !log.lock().expect("log").contains(&last) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{last} is stranded behind closers waiting for held slots"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(holding);
    let (open_now, deferred) = sessions.drain();
    assert!(deferred.is_none());
    assert_eq!(open_now.len(), 1);
}
