//! What a backend streams for one turn (MAKA-MODEL §11): `SessionEvent`s, tagged by `type`,
//! each with an id, its turn and a timestamp. Only the kinds this runtime's backends emit and
//! its turn writer maps are modelled; every one is also what a caller of `send_message` sees.
//! Tool calls and results carry §11's optional fields ([`ToolStartDetails`],
//! [`ToolResultDetails`]); the writer keeps each where §6's message and §1's event have a place
//! for it.

use serde::Serialize;
use serde_json::Value;

/// One event of a turn's stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEvent {
    /// A chunk of the model's text.
    TextDelta {
        id: String,
        turn_id: String,
        ts: f64,
        message_id: String,
        text: String,
        /// Where the chunk begins in the message's text, when the backend says: for the
        /// caller, as the ledger's partial events have no place for it.
        #[serde(skip_serializing_if = "Option::is_none")]
        start_offset: Option<u64>,
    },
    /// The whole text of a message, once it is complete.
    TextComplete {
        id: String,
        turn_id: String,
        ts: f64,
        message_id: String,
        text: String,
    },
    /// A chunk of the model's reasoning.
    ThinkingDelta {
        id: String,
        turn_id: String,
        ts: f64,
        message_id: String,
        text: String,
    },
    /// The model's whole reasoning for a message, once it is complete.
    ThinkingComplete {
        id: String,
        turn_id: String,
        ts: f64,
        message_id: String,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// What a model call used: its input and output tokens, and any of §1.4's optional
    /// tokenUsage fields (`cacheRead`, `total`, `costUsd`, `contextBudget`, …) in `more`.
    TokenUsage {
        id: String,
        turn_id: String,
        ts: f64,
        input: f64,
        output: f64,
        #[serde(flatten)]
        more: Box<serde_json::Map<String, Value>>,
    },
    /// A tool call begins.
    ToolStart {
        id: String,
        turn_id: String,
        ts: f64,
        tool_use_id: String,
        tool_name: String,
        args: Value,
        /// Boxed: most calls have none, and every event is as big as the largest kind.
        #[serde(flatten)]
        details: Box<ToolStartDetails>,
    },
    /// A tool call's result.
    ToolResult {
        id: String,
        turn_id: String,
        ts: f64,
        tool_use_id: String,
        is_error: bool,
        content: Value,
        #[serde(flatten)]
        details: Box<ToolResultDetails>,
    },
    /// The backend asks the user questions and waits for the answers.
    UserQuestionRequest {
        id: String,
        turn_id: String,
        ts: f64,
        request_id: String,
        tool_use_id: String,
        questions: Value,
    },
    /// The backend asks for a permission and waits for the decision: `request` is §1.4's
    /// permissionRequest (`kind` `tool_permission` or `additional_permissions`, requestId,
    /// toolUseId, toolName, category, …).
    PermissionRequest {
        id: String,
        turn_id: String,
        ts: f64,
        request: Value,
    },
    /// A permission was decided: `decision` is §1.4's permissionDecision (requestId, decision
    /// `allow` or `deny`, and optionally rememberForTurn, reviewer, rationale, riskLevel,
    /// toolName, hint).
    PermissionDecisionAck {
        id: String,
        turn_id: String,
        ts: f64,
        decision: Value,
    },
    /// A permission request closed undecided (`reason` `timed_out`).
    PermissionClosureAck {
        id: String,
        turn_id: String,
        ts: f64,
        request_id: String,
        reason: String,
    },
    /// The backend asks to run a command outside its sandbox and waits for the decision:
    /// `request` is §1.4's permissionRequest of kind `sandbox_escalation`.
    SandboxBoundaryRequest {
        id: String,
        turn_id: String,
        ts: f64,
        request: Value,
    },
    /// A sandbox request was decided (`decision` `allow` or `deny`).
    SandboxBoundaryDecisionAck {
        id: String,
        turn_id: String,
        ts: f64,
        request_id: String,
        decision: String,
    },
    /// The answers to a question request arrived.
    UserQuestionAnswerAck {
        id: String,
        turn_id: String,
        ts: f64,
        request_id: String,
    },
    /// A failure the turn reports before it ends.
    Error {
        id: String,
        turn_id: String,
        ts: f64,
        recoverable: bool,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// What the backend adds (a list of strings or an object).
        #[serde(skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// The turn ended, and why.
    Complete {
        id: String,
        turn_id: String,
        ts: f64,
        stop_reason: String,
        /// Why the context budget ran out, for `context_budget_exhausted`
        /// (`no_safe_completed_span`, `summarizer_failed` or `head_anchor_exceeds_capacity`).
        #[serde(skip_serializing_if = "Option::is_none")]
        context_budget_exhausted_detail: Option<String>,
    },
    /// The turn was aborted (`user_stop`, `redirect`, `timeout` or `crash`).
    Abort {
        id: String,
        turn_id: String,
        ts: f64,
        reason: String,
    },
}

/// What a `tool_start` may say beyond the tool's name and arguments (§11), all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStartDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_kind: Option<String>,
    /// An object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_executed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// `provider` or `code_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// `visible` or `hidden`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_visibility: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_operation_id: Option<String>,
}

/// What a `tool_result` may say beyond its content (§11), all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_executed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// `provider` or `code_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// `visible` or `hidden`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_visibility: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_operation_id: Option<String>,
}

impl SessionEvent {
    /// The event's id.
    pub fn id(&self) -> &str {
        match self {
            SessionEvent::TextDelta { id, .. }
            | SessionEvent::TextComplete { id, .. }
            | SessionEvent::ThinkingDelta { id, .. }
            | SessionEvent::ThinkingComplete { id, .. }
            | SessionEvent::TokenUsage { id, .. }
            | SessionEvent::ToolStart { id, .. }
            | SessionEvent::ToolResult { id, .. }
            | SessionEvent::PermissionRequest { id, .. }
            | SessionEvent::PermissionDecisionAck { id, .. }
            | SessionEvent::PermissionClosureAck { id, .. }
            | SessionEvent::SandboxBoundaryRequest { id, .. }
            | SessionEvent::SandboxBoundaryDecisionAck { id, .. }
            | SessionEvent::UserQuestionRequest { id, .. }
            | SessionEvent::UserQuestionAnswerAck { id, .. }
            | SessionEvent::Error { id, .. }
            | SessionEvent::Complete { id, .. }
            | SessionEvent::Abort { id, .. } => id,
        }
    }

    /// The event's timestamp (ms).
    pub fn ts(&self) -> f64 {
        match self {
            SessionEvent::TextDelta { ts, .. }
            | SessionEvent::TextComplete { ts, .. }
            | SessionEvent::ThinkingDelta { ts, .. }
            | SessionEvent::ThinkingComplete { ts, .. }
            | SessionEvent::TokenUsage { ts, .. }
            | SessionEvent::ToolStart { ts, .. }
            | SessionEvent::ToolResult { ts, .. }
            | SessionEvent::PermissionRequest { ts, .. }
            | SessionEvent::PermissionDecisionAck { ts, .. }
            | SessionEvent::PermissionClosureAck { ts, .. }
            | SessionEvent::SandboxBoundaryRequest { ts, .. }
            | SessionEvent::SandboxBoundaryDecisionAck { ts, .. }
            | SessionEvent::UserQuestionRequest { ts, .. }
            | SessionEvent::UserQuestionAnswerAck { ts, .. }
            | SessionEvent::Error { ts, .. }
            | SessionEvent::Complete { ts, .. }
            | SessionEvent::Abort { ts, .. } => *ts,
        }
    }

    /// The event's `type` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            SessionEvent::TextDelta { .. } => "text_delta",
            SessionEvent::TextComplete { .. } => "text_complete",
            SessionEvent::ThinkingDelta { .. } => "thinking_delta",
            SessionEvent::ThinkingComplete { .. } => "thinking_complete",
            SessionEvent::TokenUsage { .. } => "token_usage",
            SessionEvent::ToolStart { .. } => "tool_start",
            SessionEvent::ToolResult { .. } => "tool_result",
            SessionEvent::PermissionRequest { .. } => "permission_request",
            SessionEvent::PermissionDecisionAck { .. } => "permission_decision_ack",
            SessionEvent::PermissionClosureAck { .. } => "permission_closure_ack",
            SessionEvent::SandboxBoundaryRequest { .. } => "sandbox_boundary_request",
            SessionEvent::SandboxBoundaryDecisionAck { .. } => "sandbox_boundary_decision_ack",
            SessionEvent::UserQuestionRequest { .. } => "user_question_request",
            SessionEvent::UserQuestionAnswerAck { .. } => "user_question_answer_ack",
            SessionEvent::Error { .. } => "error",
            SessionEvent::Complete { .. } => "complete",
            SessionEvent::Abort { .. } => "abort",
        }
    }

    /// Whether the runtime writes the event as a durable fact (MAKA-MODEL §12, step 7): text
    /// and reasoning, tool calls and results, token usage, permission and sandbox requests and
    /// their answers, errors.
    pub fn is_fact(&self) -> bool {
        matches!(
            self,
            SessionEvent::TextComplete { .. }
                | SessionEvent::PermissionRequest { .. }
                | SessionEvent::PermissionDecisionAck { .. }
                | SessionEvent::PermissionClosureAck { .. }
                | SessionEvent::SandboxBoundaryRequest { .. }
                | SessionEvent::SandboxBoundaryDecisionAck { .. }
                | SessionEvent::ThinkingComplete { .. }
                | SessionEvent::TokenUsage { .. }
                | SessionEvent::ToolStart { .. }
                | SessionEvent::ToolResult { .. }
                | SessionEvent::Error { .. }
        )
    }
}
