//! The model-based target: a structured sequence of public-API operations (sessions,
//! messages that roll small segments, runs, graph claims, clean reopens, crashes with any tear,
//! injected I/O faults and deaths mid-operation) run on simulated storage against an in-memory
//! model of what was acknowledged, compared after every step.
//!
//! Every acknowledged write is durable, so after a clean reopen or a crash the root must hold
//! exactly the model. An operation that fails under an injected fault may or may not have
//! landed: the process is then crashed and restarted, and the root must hold the model with or
//! without that one operation, which the model then adopts.

mod ops;
mod records;
mod restart;
mod state;

use arbitrary::{Arbitrary, Unstructured};
use ops::{Machine, Op};

/// The most operations one input runs.
const MAX_OPS: usize = 32;

/// Runs the operations `data` describes, checking the root against the model after each.
pub fn model(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut machine = Machine::start();
    for _ in 0..MAX_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => machine.step(&op),
            Err(_) => break,
        }
        if u.is_empty() {
            break;
        }
    }
    machine.finish();
}
