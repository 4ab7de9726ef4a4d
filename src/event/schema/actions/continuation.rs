//! `continuationStart` (MAKA-MODEL §1.4): the durable provider-call T1 of a claimed continuation.

use super::super::fields::{decode_object, invalid, Decoded, Result};
use crate::event::path::Path;
use serde_json::Value;

/// Decodes `continuationStart` (`continuation_start_v2`).
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |c| {
        c.literal("protocol", "continuation_start_v2")?;
        c.one_of("provenance", &["runtime_admission", "claim_repair"])?;
        c.nonempty("claimId")?;
        c.sha256("boundaryDigest")?;
        c.object("immediateSource", |s| {
            s.nonempty("sessionId")?;
            s.nonempty("invocationId")?;
            s.nonempty("runId")?;
            s.nonempty("turnId")?;
            s.int_at_least("highWater", 1)?;
            s.sha256("prefixDigest")?;
            Ok(())
        })?;
        c.sha256("replayManifestDigest")?;
        // HEAD writes version 1; [SPINE] also writes 2.
        let version = c.int_at_least("providerProjectionVersion", 1)?;
        if version > 2 {
            return Err(invalid(
                &c.at("providerProjectionVersion"),
                "must be 1 or 2",
            ));
        }
        c.sha256("providerReplayDigest")?;
        Ok(())
    })
}
