//! The crash harness: runs a workload of the public API on simulated storage, records what was
//! acknowledged, crashes at a chosen persistence point with a chosen tear, recovers, and checks
//! the invariants against a model of what was submitted.
//!
//! Each capability adds its operations to [`Op`] and its expectations to [`Model`]: segments
//! (durable and buffered appends, syncs, rolls and seals through a small segment size), the
//! claims log (claims, retries, conflicts, status changes, spawn and session claims), and the
//! runtime-event store with its index sidecar (openings, texts, partials, terminals, sealed
//! runs, closes that write the sidecar).

use super::events;
pub use super::scenario::Scenario;
use super::scenario::{every_operation_failing_in, scenario_of, Harness};
use makalog::claims::{
    AdmissionStatus, AdmissionStatusChange, AgentGraphIntentClaim, AgentGraphIntentClaimRequest,
    ClaimRecord, ClaimTables, ClaimsLog, Decision, SessionCreateClaim, SubagentSpawnClaim,
};
use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::index::{encode_sidecar, rebuild, runtime_invocations_from_session_events};
use makalog::root::{create_or_open_root, Owner};
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::{FaultKind, SimRng, SimStorage, Storage};
use makalog::store::RuntimeEventStore;
use makalog::Error;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Sessions a workload writes to.
pub const SESSIONS: [&str; 2] = ["crash-a", "crash-b"];

/// Small segments and zero-fill steps, so short workloads roll, seal and preallocate.
pub fn config() -> WriterConfig {
    WriterConfig {
        segment_size: 700,
        prealloc_step: 128,
        max_payload: 4096,
        buffered_limit: 400,
    }
}

/// One operation of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Append {
        session: usize,
        len: usize,
        durable: bool,
    },
    Sync {
        session: usize,
    },
    Claim {
        n: u32,
    },
    RetryClaim {
        n: u32,
    },
    ConflictClaim {
        n: u32,
    },
    Status {
        n: u32,
        status: AdmissionStatus,
    },
    Spawn {
        n: u32,
    },
    SessionClaim {
        n: u32,
    },
    /// Runtime events of run `run` in the event session: its opening, a text, a partial chunk,
    /// its terminal event.
    EventOpen {
        run: u32,
    },
    EventText {
        run: u32,
        i: u32,
    },
    EventPartial {
        run: u32,
        i: u32,
    },
    EventEnd {
        run: u32,
    },
    /// Closes the event store (syncing and writing the sidecar) and opens it again.
    EventClose,
    /// An immutable event `i` in small session `session`, through a store that keeps only
    /// [`SMALL_OPEN`] sessions open: touching a third evicts one (closing it cleanly).
    SmallEvent {
        session: u32,
        i: u32,
    },
    /// Closes the small sessions' store (each session synced, its sidecar written, its zeros
    /// cut); the next small event opens it again.
    SmallClose,
}

/// How many small sessions a workload writes, and how many of them stay open at once.
pub const SMALL_SESSIONS: u32 = 5;
pub const SMALL_OPEN: usize = 2;

fn small_session(n: u32) -> String {
    format!("crash-small-{n}")
}

/// Small sessions' segments: a first block of 1 KiB, growth past it, rolls at 1,500 bytes.
pub fn small_config() -> WriterConfig {
    WriterConfig {
        segment_size: 1500,
        prealloc_step: 1024,
        max_payload: 4096,
        buffered_limit: 400,
    }
}

/// The session the runtime-event store writes.
pub const EVENT_SESSION: &str = "crash-events";

mod check;
mod recover;
mod run;
mod workload;

pub use check::check;
pub use recover::{recover, Recovered};
pub use run::{run, Model};
pub use workload::{random_sessions_workload, random_workload, small_workloads};

/// The segments, claims and runtime-event workload as a crash harness.
pub struct Engine;

impl Harness for Engine {
    type Op = Op;
    type Model = Model;
    type Recovered = Recovered;
    fn run(storage: &Arc<SimStorage>, ops: &[Op]) -> Model {
        run(storage, ops)
    }
    fn recover(storage: &Arc<SimStorage>) -> Result<Recovered, String> {
        recover(storage)
    }
    fn check(model: &Model, got: &Recovered) -> Result<(), String> {
        check(model, got)
    }
    fn calls_after_failure(model: &Model) -> usize {
        model.calls_after_failure
    }
}

/// The workload and scenario a random seed stands for.
pub fn random_scenario(seed: u64) -> (Vec<Op>, Scenario) {
    let mut rng = SimRng::new(seed);
    let len = 5 + rng.below(25) as usize;
    let ops = random_workload(&mut rng, len);
    scenario_of::<Engine>(ops, seed, rng)
}

/// The many-sessions workload and scenario a random seed stands for.
pub fn random_sessions_scenario(seed: u64) -> (Vec<Op>, Scenario) {
    let mut rng = SimRng::new(seed ^ 0x5e55_1055);
    let len = 5 + rng.below(20) as usize;
    let ops = random_sessions_workload(&mut rng, len);
    scenario_of::<Engine>(ops, seed, rng)
}

/// Persistence points a workload passes when nothing fails.
pub fn count_points(ops: &[Op]) -> u64 {
    super::scenario::count_points::<Engine>(ops)
}

/// [`super::scenario::check_scenario`] for this harness.
pub fn check_scenario(ops: &[Op], s: Scenario) -> Result<(), String> {
    super::scenario::check_scenario::<Engine>(ops, s)
}

/// The fault workload (the small workloads, then a random one) with `kind` injected at every
/// operation in turn, once and for ever; returns the cases run and the calls failed writers
/// refused.
pub fn every_operation_failing(kind: FaultKind) -> Result<(u64, usize), String> {
    let mut ops = small_workloads().concat();
    let mut rng = SimRng::new(7);
    ops.extend(random_workload(&mut rng, 20));
    every_operation_failing_in::<Engine>(&ops, kind)
}
