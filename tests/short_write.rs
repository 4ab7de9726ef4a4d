//! Short writes: a write that stores a prefix of its bytes and then fails, injected at every
//! operation of a workload that covers segments, rolls, the claims log and the runtime-event
//! stores, once and for ever. After each, a crash with a random tear and recovery: nothing
//! acknowledged is lost, nothing unacknowledged is invented, and a failed writer acknowledges
//! nothing more.

mod support;

use makalog::storage::FaultKind;
use support::crash::every_operation_failing;

#[test]
fn short_writes_at_every_operation_once_and_forever() {
    let (cases, calls) =
        every_operation_failing(FaultKind::ShortWrite).unwrap_or_else(|e| panic!("{e}"));
    assert!(cases > 100, "{cases} short-write cases");
    println!("short writes: {cases} fault cases, {calls} calls refused by failed writers");
}
