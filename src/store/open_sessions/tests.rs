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

#[test]
fn an_evicted_session_is_opened_again_only_once_its_close_is_done() {
    let (log, gate): (Log, _) = (Arc::default(), Arc::new(Mutex::new(())));
    let sessions = gated(&log, &gate);
    open(&sessions, &log, "a");
    let held = gate.lock().expect("gate");
    // Evicts "a" to a closer thread, held at the gate: the evictor does not wait for it.
    open(&sessions, &log, "b");
    assert!(!log.lock().expect("log").contains(&"close a".to_owned()));
    std::thread::scope(|scope| {
        let reopened = scope.spawn(|| open(&sessions, &log, "a"));
        // Give a wrong reopen the chance to run ahead of the close it must wait for.
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        reopened.join().expect("reopen");
    });
    let log_now = log.lock().expect("log").clone();
    let reopened_at = log_now
        .iter()
        .rposition(|w| w == "open a")
        .expect("reopened");
    assert!(
        position(&log, "close a") < reopened_at,
        "reopened before its close: {log_now:?}"
    );
    let (open_now, deferred) = sessions.drain();
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
            // In place, each close runs before the open that evicted it.
            assert!(position(&log, "close bad") < position(&log, "open x"));
            assert!(position(&log, "close x") < position(&log, "open y"));
        }
    }
}

#[test]
fn a_read_of_a_session_being_closed_waits_for_its_close() {
    let (log, gate): (Log, _) = (Arc::default(), Arc::new(Mutex::new(())));
    let sessions = gated(&log, &gate);
    open(&sessions, &log, "a");
    let held = gate.lock().expect("gate");
    open(&sessions, &log, "b");
    std::thread::scope(|scope| {
        let read = scope.spawn(|| {
            let open_now = sessions.get_open("a");
            note(&log, "read a".into());
            open_now
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert!(read.join().expect("read").is_none(), "a is closed");
    });
    assert!(position(&log, "close a") < position(&log, "read a"));
}

#[test]
fn a_store_dropped_with_closes_in_flight_waits_for_them() {
    let (log, gate): (Log, _) = (Arc::default(), Arc::new(Mutex::new(())));
    let sessions = gated(&log, &gate);
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
    let (log, gate): (Log, _) = (Arc::default(), Arc::new(Mutex::new(())));
    let sessions = gated(&log, &gate);
    open(&sessions, &log, "boom");
    let held = gate.lock().expect("gate");
    open(&sessions, &log, "next");
    std::thread::scope(|scope| {
        // The reopen waits for the close, which panics once released; it is not stuck.
        let reopened = scope.spawn(|| open(&sessions, &log, "boom"));
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        reopened.join().expect("reopen");
    });
    let (_, deferred) = sessions.drain();
    let e = deferred.expect("the panic is reported");
    assert!(e.to_string().contains("panicked"), "{e}");
    let log_now = log.lock().expect("log").clone();
    let reopened_at = log_now
        .iter()
        .rposition(|w| w == "open boom")
        .expect("reopened");
    assert!(position(&log, "close boom") < reopened_at, "{log_now:?}");
}
