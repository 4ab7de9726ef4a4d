//! Recovering a crashed root: opening it for writing and reading everything back.

use super::*;

/// The state a recovery leaves, as compared between recoveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub sessions: BTreeMap<usize, Vec<Vec<u8>>>,
    pub claims: Vec<serde_json::Value>,
    /// The event session's immutable events in commit order (canonical JSON).
    pub events: Vec<String>,
    /// Each small session's immutable events in commit order.
    pub small: BTreeMap<u32, Vec<String>>,
}

/// Opens the root for writing (which recovers it) and reads everything back. Any error is a
/// failed invariant: crashes never leave damage that recovery may refuse.
pub fn recover(storage: &Arc<SimStorage>) -> Result<Recovered, String> {
    create_or_open_root(&**storage).map_err(|e| format!("root: {e}"))?;
    let owner = Owner::try_acquire(storage.clone())
        .map_err(|e| format!("lease: {e}"))?
        .ok_or("lease busy after a crash")?;
    let mut sessions = BTreeMap::new();
    for (i, id) in SESSIONS.iter().enumerate() {
        let (w, _) =
            SegmentWriter::open(&owner, id, config()).map_err(|e| format!("open {id}: {e}"))?;
        drop(w);
        let records: Result<Vec<Vec<u8>>, String> = SessionReader::open(&**storage, id, 1)
            .map_err(|e| format!("reader {id}: {e}"))?
            .map(|r| r.map(|r| r.payload).map_err(|e| format!("read {id}: {e}")))
            .collect();
        sessions.insert(i, records?);
    }
    let (log, _) = ClaimsLog::open(&owner).map_err(|e| format!("claims: {e}"))?;
    drop(log);
    let bytes = storage
        .read_file(std::path::Path::new(makalog::claims::CLAIMS_FILE))
        .map_err(|e| format!("claims.log: {e}"))?;
    let id = makalog::root::read_marker(&**storage)
        .and_then(|m| m.root_id_bytes())
        .map_err(|e| format!("marker: {e}"))?;
    let replay = makalog::claims::replay_claims(&bytes, &id);
    if !replay.problems.is_empty() {
        return Err(format!("claims after recovery: {:?}", replay.problems));
    }
    let events = recover_events(storage, &owner)?;
    let small = recover_small(storage, &owner)?;
    Ok(Recovered {
        sessions,
        claims: replay.tables.to_json_lines(None),
        events,
        small,
    })
}

/// Opens the event store (recovering its session and index), checks that the index answers
/// what a rebuild from the events alone answers and that the sidecar it writes on close equals
/// a rebuild byte for byte, and returns the immutable events in commit order.
fn recover_events(storage: &Arc<SimStorage>, owner: &Owner) -> Result<Vec<String>, String> {
    let store = RuntimeEventStore::open(owner, config());
    let dir = std::path::Path::new("sessions").join(EVENT_SESSION);
    let exists = storage
        .entry_kind(&dir)
        .map_err(|e| format!("stat: {e}"))?
        .is_some();
    // Reads of a session that is not open go through a read-only view of its files; opening
    // it for writing recovers it. Both must answer the same.
    let read_only = store
        .list_session_invocations(EVENT_SESSION)
        .map_err(|e| format!("read-only view: {e}"))?;
    if exists {
        store
            .open_session_now(EVENT_SESSION)
            .map_err(|e| format!("event store: {e}"))?;
    }
    let listed = store
        .list_session_invocations(EVENT_SESSION)
        .map_err(|e| format!("event store: {e}"))?;
    if listed != read_only {
        return Err("the read-only view disagrees with the recovered session".into());
    }
    let events = store
        .read_session_runtime_events(EVENT_SESSION)
        .map_err(|e| format!("events: {e}"))?;
    if listed != runtime_invocations_from_session_events(EVENT_SESSION, &events) {
        return Err("the invocation index disagrees with a rebuild from the events".into());
    }
    store
        .close()
        .map_err(|e| format!("event store close: {e}"))?;
    if !exists {
        return if listed.is_empty() {
            Ok(Vec::new())
        } else {
            Err("invocations listed for a session with no directory".into())
        };
    }
    let view = rebuild(&**storage, EVENT_SESSION).map_err(|e| format!("rebuild: {e}"))?;
    let want = encode_sidecar(&view, &[]).map_err(|e| format!("encode: {}", e.what))?;
    let path = std::path::Path::new("sessions")
        .join(EVENT_SESSION)
        .join("index");
    let got = storage
        .read_file(&path)
        .map_err(|e| format!("sidecar: {e}"))?;
    if got != want {
        return Err("the sidecar differs from a rebuild".into());
    }
    let mut out = Vec::new();
    for record in
        SessionReader::open(&**storage, EVENT_SESSION, 1).map_err(|e| format!("reader: {e}"))?
    {
        let r = record.map_err(|e| format!("read events: {e}"))?;
        let text = String::from_utf8(r.payload).map_err(|_| "event is not UTF-8".to_owned())?;
        let e = RuntimeEvent::decode(&text).map_err(|e| format!("event: {e}"))?;
        if !e.partial() {
            out.push(text);
        }
    }
    Ok(out)
}

/// Opens every small session through a store with room for [`SMALL_OPEN`] (so recovery itself
/// evicts), checks that the read-only view of each answers what the recovered session does,
/// closes the store, and checks each sidecar equals a rebuild byte for byte and each segment
/// ends where its data ends (a clean close cut the zeros).
fn recover_small(
    storage: &Arc<SimStorage>,
    owner: &Owner,
) -> Result<BTreeMap<u32, Vec<String>>, String> {
    let store = RuntimeEventStore::with_open_limit(owner, small_config(), SMALL_OPEN);
    let mut out = BTreeMap::new();
    let mut present = Vec::new();
    for n in 0..SMALL_SESSIONS {
        let id = small_session(n);
        let dir = std::path::Path::new("sessions").join(&id);
        let exists = storage
            .entry_kind(&dir)
            .map_err(|e| format!("stat: {e}"))?
            .is_some();
        let read_only = store
            .list_session_invocations(&id)
            .map_err(|e| format!("{id} read-only view: {e}"))?;
        if !exists {
            if !read_only.is_empty() {
                return Err(format!("{id}: invocations listed with no directory"));
            }
            continue;
        }
        present.push(id.clone());
        store
            .open_session_now(&id)
            .map_err(|e| format!("{id}: {e}"))?;
        let listed = store
            .list_session_invocations(&id)
            .map_err(|e| format!("{id}: {e}"))?;
        if listed != read_only {
            return Err(format!("{id}: the read-only view disagrees with recovery"));
        }
        let events = store
            .read_session_runtime_events(&id)
            .map_err(|e| format!("{id} events: {e}"))?;
        if listed != runtime_invocations_from_session_events(&id, &events) {
            return Err(format!("{id}: the index disagrees with a rebuild"));
        }
        let mut committed = Vec::new();
        for r in SessionReader::open(&**storage, &id, 1).map_err(|e| format!("{id}: {e}"))? {
            let r = r.map_err(|e| format!("{id} read: {e}"))?;
            committed.push(String::from_utf8(r.payload).map_err(|_| "not UTF-8".to_owned())?);
        }
        // An empty session equals an absent one (the harness's restore keeps files only).
        if !committed.is_empty() {
            out.insert(n, committed);
        }
    }
    store
        .close()
        .map_err(|e| format!("small store close: {e}"))?;
    for id in present {
        let view = rebuild(&**storage, &id).map_err(|e| format!("rebuild {id}: {e}"))?;
        let want = encode_sidecar(&view, &[]).map_err(|e| format!("encode: {}", e.what))?;
        let dir = std::path::Path::new("sessions").join(&id);
        let got = storage
            .read_file(&dir.join("index"))
            .map_err(|e| format!("{id} sidecar: {e}"))?;
        if got != want {
            return Err(format!("{id}: the sidecar differs from a rebuild"));
        }
        let seg = makalog::segment::layout::list_session(&**storage, &id)
            .map_err(|e| format!("{id}: {e}"))?
            .segments
            .pop()
            .ok_or("no segment")?;
        let bytes = storage
            .read_file(&seg.path)
            .map_err(|e| format!("{id}: {e}"))?;
        if let makalog::segment::ScanResult::Scanned(scan) = makalog::segment::scan_segment(&bytes)
        {
            if scan.data_end != bytes.len() as u64 {
                return Err(format!(
                    "{id}: {} bytes after a clean close, data ends at {}",
                    bytes.len(),
                    scan.data_end
                ));
            }
        }
    }
    Ok(out)
}
