//! `tokenUsage.contextBudget`: the context-budget diagnostic, with every optional key of the
//! original's CONTEXT_BUDGET_SHAPE and COMPACTION_DECISION_SHAPE and their types.
//!
//! Copied from `packages/core/src/usage-record-schema.ts` of maka-agent/maka-agent at commit
//! 36c6570aadb4d74004f4b482194909d16b6515a3 (found through the search index), the version that
//! matches HEAD's token usage (it has `providerRequestTraceId` and no `lastRequestAnchor`): 7
//! required and 84 optional context-budget keys (52 numbers, 11 reason-count maps, 7 strings,
//! 3 booleans, 5 string arrays, 5 enums and `compactionDecisions`), and 3 required and 24
//! optional keys per compaction decision.

use super::super::fields::{array_of, decode_array, decode_object, Decoded, Obj, Result};
use crate::event::path::Path;
use serde_json::Value;

/// Optional finite numbers (CONTEXT_NUMBERS).
const NUMBERS: &[&str] = &[
    "maxHistoryEstimatedTokens",
    "maxHistoryTurns",
    "prunedToolResults",
    "prunedToolResultEstimatedTokensBefore",
    "prunedToolResultEstimatedTokensAfter",
    "archivePlaceholders",
    "archiveWriteFailures",
    "unarchivedToolResults",
    "activePrunedToolResults",
    "activeSupersededToolResults",
    "activeDuplicateToolResults",
    "activeArchiveFailures",
    "activeEstimatedTokensSaved",
    "archiveRetrievalEligibleTurns",
    "retrievedArchiveToolResults",
    "retrievedArchiveEstimatedTokens",
    "archiveRetrievalSkipped",
    "archiveRetrievalFailures",
    "historySearchMatches",
    "historyAroundRetrievedEvents",
    "historyAroundEstimatedTokens",
    "historyAroundSkippedEvents",
    "synthesisCacheBlocksLoaded",
    "synthesisCacheLoadSkipped",
    "synthesisCacheLoadFailures",
    "synthesisCacheBlocksAvailable",
    "synthesisCacheBlocksSelected",
    "synthesisCacheEstimatedTokens",
    "synthesisCacheSkipped",
    "synthesisCacheInvalidated",
    "synthesisCacheWritesAttempted",
    "synthesisCacheBlocksWritten",
    "synthesisCacheWriteEstimatedTokens",
    "synthesisCacheWriteSkipped",
    "synthesisCacheWriteFailures",
    "synthesisCacheEvicted",
    "historyCompactBlocksLoaded",
    "historyCompactLoadSkipped",
    "historyCompactLoadFailures",
    "historyCompactBlocksAvailable",
    "historyCompactBlocksSelected",
    "historyCompactedTurns",
    "historyCompactedEvents",
    "historyCompactedEstimatedTokensBefore",
    "historyCompactedEstimatedTokensAfter",
    "historyCompactSkipped",
    "historyCompactWritesAttempted",
    "historyCompactBlocksWritten",
    "historyCompactWriteEstimatedTokens",
    "historyCompactWriteSkipped",
    "historyCompactWriteFailures",
    "highWaterSeq",
];

/// Optional string → finite number maps (CONTEXT_REASON_COUNTS).
const REASON_COUNTS: &[&str] = &[
    "archivePlaceholderReasonCounts",
    "archiveRetrievalSkippedReasonCounts",
    "archiveRetrievalFailureReasonCounts",
    "synthesisCacheLoadSkippedReasonCounts",
    "synthesisCacheSkippedReasonCounts",
    "synthesisCacheInvalidationReasonCounts",
    "synthesisCacheWriteSkippedReasonCounts",
    "synthesisCacheEvictionReasonCounts",
    "historyCompactLoadSkippedReasonCounts",
    "historyCompactSkippedReasonCounts",
    "historyCompactWriteSkippedReasonCounts",
];

/// Optional strings.
const STRINGS: &[&str] = &[
    "policyName",
    "highWaterName",
    "highWaterRequestShapeHashBefore",
    "highWaterRequestShapeHashAfter",
    "historyRewriteVersion",
    "historyRewriteResetReason",
    "historyRewriteGate",
];

/// Optional booleans.
const BOOLEANS: &[&str] = &[
    "semanticCompactEnabled",
    "synthesisCacheEnabled",
    "historyCompactEnabled",
];

/// Optional arrays of strings.
const STRING_ARRAYS: &[&str] = &[
    "synthesisCacheBlockIds",
    "synthesisCacheWrittenBlockIds",
    "historyCompactBlockIds",
    "historyCompactCoverageHashes",
    "historyCompactWrittenBlockIds",
];

/// Optional enums, each with its members.
const ENUMS: &[(&str, &[&str])] = &[
    (
        "semanticCompactMode",
        &["off", "validate_only", "prepare_step_dry_run", "replace"],
    ),
    ("archiveRetrievalMode", &["eager", "history_search_gated"]),
    (
        "synthesisCacheMode",
        &[
            "off",
            "lookup",
            "read_write",
            "write_only",
            "fallback_archive_retrieval",
        ],
    ),
    (
        "historyCompactMode",
        &["off", "deterministic", "lookup", "read_write"],
    ),
    (
        "highWaterReason",
        &[
            "archive_prune",
            "history_search_gated_retrieval",
            "synthesis_cache_write",
            "synthesis_cache_select",
            "history_compact",
            "manual_reset",
            "system_change",
            "tools_change",
            "log_rewrite",
        ],
    ),
];

/// Required finite numbers of the diagnostic.
const REQUIRED_NUMBERS: &[&str] = &[
    "estimatedTokensBefore",
    "estimatedTokensAfter",
    "keptTurns",
    "droppedTurns",
    "keptEvents",
    "droppedEvents",
];

/// Optional finite numbers of a compaction decision (COMPACTION_NUMBERS).
const DECISION_NUMBERS: &[&str] = &[
    "coveredTurns",
    "coveredRuntimeEvents",
    "coveredToolCalls",
    "coveredProviderMessages",
    "estimatedTokensBefore",
    "estimatedTokensAfter",
    "estimatedTokensSaved",
    "candidateEstimatedTokens",
    "preservedHeadEstimatedTokens",
    "preservedTailEstimatedTokens",
    "acceptedProjectionEstimatedTokens",
    "compactCallInputTokens",
    "compactCallOutputTokens",
    "compactCallCacheReadInputTokens",
    "compactCallCacheWriteInputTokens",
    "compactCallTotalTokens",
];

/// Decodes `contextBudget`.
pub fn decode<'a>(value: &'a Value, path: &Path) -> Result<Decoded<'a>> {
    decode_object(value, path, |budget| {
        budget.boolean("enabled")?;
        for &key in REQUIRED_NUMBERS {
            budget.number(key)?;
        }
        for &key in NUMBERS {
            budget.opt_number(key)?;
        }
        for &key in REASON_COUNTS {
            budget.opt_number_record(key)?;
        }
        for &key in STRINGS {
            budget.opt_string(key)?;
        }
        for &key in BOOLEANS {
            budget.opt_boolean(key)?;
        }
        for &key in STRING_ARRAYS {
            budget.opt_string_array(key)?;
        }
        for &(key, members) in ENUMS {
            budget.opt_one_of(key, members)?;
        }
        budget.opt_decoded("compactionDecisions", |v, p| {
            decode_array(v, p, |d, dp| decode_object(d, dp, read_decision))
                .map(|items| array_of(v, items))
        })?;
        Ok(())
    })
}

/// CompactionDecisionDiagnostic: what one compaction stage decided.
fn read_decision(decision: &mut Obj) -> Result<()> {
    decision.one_of("stage", &["priorReplay", "activeStep"])?;
    decision.one_of("sourceKind", &["runtimeEvents", "providerMessages"])?;
    decision.one_of("decision", &["unchanged", "replaced", "failedOpen"])?;
    decision.opt_one_of("phase", &["pre_turn", "mid_turn"])?;
    decision.opt_string("boundaryKind")?;
    decision.opt_string_array("boundaryIds")?;
    for &key in DECISION_NUMBERS {
        decision.opt_number(key)?;
    }
    decision.opt_string_array("coverageHashes")?;
    decision.opt_string("reason")?;
    decision.opt_string("failOpenReason")?;
    decision.opt_number_record("skippedReasonCounts")?;
    decision.opt_number_record("validationReasonCounts")?;
    Ok(())
}
