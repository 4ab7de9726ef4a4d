//! The whole-root target: a root directory built from fuzzed files, read by everything that
//! reads a root it does not trust, then opened for writing.

use crate::archive::unpack;
use crate::sim_root::with_files;
use makalog::forensics::{
    compare_heads, diff_roots, durable_view, read_heads, salvage, session_chain, view_at, Point,
};
use makalog::root::{read_marker, Owner};
use makalog::runtime::read_open_runs;
use makalog::segment::layout::list_sessions;
use makalog::segment::SessionReader;
use makalog::storage::{SimStorage, Storage};
use makalog::store::{open_execution_stores_for_write, ReadOnlySessions};
use makalog::verify::verify_root;
use std::sync::Arc;

/// Verify, dump's reads and the read-only stores return or refuse and write nothing; then the
/// owner's open (recovering what it may) returns or refuses.
pub fn root_dir(data: &[u8]) {
    let storage = with_files(&unpack(data));
    let before = storage.live_files();
    read_only(&*storage);
    assert_eq!(storage.live_files(), before, "a read-only pass wrote");
    assert_eq!(storage.durable_files(), before, "a read-only pass wrote");
    open_for_write(storage);
}

fn read_only(storage: &dyn Storage) {
    let _ = read_marker(storage);
    let _ = verify_root(storage);
    let _ = read_open_runs(storage);
    let Ok((ids, _)) = list_sessions(storage) else {
        return;
    };
    for id in &ids {
        dump(storage, id);
    }
    stores_read(storage, &ids);
    forensics(storage, &ids);
}

fn stores_read(storage: &dyn Storage, ids: &[String]) {
    let sessions = ReadOnlySessions::new(storage);
    let _ = sessions.list_sessions();
    for id in ids {
        let _ = sessions.read_session(id);
        let _ = sessions.read_messages(id, None);
        for run in sessions.list_session_runs(id).unwrap_or_default() {
            let _ = sessions.read_run_events(id, run.run_id());
        }
    }
}

/// What the forensic commands read: heads and the check against them, a diff with itself, each
/// session at its first, middle and last record and at a time, the salvage plan, the view a
/// live export reads; the stores read through every cut view.
fn forensics(storage: &dyn Storage, ids: &[String]) {
    if let Ok(heads) = read_heads(storage) {
        let _ = compare_heads(storage, &heads);
    }
    if let Ok(diffs) = diff_roots(storage, storage, None) {
        // The same records, and damage (which makes no copy known the same) where it is.
        assert!(
            diffs.iter().all(|d| d.only_a.is_empty()
                && d.only_b.is_empty()
                && d.diverges_at.is_none()
                && d.a_stopped == d.b_stopped),
            "a root differs from itself"
        );
    }
    for id in ids {
        let total = session_chain(storage, id).map_or(0, |c| c.head_seq());
        for point in [
            Point::Seq(1),
            Point::Seq(total / 2),
            Point::Seq(total),
            Point::Time(1.0e12),
        ] {
            if let Ok(at) = view_at(storage, id, point) {
                stores_read(&at.view, std::slice::from_ref(id));
            }
        }
    }
    if let Ok(plan) = salvage::plan(storage, &[]) {
        stores_read(&plan.view, &plan.sessions);
        let _ = verify_root(&plan.view);
    }
    if let Ok((view, _)) = durable_view(storage) {
        let _ = verify_root(&view);
    }
}

/// What `makalog dump` reads: every record of the session, each rendered.
fn dump(storage: &dyn Storage, id: &str) {
    let Ok(reader) = SessionReader::open(storage, id, 1) else {
        return;
    };
    for record in reader.flatten() {
        let _ = record.to_json(id);
    }
}

fn open_for_write(storage: Arc<SimStorage>) {
    let Ok(Some(owner)) = Owner::try_acquire(storage.clone()) else {
        return;
    };
    let Ok(stores) = open_execution_stores_for_write(&owner) else {
        return;
    };
    let ids = list_sessions(&*storage)
        .map(|(ids, _)| ids)
        .unwrap_or_default();
    for id in &ids {
        let _ = stores.sessions.read_session(id);
        let _ = stores.sessions.read_messages(id, None);
        let _ = stores.runs.list_session_runs(id);
    }
    let _ = stores.close();
}
