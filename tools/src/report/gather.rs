//! What the report shows, read once from the root through the stores' read-only APIs.

use makalog::index::RuntimeInvocation;
use makalog::model::{RunHeader, SessionHeader, StoredMessage};
use makalog::storage::Storage;
use makalog::store::ReadOnlySessions;
use makalog::verify::VerifyReport;
use serde_json::Value;

/// One run and its lifecycle events.
pub struct Run {
    pub header: RunHeader,
    pub events: Vec<String>,
}

/// Everything shown of one session.
pub struct Session {
    pub header: SessionHeader,
    pub runs: Vec<Run>,
    pub messages: Vec<StoredMessage>,
    pub invocations: Vec<RuntimeInvocation>,
    pub claims: Vec<Value>,
    /// Why part of it could not be read (damage), if so.
    pub unreadable: Option<String>,
}

/// The root as the report shows it.
pub struct Gathered {
    pub verify: VerifyReport,
    pub sessions: Vec<Session>,
    /// Every claim, as `makalog claims --json` lists them.
    pub claims: Vec<Value>,
}

pub fn gather(storage: &dyn Storage, progress: &dyn Fn()) -> makalog::Result<Gathered> {
    let verify = makalog::verify::verify_root(storage)?;
    let tables = match crate::claims::read_claims(storage) {
        Ok(Some(replay)) => replay.tables,
        _ => Default::default(),
    };
    let reads = ReadOnlySessions::new(storage);
    let mut sessions = Vec::new();
    for header in reads.list_sessions()? {
        let id = header.id().to_owned();
        let mut s = Session {
            header,
            runs: Vec::new(),
            messages: Vec::new(),
            invocations: Vec::new(),
            claims: crate::claims::claims_of(&tables, &id),
            unreadable: None,
        };
        if let Err(e) = read_session(storage, &reads, &id, &mut s) {
            s.unreadable = Some(e.to_string());
        }
        sessions.push(s);
        progress();
    }
    Ok(Gathered {
        verify,
        sessions,
        claims: tables.to_json_lines(None),
    })
}

fn read_session(
    storage: &dyn Storage,
    reads: &ReadOnlySessions<'_>,
    id: &str,
    s: &mut Session,
) -> makalog::Result<()> {
    for header in reads.list_session_runs(id)? {
        let events = reads
            .read_run_events(id, header.run_id())?
            .iter()
            .map(|(_, e)| e.event_type().to_owned())
            .collect();
        s.runs.push(Run { header, events });
    }
    s.messages = reads.read_messages(id, None)?;
    let view = crate::index::view_of(storage, id)?;
    s.invocations = makalog::index::invocations_from_log(storage, &view)?;
    Ok(())
}
