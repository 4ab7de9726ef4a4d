//! The execution composition: the stores of an owned root and the runtime over them, with
//! recovery at start and a close that reports a journey's error and its own together.

use super::backend::BackendRegistry;
use super::manager::SessionManager;
use super::restart::RecoveryReport;
use super::sources::Sources;
use crate::error::{Error, Result};
use crate::root::Owner;
use crate::segment::WriterConfig;
use crate::store::{open_execution_stores_with, ExecutionStores};
use std::sync::Arc;

/// A root's stores and its runtime.
pub struct ExecutionComposition {
    stores: Arc<ExecutionStores>,
    manager: SessionManager,
}

impl ExecutionComposition {
    /// Opens the stores of `owner`'s root and a runtime with `registry`'s backends.
    pub fn open(owner: &Owner, registry: BackendRegistry, sources: Sources) -> Result<Self> {
        Self::open_with(owner, WriterConfig::default(), registry, sources)
    }

    /// [`ExecutionComposition::open`] with the sessions' writer configuration given.
    pub fn open_with(
        owner: &Owner,
        config: WriterConfig,
        registry: BackendRegistry,
        sources: Sources,
    ) -> Result<Self> {
        let stores = Arc::new(open_execution_stores_with(owner, config)?);
        let manager = SessionManager::new(stores.clone(), registry, sources)?;
        Ok(ExecutionComposition { stores, manager })
    }

    /// The runtime.
    pub fn manager(&self) -> &SessionManager {
        &self.manager
    }

    /// The stores.
    pub fn stores(&self) -> &ExecutionStores {
        &self.stores
    }

    /// Recovery at start: ends every interrupted run.
    pub fn recover(&self) -> Result<RecoveryReport> {
        self.manager.recover_interrupted_sessions()
    }

    /// Disposes of the backends and closes the stores (synced, sidecars written). A turn still
    /// running holds the stores, and the close then fails ("still in use"): a caller in an
    /// async context uses [`ExecutionComposition::shutdown`], which waits for them.
    pub fn close(self) -> Result<()> {
        let disposed = self.manager.dispose();
        self.close_stores(disposed)
    }

    /// Disposes of the backends, waits until every turn stopped by it has ended, then closes
    /// the stores.
    pub async fn shutdown(self) -> Result<()> {
        let disposed = self.manager.shutdown().await;
        self.close_stores(disposed)
    }

    /// Closes the stores once the runtime was disposed of (`disposed` its answer).
    fn close_stores(self, disposed: Result<()>) -> Result<()> {
        let ExecutionComposition { stores, manager } = self;
        drop(manager);
        let closed = Arc::try_unwrap(stores)
            .map_err(|_| {
                Error::InvalidInput(
                    "the composition's stores are still in use while it closes".into(),
                )
            })
            .and_then(ExecutionStores::close);
        Error::all(
            "the runtime's disposal and the stores' close failed",
            [disposed, closed],
        )
    }

    /// Closes after `journey`: its answer when both succeed; its error or the close's when one
    /// fails; both, as [`Error::Several`], when both fail.
    pub fn close_after<T>(self, journey: Result<T>) -> Result<T> {
        match (journey, self.close()) {
            (Ok(t), Ok(())) => Ok(t),
            (Err(e), Ok(())) | (Ok(_), Err(e)) => Err(e),
            (Err(journey), Err(close)) => Err(Error::Several {
                what: "the journey and the composition's close both failed".into(),
                errors: vec![journey, close],
            }),
        }
    }
}
