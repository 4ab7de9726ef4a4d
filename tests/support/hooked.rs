//! A runtime whose next id drawn after a hook is armed runs the hook first: a host's write
//! landing at a chosen point of a turn (its opening draws ids after it reads the header; its
//! stream and its end draw more).

use makalog::runtime::{BackendRegistry, SessionManager, Sources};
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::json;
use std::sync::{Arc, Mutex};

type Hook = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// The stores, a manager over them (the fake backend, a clock ticking from 1,780,000,000,000)
/// with session `s`, and the hook its ids run.
pub struct Hooked {
    pub stores: Arc<ExecutionStores>,
    pub manager: SessionManager,
    hook: Hook,
}

impl Hooked {
    /// Over a new root in `storage` (whose owner it takes).
    pub fn new(storage: &Arc<makalog::storage::RealStorage>) -> Hooked {
        let owner = super::owner(storage);
        let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
        let hook: Hook = Arc::default();
        let (ids, on_id) = (Sources::system(), hook.clone());
        let tick = std::sync::atomic::AtomicU64::new(1_780_000_000_000);
        let sources = Sources::new(
            move || {
                if let Some(run) = on_id.lock().expect("hook").take() {
                    run();
                }
                ids.new_id()
            },
            move || tick.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64,
        );
        let manager = SessionManager::new(stores.clone(), BackendRegistry::with_fake(), sources)
            .expect("manager");
        manager
            .create_session(json!({"id": "s", "cwd": "/work", "backend": "fake",
                                   "llmConnectionSlug": "fake", "model": "fake-model"}))
            .expect("session");
        Hooked {
            stores,
            manager,
            hook,
        }
    }

    /// Runs `run` on the next id drawn.
    pub fn arm(&self, run: impl FnOnce() + Send + 'static) {
        *self.hook.lock().expect("hook") = Some(Box::new(run));
    }

    /// Whether the hook armed last has run.
    pub fn fired(&self) -> bool {
        self.hook.lock().expect("hook").is_none()
    }
}
