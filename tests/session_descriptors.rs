//! A host touches many more sessions than the open-session cap with bounded descriptors, and
//! a session in use is never closed under its callers.

mod support;

use makalog::segment::WriterConfig;
use makalog::store::{RuntimeEventStore, MAX_CLOSING};
use std::path::Path;
use support::cost::*;

/// Descriptors of this process open on files under `root` (tests run on threads of one
/// process, so only this root's count).
fn open_descriptors(root: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("fds")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(root))
        .count()
}

#[test]
fn a_host_touches_many_more_sessions_than_the_cap_with_bounded_descriptors() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let cap = 4;
    let store = RuntimeEventStore::with_open_limit(&owner, WriterConfig::default(), cap);
    let root = storage_root(&storage);
    let baseline = open_descriptors(&root);
    let mut peak = 0;
    for i in 0..60 {
        turn(&store, &format!("host-{i:03}"), "run-1", i as f64);
        assert!(
            store.open_sessions() <= cap,
            "open: {}",
            store.open_sessions()
        );
        peak = peak.max(open_descriptors(&root));
    }
    // Evicted sessions still being closed hold their segments until they are, and for a moment
    // one file more each (the sidecar written beside its name, or a file the close reads).
    assert!(
        peak <= baseline + cap + 2 * MAX_CLOSING,
        "descriptors: baseline {baseline}, peak {peak}, cap {cap}"
    );
    // Reads of evicted sessions go through read-only views and open nothing for writing; a
    // read of one still being closed waits for its close.
    let before = open_descriptors(&root);
    for i in 0..60 {
        let listed = store
            .list_session_invocations(&format!("host-{i:03}"))
            .expect("list");
        assert_eq!(listed.len(), 1, "host-{i:03}");
        assert_eq!(
            listed[0]
                .terminal_event
                .as_ref()
                .and_then(|t| t["status"].as_str()),
            Some("completed")
        );
    }
    // Evicted sessions were closed cleanly: synced, sidecar written, zeros cut.
    let evicted = "host-000";
    assert_eq!(
        std::fs::metadata(segment(&storage, evicted))
            .expect("stat")
            .len(),
        data_end(&storage, evicted)
    );
    assert!(session_dir(&storage, evicted).join("index").exists());
    assert!(store.open_sessions() <= cap);
    assert!(
        open_descriptors(&root) <= before,
        "reads hold no descriptors"
    );
    store.close().expect("close");
    for i in 0..60 {
        let s = format!("host-{i:03}");
        assert_eq!(
            std::fs::metadata(segment(&storage, &s))
                .expect("stat")
                .len(),
            data_end(&storage, &s),
            "{s}: cut at close"
        );
    }
}

#[test]
fn sessions_in_use_are_never_closed_under_their_callers() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    // Eight threads on sixteen sessions with room for two: every open evicts one, while
    // other threads are appending to the sessions around it.
    let store = RuntimeEventStore::with_open_limit(&owner, WriterConfig::default(), 2);
    std::thread::scope(|scope| {
        for th in 0..8 {
            let store = &store;
            scope.spawn(move || {
                for round in 0..6 {
                    let session = format!("busy-{}", (th * 7 + round * 3) % 16);
                    let run = format!("run-{th}-{round}");
                    turn(store, &session, &run, (th * 100 + round) as f64);
                }
            });
        }
    });
    let mut total = 0;
    for s in 0..16 {
        let session = format!("busy-{s}");
        let listed = store.list_session_invocations(&session).expect("list");
        assert!(listed.iter().all(|i| i.terminal_event.is_some()));
        total += listed.len();
        let events = store.read_session_runtime_events(&session).expect("read");
        assert_eq!(events.len(), listed.len() * 4, "{session}");
    }
    assert_eq!(total, 8 * 6, "every turn of every thread is stored");
    store.close().expect("close");
}
