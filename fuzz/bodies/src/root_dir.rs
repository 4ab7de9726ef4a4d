//! The whole-root target: a root directory built from fuzzed files, read by everything that
//! reads a root it does not trust, then opened for writing.

use crate::archive::unpack;
use crate::sim_root::with_files;
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
    let sessions = ReadOnlySessions::new(storage);
    let _ = sessions.list_sessions();
    for id in &ids {
        let _ = sessions.read_session(id);
        let _ = sessions.read_messages(id, None);
        for run in sessions.list_session_runs(id).unwrap_or_default() {
            let _ = sessions.read_run_events(id, run.run_id());
        }
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
