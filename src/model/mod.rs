//! The records of the session ledger besides runtime events (MAKA-MODEL §5–§8): session
//! headers with their subagent objects, stored messages, run headers and run events, and root-turn admissions and start rejections. Each is decoded strictly from JSON
//! (every field checked, unknown keys refused, a typed [`Error::InvalidRecord`] naming the
//! field) and kept as its canonical JSON (keys sorted, numbers in one form), which is what a
//! store writes; one built from a value must read back from that text (MAKA-MODEL §2), since
//! stores apply a record without reading back what they wrote. Pure: no I/O.
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
        pub struct $name(std::sync::Arc<super::DecodedRecord>);

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
                self.0.canonical()
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
mod runtime_fields;
mod session;

pub use admission::{RootTurnAdmission, DESCRIPTOR_KINDS};
pub use message::StoredMessage;
pub use rejection::RootTurnRejection;
pub use run::{transition_allowed, RunEvent, RunHeader, RUN_STATUSES, TERMINAL_RUN_STATUSES};
pub use runtime_fields::RUNTIME_FIELDS_ROOM;
pub(crate) use runtime_fields::{is_runtime_field, never_grows};
pub use session::SessionHeader;

use crate::error::Error;
use crate::event::schema::fields::Decoded;
use crate::event::EventError;
use serde_json::Value;

/// A decoded record: its normalized value and canonical JSON.
#[derive(Debug, Clone)]
struct DecodedRecord {
    value: Value,
    /// The canonical JSON, written when first asked for: a read that only looks at the value
    /// (a listing, `verify`, an index rebuild) never pays for it.
    canonical: std::sync::OnceLock<String>,
    /// The length of the text the record was read from, which its canonical text usually is.
    size_hint: usize,
}

impl DecodedRecord {
    fn canonical(&self) -> &str {
        self.canonical
            .get_or_init(|| crate::event::canonical_string_sized(&self.value, self.size_hint))
    }
}

/// Records are equal when their values are: the canonical text is a function of the value.
impl PartialEq for DecodedRecord {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// A record type's decoder: the record's value, or the input itself when nothing changed.
trait Decode: for<'a> FnOnce(&'a Value) -> Result<Decoded<'a>, EventError> {}
impl<F: for<'a> FnOnce(&'a Value) -> Result<Decoded<'a>, EventError>> Decode for F {}

/// Parses `json` strictly and decodes it with `decode`, naming `record` in any error.
fn decode_text(
    record: &'static str,
    json: &str,
    decode: impl Decode,
) -> Result<DecodedRecord, Error> {
    let parsed = crate::event::parse::parse(json).map_err(|e| refused(record, e))?;
    // The parser's numbers are already in their one form: no normalizing pass.
    decode_normalized(record, parsed, json.len(), decode)
}

/// Normalizes `value` (numbers in one form, depth bounded) and decodes it with `decode`, and
/// checks that its canonical text reads back to it (MAKA-MODEL §2, as for runtime events): a
/// store writes that text and applies the record without reading it back, so a record a
/// rebuild could not read is refused here.
fn decode_value(
    record: &'static str,
    mut value: Value,
    decode: impl Decode,
) -> Result<DecodedRecord, Error> {
    crate::event::schema::normalize(&mut value).map_err(|e| refused(record, e))?;
    let decoded = decode_normalized(record, value, 0, decode)?;
    // A value whose numbers are all safe integers, no deeper than the parser reads, prints
    // as text that parses back to it (what the runtime's own records are): nothing to run.
    if !crate::event::number::prints_exactly(&decoded.value) {
        let why = match crate::event::parse::parse(decoded.canonical()) {
            Ok(reparsed) if reparsed == decoded.value => None,
            Ok(_) => Some("the canonical text reads back as another record (a number JavaScript cannot hold exactly?)".to_owned()),
            Err(e) => Some(format!("the canonical text does not parse back: {e}")),
        };
        if let Some(why) = why {
            return Err(refused(record, EventError::NotLossless { why }));
        }
    }
    Ok(decoded)
}

/// Decodes a normalized value with `decode`, keeping the value itself when decoding changed
/// nothing; `size_hint` is the length of the text it was read from, if any, which its
/// canonical text usually equals.
fn decode_normalized(
    record: &'static str,
    value: Value,
    size_hint: usize,
    decode: impl Decode,
) -> Result<DecodedRecord, Error> {
    let made = match decode(&value).map_err(|e| refused(record, e))? {
        Decoded::Borrowed(_) => None,
        Decoded::Owned(made) => Some(made),
    };
    Ok(DecodedRecord {
        value: made.unwrap_or(value),
        canonical: std::sync::OnceLock::new(),
        size_hint,
    })
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
