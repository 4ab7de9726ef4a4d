//! `toolDispatch` and `managedMutationTerminal`: the durable fact that a tool crossed the
//! dispatch boundary, with its \[SPINE\] managed workspace mutation, and the no-effect terminal.

use super::super::fields::{decode_object, invalid, Decoded, Obj, Result};
use super::super::text::{is_prefixed_hex, is_token, utf16_len};
use crate::event::path::Path;
use serde_json::Value;

/// The one tool-boundary protocol.
pub const TOOL_BOUNDARY_PROTOCOL: &str = "t1_after_preflight_v1";

/// The digest of the managed-mutation execution profile v1, the only one a fact may name.
const EXECUTION_PROFILE_DIGEST: &str =
    "sha256:ffdfdda9cf38f382e0c4db81dac7319cd33586a6c65051a97a15e6c41b88f825";

/// What a later recovery phase may do with the call.
const RECOVERY_MODES: &[&str] = &[
    "replay_safe",
    "idempotent",
    "reconcile",
    "reattach",
    "outcome_unknown",
    "never_auto_retry",
];

/// Decodes `toolDispatch`.
pub fn decode_dispatch<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |d| {
        d.literal("protocol", TOOL_BOUNDARY_PROTOCOL)?;
        d.string("operationId")?;
        d.string("providerToolCallId")?;
        d.string("toolName")?;
        // Any string: the hash is the runtime's, not a digest this decoder can check.
        d.string("canonicalArgsHash")?;
        d.one_of("recoveryMode", RECOVERY_MODES)?;
        if d.raw("resultProjectionVersion").is_some() {
            d.number_literal("resultProjectionVersion", 1)?;
        }
        d.opt_object("managedMutation", read_mutation)?;
        Ok(())
    })
}

/// The T1-frozen identity of a managed workspace mutation (`managed_mutation_v2`).
fn read_mutation(m: &mut Obj) -> Result<()> {
    m.literal("protocol", "managed_mutation_v2")?;
    hex_id(m, "repositoryId", "repository_")?;
    hex_id(m, "workspaceId", "workspace_")?;
    hex_id(m, "workspaceEpochId", "epoch_")?;
    hex_id(m, "workspaceInstanceId", "instance_")?;
    m.literal("objectFormat", "sha1")?;
    hex_id(m, "baseWorkspaceVersionId", "version_")?;
    let event = m.string("baseAcceptedEventId")?;
    if !is_token(event, 128) {
        return Err(invalid(
            &m.at("baseAcceptedEventId"),
            "must match [A-Za-z0-9_-]{1,128}",
        ));
    }
    m.int_at_least("baseHeadRevision", 1)?;
    for key in ["baseCommitOid", "baseTreeOid"] {
        let oid = m.string(key)?;
        if !is_prefixed_hex(oid, "", 40) {
            return Err(invalid(&m.at(key), "must be 40 lowercase hex digits"));
        }
    }
    let expected = m.string("expectedPath")?;
    if !is_canonical_mutation_path(expected) {
        return Err(invalid(
            &m.at("expectedPath"),
            "must be a canonical relative Git path outside .git and node_modules",
        ));
    }
    m.number_literal("pathPolicyVersion", 3)?;
    m.literal("executionProfileDigest", EXECUTION_PROFILE_DIGEST)?;
    Ok(())
}

/// A string member of the form `<prefix><32 lowercase hex digits>`.
fn hex_id(m: &mut Obj, key: &'static str, prefix: &str) -> Result<()> {
    let id = m.string(key)?;
    if !is_prefixed_hex(id, prefix, 32) {
        return Err(invalid(
            &m.at(key),
            format!("must be {prefix}<32 lowercase hex digits>"),
        ));
    }
    Ok(())
}

/// Platform-independent canonical Git path syntax of durable mutation facts.
fn is_canonical_mutation_path(path: &str) -> bool {
    if path.is_empty()
        || utf16_len(path) > 4096
        || path.contains(['\\', '\0', ':'])
        || path.starts_with('/')
        || path.ends_with('/')
    {
        return false;
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return false;
    }
    let first = segments
        .first()
        .map(|s| s.to_lowercase())
        .unwrap_or_default();
    first != ".git" && first != "node_modules"
}

/// Decodes `managedMutationTerminal`: a managed mutation ended without changing the workspace.
pub fn decode_terminal<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |t| {
        t.literal("protocol", "managed_mutation_terminal_v1")?;
        t.string("operationId")?;
        t.string("dispatchEventId")?;
        hex_id(t, "workspaceInstanceId", "instance_")?;
        t.one_of(
            "terminalKind",
            &["no_workspace_change", "operation_failed_no_effect"],
        )?;
        Ok(())
    })
}
