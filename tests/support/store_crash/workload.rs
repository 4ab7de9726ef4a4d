//! The records a store workload writes, and its workloads: random ones and the small fixed
//! ones crashed exhaustively.

use super::{parent, StoreOp, Stores, PARENTS, RUNS, TURNS};
use crate::support::scenario::{scenario_of, Scenario};
use crate::support::stores::session_header;
use makalog::storage::SimRng;
use serde_json::{json, Value};

pub fn child_header(parent: u8, key: u8, child: u8) -> Value {
    let id = format!("c{child}");
    let mut h = session_header(&id, 2);
    h["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": self::parent(parent),
        "spawnedBy": {"parentRunId": "r0", "parentTurnId": "t0", "toolCallId": format!("tool-{key}")},
        "lifecycle": "foreground"
    });
    h["subagentRuntime"] = json!({
        "schemaVersion": 1, "definitionVersion": 1, "agentId": "agent-1", "agentName": "Helper",
        "profile": "default", "systemPrompt": "Help.", "toolNames": ["read"],
        "categoryPolicy": {"filesystem": "allow"}
    });
    h["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": format!("{key:064}"),
        "initialTurnId": "t0", "initialRunId": "r0"
    });
    h
}

pub fn message(i: u32) -> Value {
    json!({"type": "user", "id": format!("m{i}"), "turnId": format!("t{}", i % TURNS),
           "ts": i, "text": format!("message {i}")})
}

pub fn run_header(n: u8, i: u32) -> Value {
    json!({
        "runId": format!("r{i}"), "sessionId": parent(n), "turnId": format!("t{}", i % TURNS),
        "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/work",
        "status": "created", "backendKind": "fake", "permissionMode": "ask",
        "createdAt": 10 + i, "updatedAt": 10 + i
    })
}

pub fn run_event(n: u8, i: u32, k: usize) -> Value {
    json!({"type": if k == 0 { "run_started" } else { "run_heartbeat" },
           "id": format!("r{i}-e{k}"), "runId": format!("r{i}"), "sessionId": parent(n),
           "turnId": format!("t{}", i % TURNS), "ts": 20 + k})
}

pub fn admission(n: u8, i: u32) -> Value {
    json!({
        "schemaVersion": 1, "sessionId": parent(n), "turnId": format!("t{i}"),
        "runId": format!("r{i}"), "userMessageId": format!("m{i}"),
        "execution": {"kind": "external_message"}, "previousRootTurnId": null,
        "normalizedInput": {"text": format!("turn {i}")}, "sourceMessages": [], "admittedAt": 30 + i
    })
}

pub fn rejection(n: u8, i: u32) -> Value {
    json!({
        "schemaVersion": 1, "sessionId": parent(n), "turnId": format!("t{i}"),
        "execution": {"kind": "external_message"},
        "skillInvocation": {"loaded": [], "failed": [{"name": format!("skill-{i}")}]},
        "rejectedAt": 40 + i
    })
}

/// A random store workload of `len` operations.
pub fn random_store_workload(rng: &mut SimRng, len: usize) -> Vec<StoreOp> {
    let mut ops = vec![StoreOp::Create(0)];
    let (mut children, mut messages) = (0u8, 0u32);
    for _ in 0..len {
        let n = rng.below(PARENTS as u64) as u8;
        let i = rng.below(RUNS as u64) as u32;
        ops.push(match rng.below(14) {
            0 => StoreOp::Create(n),
            1 => StoreOp::Touch(n, 100 + rng.below(100)),
            2 | 3 => {
                children += 1;
                StoreOp::Spawn {
                    parent: n,
                    key: rng.below(3) as u8,
                    child: children,
                }
            }
            4 | 5 => {
                messages += 1;
                StoreOp::Message(n, messages)
            }
            6 => StoreOp::Run(n, i),
            7 => StoreOp::RunEvent(n, i),
            8 => StoreOp::Start(n, i),
            9 => StoreOp::Terminal(n, i),
            10 => StoreOp::Admit(n, rng.below(TURNS as u64) as u32),
            11 => StoreOp::Reject(n, rng.below(TURNS as u64) as u32),
            12 => StoreOp::List,
            _ => StoreOp::Reopen,
        });
    }
    ops
}

/// The store workload and scenario a random seed stands for.
pub fn random_store_scenario(seed: u64) -> (Vec<StoreOp>, Scenario) {
    let mut rng = SimRng::new(seed ^ 0x0057_07e5);
    let len = 4 + rng.below(16) as usize;
    let ops = random_store_workload(&mut rng, len);
    scenario_of::<Stores>(ops, seed, rng)
}

/// Small fixed workloads for exhaustive crash testing: spawns (with a retry under the same key
/// and a reopen between), messages and header updates; a run's life with a repeated terminal
/// commit and a repeated admission; a rejected turn, rejected again and refused admission, and
/// an admitted turn refused a rejection.
pub fn small_store_workloads() -> Vec<Vec<StoreOp>> {
    use StoreOp::*;
    vec![
        vec![
            Create(0),
            Message(0, 1),
            List,
            Spawn {
                parent: 0,
                key: 0,
                child: 1,
            },
            Spawn {
                parent: 0,
                key: 0,
                child: 2,
            },
            Touch(0, 5),
            List,
            Reopen,
            Spawn {
                parent: 0,
                key: 1,
                child: 3,
            },
            Message(0, 2),
            List,
        ],
        vec![
            Create(1),
            Run(1, 0),
            RunEvent(1, 0),
            Admit(1, 0),
            Reject(1, 1),
            Start(1, 0),
            Terminal(1, 0),
            Reopen,
            Terminal(1, 0),
            Admit(1, 0),
            Reject(1, 1),
            Admit(1, 1),
            Reject(1, 0),
            RunEvent(1, 0),
        ],
    ]
}
