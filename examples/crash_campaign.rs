//! A long crash campaign: seeded random workloads on simulated storage, each crashed at a random
//! persistence point with a random tear, recovered and checked. CI runs 2,000 seeds through
//! `tests/crash_sim.rs`; this runs as many as you like.
//!
//! Run: `cargo run --release --example crash_campaign -- --seeds 100000 [--start 0]`
//! A failure prints its seed, crash point and tear; add them to `REGRESSIONS` in
//! `tests/crash_sim.rs` to keep it reproduced.

#[allow(dead_code)]
#[path = "../tests/support/crash/mod.rs"]
mod crash;
#[allow(dead_code)]
#[path = "../tests/support/events.rs"]
mod events;
#[path = "../tests/support/scenario.rs"]
#[allow(dead_code)]
mod scenario;

use crash::{check_scenario, random_scenario};
use std::process::ExitCode;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let start = arg("--start", 0);
    let seeds = arg("--seeds", 10_000);
    let mut failures = 0u64;
    let begun = std::time::Instant::now();
    for seed in start..start + seeds {
        let (ops, scenario) = random_scenario(seed);
        if let Err(e) = check_scenario(&ops, scenario) {
            failures += 1;
            println!("FAIL seed {seed}: {e}");
        }
        if (seed - start + 1) % 10_000 == 0 {
            println!(
                "{} seeds, {failures} failures, {:.0?}",
                seed - start + 1,
                begun.elapsed()
            );
        }
    }
    println!(
        "{seeds} seeds from {start}: {failures} failures in {:.1?}",
        begun.elapsed()
    );
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
