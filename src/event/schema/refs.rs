//! `refs` (MAKA-MODEL §1.5): links from an event to projection and ledger rows.

use super::fields::{decode_object, Decoded, Result};
use crate::event::path::Path;
use serde_json::Value;

/// The plain string refs.
const STRING_REFS: &[&str] = &[
    "storedMessageId",
    "traceEventId",
    "toolCallId",
    "providerEventId",
    "providerRequestTraceId",
    "artifactId",
    "operationId",
    "parentToolCallId",
    "parentOperationId",
    "stepId",
    "sourceInvocationId",
    "sourceRunId",
    "sourceTurnId",
];

/// Decodes `refs`; `{}` is valid.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |refs| {
        for &key in STRING_REFS {
            refs.opt_string(key)?;
        }
        refs.opt_sha256("sourceMessageDigest")?;
        refs.opt_int_at_least("sourceRuntimeEventHighWater", 0)?;
        Ok(())
    })
}
