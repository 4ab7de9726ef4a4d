//! A new version of a session's header that sets some of its fields (a status, a lock, a
//! time), made from the header the session holds when it is queued, under the session's lock:
//! a host's update written between the runtime's read of the header and its write (a rename,
//! a flag, an archive) stays, instead of being overwritten by a whole header read before it.

use super::sessions::header_of;
use crate::error::{Error, Result};
use crate::index::SessionState;
use crate::model::SessionHeader;
use serde_json::{Map, Value};

/// Fields to set on a session's header, and the version they make of the header read first.
#[derive(Debug, Clone)]
pub(crate) struct HeaderPatch {
    /// The canonical JSON of the header `made` was made from.
    base: String,
    made: SessionHeader,
    fields: Map<String, Value>,
}

impl HeaderPatch {
    /// The members of `fields`, a JSON object, set on `base`; checked as any header is: refused
    /// with nothing written.
    pub(crate) fn new(base: &SessionHeader, fields: Value) -> Result<HeaderPatch> {
        let Value::Object(fields) = fields else {
            return Err(Error::InvalidInput(
                "a header's fields to set are a JSON object".into(),
            ));
        };
        debug_assert!(
            fields.iter().all(|(k, v)| crate::model::is_runtime_field(
                k,
                &crate::event::canonical_string(v)
            )),
            "only the members a host's header leaves room for: {fields:?}"
        );
        Ok(HeaderPatch {
            base: base.canonical_json().to_owned(),
            made: with_fields(base, &fields)?,
            fields,
        })
    }

    /// The version made of the header read first: what is written unless the header changed.
    pub(crate) fn made(&self) -> &SessionHeader {
        &self.made
    }

    /// The header to queue on `state`, the session's state under its lock: the version made
    /// first while the header is still the one read (almost always: nothing decoded again),
    /// else the fields set on the header it holds now.
    pub(crate) fn on(&self, state: &SessionState) -> Result<SessionHeader> {
        if state.header.as_deref() == Some(self.base.as_str()) {
            return Ok(self.made.clone());
        }
        match header_of(state)? {
            Some(now) => with_fields(&now, &self.fields),
            None => Ok(self.made.clone()),
        }
    }
}

fn with_fields(header: &SessionHeader, fields: &Map<String, Value>) -> Result<SessionHeader> {
    let mut next = header.value().clone();
    if let Value::Object(m) = &mut next {
        m.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    SessionHeader::from_value(next)
}
