//! What the report shows, read once from the root through the stores' read-only APIs.

use makalog::index::RuntimeInvocation;
use makalog::model::{RunHeader, SessionHeader, StoredMessage};
use makalog::storage::Storage;
use makalog::store::{ReadOnlySessions, Sidecars};
use makalog::verify::VerifyReport;
use serde_json::Value;

/// One run and its lifecycle events.
pub struct Run {
    pub header: RunHeader,
    pub events: Vec<String>,
}

/// One session as the page keeps it: what its tree shows, and its section, written as soon as
/// the session was read (holding every session's records until the page is written would cost
/// the root's size again in memory).
pub struct Session {
    pub id: String,
    /// Its latest header; `None` when it has none or it could not be read.
    pub header: Option<SessionHeader>,
    /// Its section of the page.
    pub section: String,
}

/// Everything a session's section shows, read once and dropped once the section is written.
pub struct SessionRead {
    pub session: Session,
    pub runs: Vec<Run>,
    pub messages: Vec<StoredMessage>,
    pub invocations: Vec<RuntimeInvocation>,
    pub claims: Vec<Value>,
    /// Why part of it could not be read (damage), if so.
    pub unreadable: Option<String>,
}

static NO_HEADER: Value = Value::Null;

impl Session {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its status, or `unreadable` when its header could not be read.
    pub fn status(&self) -> &str {
        self.header.as_ref().map_or("unreadable", |h| h.status())
    }

    /// Its header's fields (JSON null when it has none).
    pub fn value(&self) -> &Value {
        self.header.as_ref().map_or(&NO_HEADER, |h| h.value())
    }

    /// The session it is a subagent of.
    pub fn parent(&self) -> Option<&str> {
        self.header.as_ref()?.subagent_parent_session()
    }
}

/// The root as the report shows it.
pub struct Gathered {
    pub verify: VerifyReport,
    pub sessions: Vec<Session>,
    /// Every claim, as `makalog claims --json` lists them.
    pub claims: Vec<Value>,
}

pub fn gather(
    storage: &dyn Storage,
    sidecars: Sidecars,
    progress: &(dyn Fn() + Sync),
) -> makalog::Result<Gathered> {
    let verify = makalog::verify::verify_root(storage)?;
    let tables = match crate::claims::read_claims(storage) {
        Ok(Some(replay)) => replay.tables,
        _ => Default::default(),
    };
    let claims = crate::claims::claims_by_session(&tables);
    let reads = ReadOnlySessions::with(storage, sidecars);
    let (ids, _) = makalog::segment::layout::list_sessions(storage)?;
    // Every session on every core; one that cannot be read is shown as such, never dropped.
    let mut sessions = makalog::parallel::map(&ids, |id| {
        let mut read = SessionRead {
            session: Session {
                id: id.clone(),
                header: None,
                section: String::new(),
            },
            runs: Vec::new(),
            messages: Vec::new(),
            invocations: Vec::new(),
            claims: claims.get(id).cloned().unwrap_or_default(),
            unreadable: None,
        };
        if let Err(e) = read_session(storage, (&reads, sidecars), id, &mut read) {
            read.unreadable = Some(e.to_string());
        }
        let mut section = String::new();
        super::html::section(&mut section, &read);
        progress();
        Session {
            section,
            ..read.session
        }
    });
    // As the session store lists them: by createdAt, then id.
    let created = |s: &Session| s.value()["createdAt"].as_f64().unwrap_or(0.0);
    sessions.sort_by(|a, b| {
        created(a)
            .total_cmp(&created(b))
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(Gathered {
        verify,
        sessions,
        claims: tables.to_json_lines(None),
    })
}

fn read_session(
    storage: &dyn Storage,
    (reads, sidecars): (&ReadOnlySessions<'_>, Sidecars),
    id: &str,
    s: &mut SessionRead,
) -> makalog::Result<()> {
    // One view of the session answers everything shown of it; without one, its header is
    // still shown if it can be read.
    let view = match crate::invocations::view_of(storage, id, sidecars) {
        Ok(view) => view,
        Err(e) => {
            s.session.header = reads.read_session(id).ok().flatten();
            return Err(e);
        }
    };
    // Each part on its own: a damaged message leaves the header and runs on the page.
    let contents = reads.contents(id, &view.session)?;
    let mut first_error = None;
    let mut note = |e: makalog::Error| {
        first_error.get_or_insert(e);
    };
    match contents.header {
        Ok(header) => s.session.header = header,
        Err(e) => note(e),
    }
    match contents.runs {
        Ok(runs) => {
            for (header, events) in runs {
                let events = events
                    .iter()
                    .map(|(_, e)| e.event_type().to_owned())
                    .collect();
                s.runs.push(Run { header, events });
            }
        }
        Err(e) => note(e),
    }
    match contents.messages {
        Ok(messages) => s.messages = messages,
        Err(e) => note(e),
    }
    match makalog::index::invocations_from_log(storage, &view) {
        Ok(invocations) => s.invocations = invocations,
        Err(e) => note(e),
    }
    first_error.map_or(Ok(()), Err)
}
