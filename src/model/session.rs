//! The session header (MAKA-MODEL §5) and its subagent objects.

use super::fields::{
    lid, lids, object, opt_strings, permission_mode, safe_id, string_or_null, strings,
};
use crate::event::path::Path;
use crate::event::schema::fields::Decoded;
use crate::event::schema::fields::{
    decode_object, expect_array, expect_int, expect_object, expect_one_of, expect_str, invalid,
    Obj, Result as FieldResult,
};
use serde_json::Value;
use std::collections::BTreeSet;

const RECORD: &str = "session header";

/// Where a session stands.
pub const STATUSES: &[&str] = &[
    "active",
    "running",
    "waiting_for_user",
    "blocked",
    "aborted",
];

const BLOCKED_REASONS: &[&str] = &[
    "NO_REAL_CONNECTION",
    "auth",
    "permission_required",
    "tool_failed",
    "unknown",
];

/// Required strings with no further rule.
const REQUIRED_STRINGS: &[&str] = &["workspaceRoot", "cwd", "name", "llmConnectionSlug", "model"];

const REQUIRED_BOOLS: &[&str] = &[
    "titleIsManual",
    "isFlagged",
    "isArchived",
    "hasUnread",
    "connectionLocked",
];

const OPTIONAL_STRINGS: &[&str] = &[
    "parentSessionId",
    "branchOfTurnId",
    "lastReadMessageId",
    "revisionRootSessionId",
    "revisionParentSessionId",
    "revisionOfTurnId",
    "llmConnectionId",
    "thinkingLevel",
];

/// The longest subagent system prompt, in UTF-16 code units.
const SYSTEM_PROMPT_MAX: usize = 100_000;

/// The most tools a subagent definition names.
const TOOL_NAMES_MAX: usize = 128;

record_type!(
    /// A decoded session header with its canonical JSON.
    SessionHeader,
    RECORD,
    decode
);

impl SessionHeader {
    /// The session's id.
    pub fn id(&self) -> &str {
        self.str_at("id").unwrap_or_default()
    }

    /// The session's status.
    pub fn status(&self) -> &str {
        self.str_at("status").unwrap_or_default()
    }

    /// The parent session of a subagent (from `subagentParent`), if this is one.
    pub fn subagent_parent_session(&self) -> Option<&str> {
        self.0.value["subagentParent"]["parentSessionId"].as_str()
    }

    /// True when the header carries a subagent spawn block.
    pub fn has_subagent_spawn(&self) -> bool {
        self.0.value.get("subagentSpawn").is_some()
    }

    fn str_at(&self, key: &str) -> Option<&str> {
        self.0.value.get(key).and_then(Value::as_str)
    }
}

fn decode(value: &Value) -> FieldResult<Decoded<'_>> {
    decode_object(value, &Path::root(), read_header)
}

fn read_header(h: &mut Obj) -> FieldResult<()> {
    h.number_literal("schemaVersion", 1)?;
    h.required("id", safe_id)?;
    for &key in REQUIRED_STRINGS {
        h.string(key)?;
    }
    h.optional("projectId", string_or_null)?;
    h.number("createdAt")?;
    h.number("lastUsedAt")?;
    h.opt_number("lastMessageAt")?;
    h.opt_number("statusUpdatedAt")?;
    for &key in REQUIRED_BOOLS {
        h.boolean(key)?;
    }
    h.required("labels", strings)?;
    h.one_of("status", STATUSES)?;
    h.opt_one_of("blockedReason", BLOCKED_REASONS)?;
    opt_strings(h, OPTIONAL_STRINGS)?;
    h.opt_int_at_least("revisionIndex", 0)?;
    h.opt_one_of("revisionState", &["preparing", "committed"])?;
    h.opt_object("subagentParent", read_parent)?;
    h.opt_object("subagentRuntime", read_runtime)?;
    h.opt_object("subagentSpawn", read_spawn)?;
    for key in ["subagentWorkspace", "conversationCopy", "externalOrigin"] {
        h.optional(key, object)?;
    }
    h.one_of("backend", &["ai-sdk", "fake"])?;
    h.opt_one_of("toolProfile", &["headless-coding-v1"])?;
    // The legacy `execute` reads as `ask`.
    h.decoded("permissionMode", permission_mode)?;
    h.opt_one_of("collaborationMode", &["agent", "plan"])?;
    h.opt_one_of("orchestrationMode", &["default", "swarm", "graph"])?;
    h.optional("transcriptLedgerVersion", |v, p| match expect_int(v, p)? {
        0 | 1 => Ok(()),
        _ => Err(invalid(p, "must be 0 or 1")),
    })?;
    Ok(())
}

/// `subagentParent`: who spawned the subagent, from a swarm or a graph but not both.
fn read_parent(p: &mut Obj) -> FieldResult<()> {
    p.literal("kind", "subagent")?;
    p.required("parentSessionId", lid)?;
    p.object("spawnedBy", |s| {
        lids(s, &["parentRunId", "parentTurnId", "toolCallId"])
    })?;
    let swarm = p.opt_object("swarm", |s| lids(s, &["swarmId", "itemId"]))?;
    let graph = p.opt_object("graph", |g| lids(g, &["graphId", "workId", "operatorId"]))?;
    if swarm && graph {
        return Err(invalid(
            &p.at("graph"),
            "a subagent has a swarm or a graph parent, not both",
        ));
    }
    p.literal("lifecycle", "foreground")?;
    Ok(())
}

/// `subagentRuntime`: the definition the subagent runs.
fn read_runtime(r: &mut Obj) -> FieldResult<()> {
    r.number_literal("schemaVersion", 1)?;
    r.int_at_least("definitionVersion", 1)?;
    lids(r, &["agentId", "agentName", "profile"])?;
    r.optional("presetId", lid)?;
    // Not in MAKA-MODEL's list: the original's own test (seed 000) sets it.
    r.opt_one_of("permissionCeiling", &["explore", "ask", "bypass"])?;
    r.required("systemPrompt", |v, p| {
        let prompt = expect_str(v, p)?;
        let units = prompt.encode_utf16().count();
        if units > SYSTEM_PROMPT_MAX {
            return Err(invalid(
                p,
                format!("must be at most {SYSTEM_PROMPT_MAX} characters, got {units}"),
            ));
        }
        if prompt.contains('\0') {
            return Err(invalid(p, "must not contain NUL"));
        }
        Ok(())
    })?;
    r.required("toolNames", |v, p| {
        let names = expect_array(v, p)?;
        if names.len() > TOOL_NAMES_MAX {
            return Err(invalid(
                p,
                format!("at most {TOOL_NAMES_MAX} tools, got {}", names.len()),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, name) in names.iter().enumerate() {
            let at = p.index(i);
            lid(name, &at)?;
            if !seen.insert(name.as_str()) {
                return Err(invalid(&at, "names a tool twice"));
            }
        }
        Ok(())
    })?;
    r.required("categoryPolicy", |v, p| {
        for (category, policy) in expect_object(v, p)? {
            let at = p.key(category);
            lid(&Value::String(category.clone()), &at)?;
            expect_one_of(policy, &at, &["allow", "prompt", "block"])?;
        }
        Ok(())
    })?;
    Ok(())
}

/// `subagentSpawn`: the claim the subagent was spawned under.
fn read_spawn(s: &mut Obj) -> FieldResult<()> {
    s.number_literal("schemaVersion", 1)?;
    s.required("requestFingerprint", |v, p| {
        let hex = expect_str(v, p)?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(invalid(p, "must be 64 lowercase hex digits"));
        }
        Ok(())
    })?;
    s.required("initialTurnId", safe_id)?;
    s.required("initialRunId", safe_id)?;
    Ok(())
}
