//! The built-in agent definitions a child session can run as (MAKA-MODEL §11).

/// One agent definition: what a child session's `subagentRuntime` is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentDefinition {
    pub definition_version: u32,
    pub id: &'static str,
    pub profile: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub permission_mode: &'static str,
    pub tools: &'static [&'static str],
    pub system_prompt: &'static str,
}

/// The foreground read-only child agent.
pub const LOCAL_READ_AGENT_DEFINITION: AgentDefinition = AgentDefinition {
    definition_version: 1,
    id: "local-read",
    profile: "local_read",
    name: "Local Read",
    description: "Read-only repository exploration with file and text search tools only.",
    permission_mode: "explore",
    tools: &["Read", "Glob", "Grep"],
    system_prompt: "You are a foreground local-read child agent.\n\
                    Use only the provided Read, Glob, and Grep tools.\n\
                    Do not use shell, web, browser, write, or nested agent tools.\n\
                    Return a concise answer with concrete file or symbol evidence.",
};
