//! What a recovered root answers through the stores, read three ways that must agree: the
//! write stores just opened (recovered, spawns completed), the read-only stores over the files
//! they closed (served from the sidecars), and the read-only stores over the segments alone
//! (every sidecar removed). Every sidecar must also equal a rebuild byte for byte.

use super::{canonical, config, parent, PARENTS, TURNS};
use makalog::index::{encode_sidecar, rebuild};
use makalog::root::{create_or_open_root, Owner};
use makalog::storage::{SimStorage, Storage};
use makalog::store::{open_execution_stores_with, ExecutionStores, ReadOnlySessions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

type Key = (String, String);
type RunEvents = makalog::Result<Vec<(u64, makalog::model::RunEvent)>>;

/// The stores' answers about a root, as compared between views and recoveries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoreView {
    /// `list_sessions`: each session's latest header (canonical JSON), in listed order.
    pub sessions: Vec<(String, String)>,
    /// `read_messages` of each session.
    pub messages: BTreeMap<String, Vec<String>>,
    /// `list_session_runs` of each session: run ids with their headers.
    pub runs: BTreeMap<String, Vec<(String, String)>>,
    /// `read_events` of each run, with their sequence numbers.
    pub run_events: BTreeMap<Key, Vec<(u64, String)>>,
    /// Only through the write stores: admissions and rejections of each root session's turns,
    /// the runtime events of each session (ids), and the spawn claims (child id by spawn key).
    pub admissions: BTreeMap<Key, String>,
    pub rejections: BTreeMap<Key, String>,
    pub runtime_events: BTreeMap<String, Vec<String>>,
    pub spawn_claims: BTreeMap<String, String>,
}

fn err(what: &str) -> impl Fn(makalog::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// The session, message and run views, read with the given calls.
fn common(
    list: &dyn Fn() -> makalog::Result<Vec<makalog::model::SessionHeader>>,
    messages: &dyn Fn(&str) -> makalog::Result<Vec<makalog::model::StoredMessage>>,
    runs: &dyn Fn(&str) -> makalog::Result<Vec<makalog::model::RunHeader>>,
    events: &dyn Fn(&str, &str) -> RunEvents,
) -> Result<StoreView, String> {
    let mut view = StoreView::default();
    for h in list().map_err(err("list_sessions"))? {
        let id = h.id().to_owned();
        let m = messages(&id).map_err(err("read_messages"))?;
        view.messages
            .insert(id.clone(), m.iter().map(|m| canonical(m.value())).collect());
        let mut listed = Vec::new();
        for r in runs(&id).map_err(err("list_session_runs"))? {
            let e = events(&id, r.run_id()).map_err(err("read_events"))?;
            view.run_events.insert(
                (id.clone(), r.run_id().to_owned()),
                e.iter().map(|(n, e)| (*n, canonical(e.value()))).collect(),
            );
            listed.push((r.run_id().to_owned(), canonical(r.value())));
        }
        view.runs.insert(id.clone(), listed);
        view.sessions.push((id, canonical(h.value())));
    }
    Ok(view)
}

fn through_stores(s: &ExecutionStores) -> Result<StoreView, String> {
    let mut view = common(
        &|| s.sessions.list_sessions(),
        &|id| s.sessions.read_messages(id, None),
        &|id| s.runs.list_session_runs(id),
        &|id, run| s.runs.read_events(id, run),
    )?;
    for n in 0..PARENTS {
        for t in 0..TURNS {
            let turn = format!("t{t}");
            if let Some(a) = s
                .runs
                .read_root_turn_admission(&parent(n), &turn)
                .map_err(err("read_root_turn_admission"))?
            {
                view.admissions
                    .insert((parent(n), turn.clone()), canonical(a.value()));
            }
            if let Some(r) = s
                .runs
                .read_root_turn_start_rejection(&parent(n), &turn)
                .map_err(err("read_root_turn_start_rejection"))?
            {
                view.rejections
                    .insert((parent(n), turn), canonical(r.value()));
            }
        }
    }
    for (id, _) in view.sessions.clone() {
        let events = s
            .runtime_events
            .read_session_runtime_events(&id)
            .map_err(err("runtime events"))?;
        view.runtime_events
            .insert(id, events.iter().map(|e| e.id().to_owned()).collect());
    }
    for c in s
        .claims
        .list_subagent_spawn_claims()
        .map_err(err("spawn claims"))?
    {
        view.spawn_claims.insert(
            format!("{}/{}", c.parent_session_id, c.tool_call_id),
            c.child_session_id,
        );
    }
    Ok(view)
}

fn read_only(storage: &dyn Storage) -> Result<StoreView, String> {
    let r = ReadOnlySessions::new(storage);
    common(
        &|| r.list_sessions(),
        &|id| r.read_messages(id, None),
        &|id| r.list_session_runs(id),
        &|id, run| r.read_run_events(id, run),
    )
}

/// The answers with only what the write stores see kept (what read-only stores answer too).
fn shared(v: &StoreView) -> StoreView {
    StoreView {
        sessions: v.sessions.clone(),
        messages: v.messages.clone(),
        runs: v.runs.clone(),
        run_events: v.run_events.clone(),
        ..StoreView::default()
    }
}

/// Opens the stores of `storage`'s root, reads every answer through them, and closes them.
fn open_and_read(storage: &Arc<SimStorage>) -> Result<StoreView, String> {
    create_or_open_root(&**storage).map_err(err("root"))?;
    let owner = Owner::try_acquire(storage.clone())
        .map_err(err("lease"))?
        .ok_or("lease busy after a crash")?;
    let stores = open_execution_stores_with(&owner, config()).map_err(err("open stores"))?;
    // Sessions not open are read through read-only views of their files; opening each for
    // writing recovers it. Both must answer the same.
    let view = through_stores(&stores)?;
    let dirs = match storage.list_dir(Path::new("sessions")) {
        Ok(dirs) => dirs,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("list sessions: {e}")),
    };
    for d in dirs {
        stores
            .runtime_events
            .open_session_now(&d.name)
            .map_err(err("open session"))?;
    }
    if through_stores(&stores)? != view {
        return Err("the recovered sessions answer otherwise than their read-only views".into());
    }
    stores.close().map_err(err("close stores"))?;
    Ok(view)
}

/// Opens the stores (recovering the root and completing interrupted spawns), reads every
/// answer, closes them, and checks the read-only views and every sidecar against it.
pub fn recover(storage: &Arc<SimStorage>) -> Result<StoreView, String> {
    let view = open_and_read(storage)?;
    if read_only(&**storage)? != shared(&view) {
        return Err("the read-only stores answer otherwise than the recovered stores".into());
    }
    // Sidecars are written without a sync (a cache): the ones the close wrote are live.
    let is_sidecar = |path: &Path| {
        path.parent().and_then(Path::parent) == Some(Path::new("sessions"))
            && path.ends_with("index")
    };
    for (path, bytes) in storage.live_files().iter().filter(|(p, _)| is_sidecar(p)) {
        let id = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .ok_or("a sidecar outside a session")?;
        let rebuilt = rebuild(&**storage, id).map_err(err("rebuild"))?;
        let want = encode_sidecar(&rebuilt, &[]).map_err(|e| format!("encode: {}", e.what))?;
        if *bytes != want {
            return Err(format!("{id}: the sidecar differs from a rebuild"));
        }
    }
    let bare = storage
        .durable_files()
        .into_iter()
        .filter(|(p, _)| !is_sidecar(p))
        .collect();
    let segments_only = Arc::new(SimStorage::new());
    super::super::scenario::restore(&segments_only, &bare);
    let alone = read_only(&*segments_only)?;
    if alone != shared(&view) {
        return Err(format!(
            "the segments alone answer otherwise than the sidecars:\n  {alone:?}\n  {view:?}"
        ));
    }
    if open_and_read(&segments_only)? != view {
        return Err("the stores over the segments alone answer otherwise".into());
    }
    Ok(view)
}
