//! A real child process killed with SIGKILL while claiming: every claim it acknowledged is
//! there after reopening, and nothing else is half-present.

mod support;

use makalog::claims::{AgentGraphIntentClaimRequest, ClaimsLog};
use makalog::root::try_acquire_owner;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

const CHILD_ENV: &str = "MAKALOG_KILL_CHILD_ROOT";
const THREADS: u64 = 4;

/// The claim the child makes for number `n`.
fn request(n: u64) -> AgentGraphIntentClaimRequest {
    AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{n:032x}"),
        graph_id: "graph-kill".into(),
        intent_id: format!("graph_intent_{n:032x}"),
        intent_fingerprint: format!("sha256:{:064x}", n),
        readiness_context_fingerprint: format!("sha256:{}", "c".repeat(64)),
        target_operator_id: "local-read".into(),
        target_session_id: format!("child-{}", n % THREADS),
        target_turn_id: format!("turn-{n}"),
        target_run_id: format!("run-{n}"),
    }
}

#[test]
fn claims_acknowledged_before_sigkill_survive_and_nothing_is_half_present() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let acked: Vec<u64> =
        support::child::acks_until_killed("claiming_child_process", CHILD_ENV, &root, 300, |l| {
            l.strip_prefix("acked ")?.parse().ok()
        });
    let owner = try_acquire_owner(&root)
        .expect("reopen")
        .expect("the dead child's lock is gone");
    let (log, _report) = ClaimsLog::open(&owner).expect("recovery after SIGKILL");
    let stored = log
        .list_agent_graph_intent_claims(Some("graph-kill"))
        .expect("list");
    let by_intent: std::collections::HashMap<_, _> = stored
        .iter()
        .map(|c| (c.claim.intent_id.clone(), c.claim.clone()))
        .collect();
    for n in &acked {
        let c = by_intent
            .get(&request(*n).intent_id)
            .unwrap_or_else(|| panic!("acknowledged claim {n} lost"));
        assert_eq!(c.request(), request(*n), "claim {n} intact");
    }
    let max_started = acked.iter().max().copied().unwrap_or(0) + THREADS * 2;
    for c in &stored {
        let n = u64::from_str_radix(&c.claim.intent_id["graph_intent_".len()..], 16).expect("hex");
        assert!(n <= max_started, "claim {n} was never attempted");
        assert_eq!(c.claim.request(), request(n), "claim {n} is whole");
    }
    assert!(stored.len() >= acked.len());
    support::child::assert_verifies_clean(&root);
}

/// Run by the test above in a child process: claims from four threads until killed, printing
/// each claim once it is acknowledged.
#[test]
#[ignore = "the child half of a two-process test; its parent runs it"]
fn claiming_child_process() {
    let root = std::env::var_os(CHILD_ENV).expect("run by its parent test with the root set");
    let owner = try_acquire_owner(Path::new(&root))
        .expect("acquire")
        .expect("free");
    let log = Arc::new(ClaimsLog::open(&owner).expect("open").0);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let n = i * THREADS + t;
                    log.claim_agent_graph_intent_at(request(n), n)
                        .expect("claim");
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "acked {n}").expect("print");
                    out.flush().expect("flush");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("join");
    }
}
