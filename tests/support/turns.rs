//! What the turn tests share: a root with a SessionManager over the fake backend, a session,
//! a prompt, the labels of a session's records in order, and waiting for an event kind.

use makalog::format::RecordKind;
use makalog::runtime::{BackendRegistry, SessionEvent, SessionManager, Sources, Turn, TurnInput};
use makalog::storage::RealStorage;
use makalog::store::open_execution_stores_for_write;
use serde_json::{json, Value};
use std::sync::Arc;

pub struct Fixture {
    _t: tempfile::TempDir,
    pub storage: Arc<RealStorage>,
    _owner: makalog::root::Owner,
    pub manager: SessionManager,
}

pub fn fixture() -> Fixture {
    let (t, storage) = super::temp_root();
    let owner = super::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = SessionManager::new(stores, BackendRegistry::with_fake(), ticking_sources())
        .expect("manager");
    Fixture {
        _t: t,
        storage,
        _owner: owner,
        manager,
    }
}

/// The system's ids and a clock that advances one ms a reading: the times the tests compare
/// say which reading came first, whatever the machine's wall clock does meanwhile (a stepped
/// clock made a wall-clock comparison fail in CI).
pub fn ticking_sources() -> Sources {
    let ids = Sources::system();
    let tick = std::sync::atomic::AtomicU64::new(1_780_000_000_000);
    Sources::new(
        move || ids.new_id(),
        move || tick.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64,
    )
}

pub fn session(f: &Fixture) -> String {
    f.manager
        .create_session(
            json!({"cwd": "/work", "backend": "fake", "llmConnectionSlug": "fake",
                               "model": "fake-model"}),
        )
        .expect("session")
        .id()
        .to_owned()
}

pub fn text(t: &str) -> TurnInput {
    TurnInput {
        text: t.into(),
        ..TurnInput::default()
    }
}

/// Each record of the session's log as a short label, in log order.
pub fn labels(storage: &RealStorage, session: &str) -> Vec<String> {
    super::read_all(storage, session)
        .expect("read")
        .iter()
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.payload).expect("json");
            let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
            match r.kind {
                RecordKind::SessionHeader => format!("header:{}", s("status")),
                RecordKind::Run => format!("run:{}", s("status")),
                RecordKind::RunEvent => format!("run_event:{}", s("type")),
                RecordKind::Message => match s("type").as_str() {
                    "turn_state" => format!("turn_state:{}", s("status")),
                    t => format!("message:{t}"),
                },
                RecordKind::RuntimeEvent if v["partial"] == json!(true) => "partial".into(),
                RecordKind::RuntimeEvent if v.get("status").is_some() => {
                    format!("terminal:{}", s("status"))
                }
                RecordKind::RuntimeEvent => {
                    format!(
                        "event:{}:{}",
                        s("role"),
                        v["content"]["kind"].as_str().unwrap_or("")
                    )
                }
                other => other.name().to_owned(),
            }
        })
        .collect()
}

pub async fn events_until(turn: &mut Turn, kind: &str) -> SessionEvent {
    loop {
        let e = turn.events.recv().await.expect("the stream ended early");
        if e.type_name() == kind {
            return e;
        }
    }
}

/// The bytes of the root's open-runs file (the runs recovery would visit), none when absent.
pub fn open_runs(root: &std::path::Path) -> Vec<u8> {
    std::fs::read(root.join(makalog::runtime::OPEN_RUNS_FILE)).unwrap_or_default()
}
