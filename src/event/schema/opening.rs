//! `invocation_opened` content (MAKA-MODEL §1.3, \[SPINE\]): the immutable opening fact of an
//! invocation — its provider route, configuration, root authority, source and lineage.

use super::fields::{decode_object, expect_object, expect_tag, invalid, Decoded, Obj, Result};
use crate::event::path::Path;
use serde_json::Value;

/// The backends a persisted route may name.
const BACKEND_KINDS: &[&str] = &["ai-sdk", "fake"];

/// The lineage edges an opening may carry.
const LINEAGE_KEYS: &[&str] = &[
    "parentRunId",
    "resumedFromRunId",
    "retriedFromRunId",
    "parentTurnId",
    "parentSessionId",
    "retriedFromTurnId",
    "regeneratedFromTurnId",
    "branchOfTurnId",
    "agentId",
    "agentName",
];

/// Reads the opening into `content` (whose `kind` is read already).
pub fn read_opening(content: &mut Obj) -> Result<()> {
    content.literal("protocol", "invocation_opened_v1")?;
    content.decoded("route", decode_route)?;
    content.object("configuration", read_configuration)?;
    content.decoded("root", decode_root)?;
    content.decoded("source", decode_source)?;
    content.opt_decoded("lineage", decode_lineage)?;
    Ok(())
}

/// Where the provider route came from: `runtime` (authenticated) or `unknown` (fail-closed).
fn decode_route<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let provenance = expect_tag(value, path, "provenance", &["runtime", "unknown"])?;
    decode_object(value, path, |route| {
        route.literal("provenance", provenance)?;
        route.one_of("backendKind", BACKEND_KINDS)?;
        if provenance == "runtime" {
            route.nonempty("llmConnectionId")?;
        }
        route.nonempty("llmConnectionSlug")?;
        route.nonempty("modelId")?;
        if provenance == "runtime" {
            route.opt_sha256("providerStateIdentity")?;
        }
        Ok(())
    })
}

fn read_configuration(config: &mut Obj) -> Result<()> {
    config.string("cwd")?;
    config.one_of("permissionMode", &["explore", "ask", "bypass"])?;
    config.one_of("collaborationMode", &["agent", "plan"])?;
    config.one_of("orchestrationMode", &["default", "swarm", "graph"])?;
    config.one_of("orchestrationSource", &["session", "turn_override"])?;
    config.one_of("toolMode", &["direct", "code_mode"])?;
    config.opt_one_of(
        "agentSwarmAuthorization",
        &["none", "session_mode", "turn_override"],
    )?;
    config.opt_nonempty("workspaceIdentity")?;
    Ok(())
}

/// The authority that caused the invocation; `background_task` is known only from Shouly/maka.
fn decode_root<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(
        value,
        path,
        "kind",
        &[
            "user",
            "context_compact",
            "scheduled_task",
            "goal",
            "agent_graph_supervisor_wake",
            "legacy_automation",
            "background_task",
        ],
    )?;
    decode_object(value, path, |root| {
        root.literal("kind", kind)?;
        match kind {
            "scheduled_task" => {
                root.nonempty("scheduledTaskId")?;
            }
            "goal" => {
                root.nonempty("goalId")?;
            }
            "agent_graph_supervisor_wake" => {
                root.nonempty("wakeId")?;
                root.nonempty("attemptId")?;
            }
            "legacy_automation" => {
                root.nonempty("legacyAutomationId")?;
            }
            "background_task" => {
                root.nonempty("ref")?;
                root.nonempty("toolUseId")?;
            }
            _ => {}
        }
        Ok(())
    })
}

/// How the invocation was opened: fresh, as a continuation, or as a handoff.
fn decode_source<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    let kind = expect_tag(value, path, "kind", &["fresh", "continuation", "handoff"])?;
    decode_object(value, path, |source| {
        source.literal("kind", kind)?;
        if kind == "fresh" {
            return Ok(());
        }
        if kind == "handoff" {
            source.nonempty("rootRunId")?;
        }
        source.nonempty("sourceInvocationId")?;
        source.nonempty("sourceRunId")?;
        source.nonempty("sourceTurnId")?;
        // A handoff follows a source that wrote at least one event.
        source.int_at_least("sourceRuntimeEventHighWater", i64::from(kind == "handoff"))?;
        if kind == "handoff" {
            source.nonempty("claimId")?;
            source.sha256("boundaryDigest")?;
        } else {
            source.opt_nonempty("claimId")?;
            source.opt_sha256("boundaryDigest")?;
        }
        Ok(())
    })
}

/// Lineage edges; present only when there is at least one.
fn decode_lineage<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    if expect_object(value, path)?.is_empty() {
        return Err(invalid(path, "must not be {} (omit it instead)"));
    }
    decode_object(value, path, |lineage| {
        for &key in LINEAGE_KEYS {
            lineage.opt_string(key)?;
        }
        Ok(())
    })
}
