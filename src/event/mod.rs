//! The canonical RuntimeEvent of MAKA-MODEL §1–§3: strict decoding, canonical JSON, and the
//! derived kind and terminal rule. Pure: no I/O.
//!
//! Decisions where the model leaves a choice:
//!
//! - **Lone surrogates are refused.** A `\ud800`–`\udfff` escape that is not half of a valid
//!   pair is refused with [`EventError::LoneSurrogate`] naming the field, wherever it occurs
//!   (free-form values included). A Rust string cannot hold one, and substituting U+FFFD would
//!   change the event; the original accepts them, so the two accepted corpus cases that carry
//!   one are the only verdicts makalog does not share.
//! - **Numbers** have one representation once decoded: integral values are integers (`1.0`
//!   reads as `1`, `-0` as `0`), so the canonical text and value equality agree.
//! - **Repeated keys** keep the last value, as `JSON.parse` does; the canonical form has one.
//! - **Nesting** deeper than 256 levels is refused rather than risking the stack.
//!
//! Where MAKA-MODEL is silent the original's decoders decide (HEAD maka-agent/maka-agent; the
//! \[SPINE\] parts from sanshanya/maka-agent and Shouly/maka), except where they are looser than
//! the model's rules: the text fields, storage refs and error fields are exactly those of §1.2
//! (no `directoryReferences`, `session_context` refs or `boundedProviderMessage`), and members
//! the original leaves unchecked (`lastRequestAnchor.modelId`, the baseline's
//! `epochOpenedEventId`) must be strings. A `formRequest` gets the original's structural
//! checks but not its answer-witness admission proof, and the 64 KiB limit of an additional
//! permission profile is measured after dropping covered entries, keeping the first of equal
//! ones where the original keeps the first in `localeCompare` order.

mod canonical;
mod error;
mod kind;
pub(crate) mod number;
pub(crate) mod parse;
mod partial;
pub(crate) mod path;
pub(crate) mod plain;
pub(crate) mod schema;

pub use canonical::{canonical_string, canonical_string_sized};
pub use error::EventError;
pub use number::{format_number, MAX_SAFE_INTEGER};
pub use parse::MAX_DEPTH;

use serde_json::Value;
use std::borrow::Cow;

/// A decoded, normalized RuntimeEvent with its canonical JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeEvent {
    value: Value,
    canonical: String,
}

impl RuntimeEvent {
    /// Strictly decodes one event from JSON text, normalizes it and checks it round-trips.
    ///
    /// A `\ud800`–`\udfff` escape that is not half of a surrogate pair is refused with
    /// [`EventError::LoneSurrogate`]; see the module documentation.
    pub fn decode(json: &str) -> Result<RuntimeEvent, EventError> {
        RuntimeEvent::from_normalized(parse::parse(json)?, Some(json))
    }

    /// Strictly decodes one event from a JSON value, normalizes it and checks it round-trips.
    pub fn from_value(mut value: Value) -> Result<RuntimeEvent, EventError> {
        schema::normalize(&mut value)?;
        RuntimeEvent::from_normalized(value, None)
    }

    /// Decodes `value`, parsed from `text` when given, and checks the round trip.
    fn from_normalized(value: Value, text: Option<&str>) -> Result<RuntimeEvent, EventError> {
        // Decoding usually changes nothing (so for most stored events), and then the
        // decoded event is `value` itself.
        let made = match schema::decode(&value)? {
            Cow::Borrowed(_) => None,
            Cow::Owned(made) => Some(made),
        };
        let unchanged = made.is_none();
        let decoded = made.unwrap_or(value);
        let canonical = canonical_string_sized(&decoded, text.map_or(0, str::len));
        // Text that is already canonical (every event read back from a ledger) parses to
        // `value` again and decodes to `decoded` again: both functions are deterministic, so
        // the round trip below holds without being run.
        if text == Some(canonical.as_str()) {
            return Ok(RuntimeEvent {
                value: decoded,
                canonical,
            });
        }
        // An event built in memory (the runtime's own) whose numbers are all safe integers
        // parses back to itself, and decoded unchanged, decodes unchanged again: the round trip
        // holds without being run (tests/runtime_event.rs checks it against a real re-parse).
        if unchanged && text.is_none() && number::prints_exactly(&decoded) {
            return Ok(RuntimeEvent {
                value: decoded,
                canonical,
            });
        }
        // MAKA-MODEL §2: stringify → re-parse → re-decode must give back the decoded event.
        let reparsed = parse::parse(&canonical).map_err(|e| EventError::NotLossless {
            why: format!("the canonical text does not parse back: {e}"),
        })?;
        // A re-parse equal to an input that decoded unchanged decodes unchanged again (decoding
        // is deterministic): the re-decode would give back `decoded` itself (what the runtime's
        // own events usually are).
        if unchanged && reparsed == decoded {
            return Ok(RuntimeEvent {
                value: decoded,
                canonical,
            });
        }
        let redecoded = schema::decode(&reparsed).map_err(|e| EventError::NotLossless {
            why: format!("the canonical text does not decode back: {e}"),
        })?;
        if *redecoded != decoded {
            return Err(EventError::NotLossless {
                why: "the canonical text decodes to a different event (a number JavaScript \
                      cannot hold exactly?)"
                    .to_string(),
            });
        }
        Ok(RuntimeEvent {
            value: decoded,
            canonical,
        })
    }

    /// The canonical JSON text (MAKA-MODEL §2).
    pub fn canonical_json(&self) -> &str {
        &self.canonical
    }

    /// The decoded, normalized event.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// `id`: the event's global identity.
    pub fn id(&self) -> &str {
        self.text("id")
    }

    /// `invocationId`.
    pub fn invocation_id(&self) -> &str {
        self.text("invocationId")
    }

    /// `runId`.
    pub fn run_id(&self) -> &str {
        self.text("runId")
    }

    /// `sessionId`.
    pub fn session_id(&self) -> &str {
        self.text("sessionId")
    }

    /// `turnId`.
    pub fn turn_id(&self) -> &str {
        self.text("turnId")
    }

    /// `ts`: milliseconds, possibly fractional.
    pub fn ts(&self) -> f64 {
        self.value
            .get("ts")
            .and_then(Value::as_f64)
            .unwrap_or_default()
    }

    /// `partial`: a transient chunk a later event supersedes.
    pub fn partial(&self) -> bool {
        self.value.get("partial") == Some(&Value::Bool(true))
    }

    /// `status`, when the event asserts one.
    pub fn status(&self) -> Option<&str> {
        self.value.get("status").and_then(Value::as_str)
    }

    /// `content.kind`, when the event has content.
    pub fn content_kind(&self) -> Option<&str> {
        self.value
            .get("content")
            .and_then(|c| c.get("kind"))
            .and_then(Value::as_str)
    }

    /// Whether the event ends its invocation (§1.1 terminal rule).
    pub fn is_terminal(&self) -> bool {
        kind::is_terminal(&self.value)
    }

    /// The derived `event_kind` (§3).
    pub fn event_kind(&self) -> &str {
        kind::event_kind(&self.value)
    }

    /// The opening fact, when this is an `invocation_opened` event.
    pub fn opening(&self) -> Option<&Value> {
        self.value
            .get("content")
            .filter(|c| c.get("kind").and_then(Value::as_str) == Some("invocation_opened"))
    }

    fn text(&self, key: &str) -> &str {
        self.value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}
