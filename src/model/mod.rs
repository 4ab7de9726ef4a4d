//! The records of the session ledger besides runtime events (MAKA-MODEL §5–§8): session
//! headers with their subagent objects, stored messages, run headers and run events, and root-turn admissions and start rejections. Each is decoded strictly from JSON
//! (every field checked, unknown keys refused, a typed [`Error::InvalidRecord`] naming the
//! field) and kept as its canonical JSON (keys sorted, numbers in one form), which is what a
//! store writes. Pure: no I/O.
//!
//! Decisions where the model leaves a choice:
//!
//! - Free-form members (`attachments`, `args`, `providerOptions`, `data`, …) are any JSON of
//!   the right JSON type; the ids of the subagent objects are "lids" (1 to 512 UTF-16 code
//!   units, no control character), except `subagentSpawn.initialTurnId` and `initialRunId`,
//!   which name a turn and a run and so are safe ids (§7).
//! - A legacy `permissionMode` of `execute` is stored as `ask`, as the original reads it.
//! - Lone UTF-16 surrogates are refused, as for runtime events.
//! - `subagentRuntime.permissionCeiling` (`explore`/`ask`/`bypass`) is accepted though
//!   MAKA-MODEL does not list it: the original's own test (seed 000) sets it.
//! - A `turnOrchestration` is exactly `{mode, source}`, mode `default`/`swarm`/`graph` and
//!   source `slash_command`/`host_api` (the original's sets; MAKA-MODEL names only the pair a
//!   supervisor wake requires).
//! - A `skillInvocation` is any object; a start rejection's must hold `loaded: []` and a
//!   non-empty `failed` array (the original's rule), whose entries are free-form.

/// Defines a decoded record type `$name` over [`Decoded`]: strict decoding from JSON text or a
/// value by `$decode`, its errors naming `$record`, and its canonical JSON and value.
macro_rules! record_type {
    ($(#[$doc:meta])* $name:ident, $record:expr, $decode:expr) => {
        $(#[$doc])*
        ///
        /// Immutable once decoded, and shared: a clone (a listing's copy of a catalog entry)
        /// costs a reference count.
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name(std::sync::Arc<super::Decoded>);

        impl $name {
            /// Strictly decodes one from JSON text.
            pub fn decode(json: &str) -> crate::error::Result<$name> {
                super::decode_text($record, json, $decode).map(|d| $name(std::sync::Arc::new(d)))
            }

            /// Strictly decodes one from a JSON value.
            pub fn from_value(value: serde_json::Value) -> crate::error::Result<$name> {
                super::decode_value($record, value, $decode).map(|d| $name(std::sync::Arc::new(d)))
            }

            /// The canonical JSON a store writes.
            pub fn canonical_json(&self) -> &str {
                &self.0.canonical
            }

            /// The decoded record.
            pub fn value(&self) -> &serde_json::Value {
                &self.0.value
            }
        }
    };
}

mod admission;
mod fields;
mod message;
mod rejection;
mod run;
mod session;

pub use admission::{RootTurnAdmission, DESCRIPTOR_KINDS};
pub use message::StoredMessage;
pub use rejection::RootTurnRejection;
pub use run::{transition_allowed, RunEvent, RunHeader, RUN_STATUSES, TERMINAL_RUN_STATUSES};
pub use session::SessionHeader;

use crate::error::Error;
use crate::event::EventError;
use serde_json::Value;

/// A decoded record: its normalized value and canonical JSON.
#[derive(Debug, Clone, PartialEq)]
struct Decoded {
    value: Value,
    canonical: String,
}

/// Parses `json` strictly and decodes it with `decode`, naming `record` in any error.
fn decode_text(
    record: &'static str,
    json: &str,
    decode: impl FnOnce(&Value) -> Result<Value, EventError>,
) -> Result<Decoded, Error> {
    let parsed = crate::event::parse::parse(json).map_err(|e| refused(record, e))?;
    decode_value(record, parsed, decode)
}

/// Normalizes `value` (numbers in one form, depth bounded) and decodes it with `decode`.
fn decode_value(
    record: &'static str,
    mut value: Value,
    decode: impl FnOnce(&Value) -> Result<Value, EventError>,
) -> Result<Decoded, Error> {
    crate::event::schema::normalize(&mut value).map_err(|e| refused(record, e))?;
    let value = decode(&value).map_err(|e| refused(record, e))?;
    let canonical = crate::event::canonical_string(&value);
    Ok(Decoded { value, canonical })
}

fn refused(record: &'static str, e: EventError) -> Error {
    let (field, why) = match e {
        EventError::Invalid { field, why } => (field, why),
        EventError::LoneSurrogate { field } => (
            field,
            "string holds a lone UTF-16 surrogate, which makalog refuses".to_owned(),
        ),
        EventError::NotLossless { why } => ("<record>".to_owned(), why),
    };
    let field = if field == crate::event::path::EVENT {
        "<record>".to_owned()
    } else {
        field
    };
    Error::InvalidRecord { record, field, why }
}
