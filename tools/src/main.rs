//! `makalog`: verify, dump and demo a storage root. Read-only except `demo`; never takes the
//! owner lock for reading.

#[macro_use]
mod output;
mod claims;
mod demo;
mod dump;
mod events;
mod index;
mod sessions;
mod time;
mod timeline;
mod verify;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The default root `makalog demo` writes when none is given.
pub const DEFAULT_DEMO_ROOT: &str = "makalog-demo-root";

#[derive(Parser)]
#[command(
    name = "makalog",
    version,
    about = "Verify, dump and replay a makalog root offline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every segment, frame, seal and chain of a root. Exit 0 clean, 1 findings, 2 not a root.
    Verify {
        /// The root directory.
        root: PathBuf,
    },
    /// Print every record as one JSON object per line.
    Dump {
        /// The root directory.
        root: PathBuf,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
    },
    /// List the claims of a root: graph intent claims with their status, spawn and session claims.
    Claims {
        /// The root directory.
        root: PathBuf,
        /// Only the graph intent claims of this graph.
        #[arg(long)]
        graph: Option<String>,
        /// One JSON object per claim.
        #[arg(long)]
        json: bool,
    },
    /// Create (or extend) a root with realistic sessions across several segments, then verify it.
    Demo {
        /// The root directory to write.
        #[arg(default_value = DEFAULT_DEMO_ROOT)]
        root: PathBuf,
    },
    /// Work with RuntimeEvents (MAKA-MODEL §1–§3).
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Check or rebuild the index sidecars.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// List a session's invocations: opened, each with its first terminal event.
    Invocations {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per invocation.
        #[arg(long)]
        json: bool,
    },
    /// Every session, subagents under their parents: status, last activity, name.
    Sessions {
        /// The root directory.
        root: PathBuf,
        /// One canonical header per line.
        #[arg(long)]
        json: bool,
    },
    /// A session's runs with their status, duration and events.
    Runs {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per run: its header and its numbered events.
        #[arg(long)]
        json: bool,
    },
    /// A session's turns in order: runs, invocations and outcomes, with times and durations.
    Timeline {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per turn.
        #[arg(long)]
        json: bool,
    },
    /// A session's stored messages in append order.
    Messages {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// Only this turn's.
        #[arg(long)]
        turn: Option<String>,
        /// One canonical message per line.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Compare every sidecar with a fresh rebuild (read-only). Exit 0 when all equal, 1 otherwise.
    Check {
        /// The root directory.
        root: PathBuf,
    },
    /// Rebuild and replace every sidecar, under the owner lease (the only index command that writes).
    Rebuild {
        /// The root directory.
        root: PathBuf,
    },
}

#[derive(Subcommand)]
enum EventsCommand {
    /// Read one JSON event per line on stdin; print its canonical JSON or `error: <reason>`.
    /// Exit 0 if every line was accepted, 1 otherwise.
    Canonicalize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Verify { root } => verify::run(&root),
        Command::Dump { root, session } => dump::run(&root, session.as_deref()),
        Command::Claims { root, graph, json } => claims::run(&root, graph.as_deref(), json),
        Command::Demo { root } => demo::run(&root),
        Command::Events {
            command: EventsCommand::Canonicalize,
        } => events::canonicalize(),
        Command::Index {
            command: IndexCommand::Check { root },
        } => index::check(&root),
        Command::Index {
            command: IndexCommand::Rebuild { root },
        } => index::rebuild_all(&root),
        Command::Invocations {
            root,
            session,
            json,
        } => index::invocations(&root, &session, json),
        Command::Sessions { root, json } => sessions::list(&root, json),
        Command::Timeline {
            root,
            session,
            json,
        } => timeline::run(&root, &session, json),
        Command::Runs {
            root,
            session,
            json,
        } => sessions::runs(&root, &session, json),
        Command::Messages {
            root,
            session,
            turn,
            json,
        } => sessions::messages(&root, &session, turn.as_deref(), json),
    }
}

/// Exit code 2 with a message: usage errors and paths that are not roots.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("makalog: {message}");
    ExitCode::from(2)
}
