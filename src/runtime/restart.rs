//! Recovery at start (MAKA-MODEL §12): every run a restart left without its terminal commit,
//! in every session that is not archived, is ended as `recover_run` says. Sessions are read
//! through their views (a session not open is read from its files, nothing written); a
//! session that cannot be read is reported and skipped, never guessed at.

use super::manager::SessionManager;
use super::recover::{recover_run, RecoveredRun};
use crate::error::Result;
use serde_json::json;

/// What recovery at start did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RecoveryReport {
    /// Sessions looked at.
    pub sessions: usize,
    /// The runs ended, in session order.
    pub recovered: Vec<RecoveredRun>,
    /// Sessions or runs that could not be read or ended, with why.
    pub skipped: Vec<(String, String)>,
}

impl SessionManager {
    /// Ends every interrupted run of the root's idle, non-archived sessions. Run again, it
    /// finds nothing more to do.
    pub fn recover_interrupted_sessions(&self) -> Result<RecoveryReport> {
        let stores = self.stores();
        let mut report = RecoveryReport::default();
        for header in stores.sessions.list_sessions()? {
            if header.value()["isArchived"] == json!(true) {
                continue;
            }
            report.sessions += 1;
            let id = header.id();
            let runs = match stores.runs.list_unfinished_runs(id) {
                Ok(runs) => runs,
                Err(e) => {
                    report.skipped.push((id.to_owned(), e.to_string()));
                    continue;
                }
            };
            for run in runs {
                match recover_run(&self.inner, &run) {
                    Ok(done) => report.recovered.push(done),
                    Err(e) => report
                        .skipped
                        .push((format!("{id}/{}", run.run_id()), e.to_string())),
                }
            }
        }
        Ok(report)
    }
}
