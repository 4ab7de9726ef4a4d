//! The command line: every command, its arguments and an example of each.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// The default root `makalog demo` writes when none is given.
pub const DEFAULT_DEMO_ROOT: &str = "makalog-demo-root";

#[derive(Parser)]
#[command(
    name = "makalog",
    version,
    about = "Verify, dump, replay, salvage, export and report on a makalog root offline",
    after_help = "Exit codes, the same for every command: 0 clean, 1 findings (damage, a difference, something left behind), 2 usage error or not a root.\n\nExample:\n  makalog demo && makalog verify makalog-demo-root && makalog report makalog-demo-root -o report.html"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Check every segment, frame, seal and chain of a root (optionally against heads recorded
    /// earlier). Exit 0 clean, 1 findings, 2 usage or not a root.
    #[command(
        after_help = "Examples:\n  makalog verify ROOT\n  makalog heads ROOT --json > heads.json   # keep it elsewhere\n  makalog verify COPY --against heads.json  # unchanged, grew, rewritten or lost, per log"
    )]
    Verify {
        /// The root directory, or a bundle `makalog export` wrote.
        root: PathBuf,
        /// Heads recorded earlier by `makalog heads --json`: report, per log, whether it is
        /// unchanged, grew, was rewritten or lost records.
        #[arg(long, value_name = "HEADS.json")]
        against: Option<PathBuf>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Each session's and the claims log's record count and chain head, to keep elsewhere.
    #[command(
        after_help = "Examples:\n  makalog heads ROOT\n  makalog heads ROOT --json > heads.json"
    )]
    Heads {
        /// The root directory.
        root: PathBuf,
        /// The heads file `verify --against` reads.
        #[arg(long)]
        json: bool,
    },
    /// Compare two copies of a root: per log the common prefix, where the chains diverge, and
    /// the records only in A and only in B. Exit 0 the same, 1 different, 2 usage.
    #[command(
        after_help = "Examples:\n  makalog diff ROOT copy-of-root\n  makalog diff ROOT copy-of-root --session demo-1 --json"
    )]
    Diff {
        /// Copy A.
        root_a: PathBuf,
        /// Copy B.
        root_b: PathBuf,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// One JSON object per log.
        #[arg(long)]
        json: bool,
    },
    /// A session as the stores would have answered at a point of its history: header, runs
    /// and their status, messages, invocations and outcomes, and the claims known then,
    /// rebuilt from the log prefix alone.
    #[command(
        after_help = "Examples:\n  makalog replay ROOT --session demo-1 --until 20\n  makalog replay ROOT --session demo-1 --at 2026-12-01T12:30:05Z --json\n\nA record's time is the latest instant it states; --at keeps the longest prefix of records\nthat state none later than TIME (milliseconds since the epoch, or ISO 8601 UTC)."
    )]
    Replay {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// Up to and including the record with this sequence number.
        #[arg(
            long,
            value_name = "SEQ",
            conflicts_with = "at",
            required_unless_present = "at"
        )]
        until: Option<u64>,
        /// As it stood at this time.
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Copy every intact session and the valid prefix of each damaged one (and of the claims
    /// log) into a new root that verifies clean, recomputing nothing; report what was left
    /// behind by file and offset. The source is never written. Exit 0 nothing left behind,
    /// 1 something was, 2 usage.
    #[command(
        after_help = "Examples:\n  makalog salvage damaged-root --into salvaged-root\n  makalog salvage damaged-root --into one-session --session demo-1 --session demo-2 --json"
    )]
    Salvage {
        /// The root directory to read.
        root: PathBuf,
        /// The new root to write; it must not exist, or be an empty directory.
        #[arg(long, value_name = "NEW_ROOT")]
        into: PathBuf,
        /// Only these sessions (every session when none is given).
        #[arg(long = "session", value_name = "ID")]
        sessions: Vec<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write a self-verifying bundle: the root's files (or the named sessions' and the root's
    /// own) and a manifest of every file's SHA-256, each log's head, the root id, the tool and
    /// when it was made. Check it with `makalog verify BUNDLE.tar`.
    #[command(
        after_help = "Examples:\n  makalog export ROOT -o evidence.tar\n  makalog export ROOT --session demo-1 -o demo-1.tar\n  makalog verify evidence.tar"
    )]
    Export {
        /// The root directory.
        root: PathBuf,
        /// Only these sessions (every session when none is given).
        #[arg(long = "session", value_name = "ID")]
        sessions: Vec<String>,
        /// The bundle to write; it must not exist.
        #[arg(short = 'o', long = "output", value_name = "BUNDLE.tar")]
        output: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write one self-contained HTML report: verify status and findings, heads, the session
    /// tree, the claims, and per session a timeline (runs as bars coloured by outcome, tool
    /// calls and errors marked), its runs, invocations and claims. No script, no network.
    #[command(
        after_help = "Example:\n  makalog report ROOT -o report.html && chromium report.html"
    )]
    Report {
        /// The root directory.
        root: PathBuf,
        /// The HTML file to write (replaced if present).
        #[arg(short = 'o', long = "output", value_name = "report.html")]
        output: PathBuf,
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  makalog completions bash > /etc/bash_completion.d/makalog"
    )]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print every record as one JSON object per line.
    #[command(
        after_help = "Examples:\n  makalog dump ROOT --session demo-1\n  makalog dump ROOT | jq -c 'select(.kind == \"run\")'"
    )]
    Dump {
        /// The root directory.
        root: PathBuf,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
    },
    /// List the claims of a root: graph intent claims with their status, spawn and session claims.
    #[command(
        after_help = "Examples:\n  makalog claims ROOT\n  makalog claims ROOT --graph demo-graph --json"
    )]
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
    #[command(
        after_help = "Examples:\n  makalog demo\n  makalog demo /tmp/demo-root && makalog report /tmp/demo-root -o report.html"
    )]
    Demo {
        /// The root directory to write.
        #[arg(default_value = DEFAULT_DEMO_ROOT)]
        root: PathBuf,
    },
    /// Import a ledger the original runtime wrote (runtime.sqlite, and memory.sqlite beside it)
    /// into a root, through the stores. Every row is imported or reported with why not; running
    /// it again imports nothing new, and an interrupted import resumes. Exit 0 imported, 1 rows
    /// refused (listed) or a failure midway, 2 refused with nothing written (another schema, a
    /// busy root, other sessions under the same ids).
    #[cfg(feature = "sqlite")]
    #[command(
        name = "import-sqlite",
        after_help = "Examples:\n  makalog import-sqlite /srv/agent-host/storage ROOT\n  makalog import-sqlite DB_DIR ROOT --json > import-report.json\n  makalog verify ROOT && makalog index check ROOT"
    )]
    ImportSqlite {
        /// The original's storage root: the directory holding runtime.sqlite (opened read-only).
        db_dir: PathBuf,
        /// The makalog root to import into (created if absent).
        root: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Work with RuntimeEvents (MAKA-MODEL §1–§3).
    #[command(after_help = "Example:\n  makalog events canonicalize < events.jsonl")]
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Check or rebuild the index sidecars.
    #[command(after_help = "Examples:\n  makalog index check ROOT\n  makalog index rebuild ROOT")]
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// List a session's invocations: opened, each with its first terminal event.
    #[command(
        after_help = "Examples:\n  makalog invocations ROOT --session demo-1\n  makalog invocations ROOT --session demo-1 --json"
    )]
    Invocations {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per invocation.
        #[arg(long)]
        json: bool,
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
    /// Every session, subagents under their parents: status, last activity, name.
    #[command(after_help = "Examples:\n  makalog sessions ROOT\n  makalog sessions ROOT --json")]
    Sessions {
        /// The root directory.
        root: PathBuf,
        /// One canonical header per line.
        #[arg(long)]
        json: bool,
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
    /// A session's runs with their status, duration and events.
    #[command(
        after_help = "Examples:\n  makalog runs ROOT --session graph-child-2\n  makalog runs ROOT --session demo-1 --json"
    )]
    Runs {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per run: its header and its numbered events.
        #[arg(long)]
        json: bool,
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
    /// A session's turns in order: runs, invocations and outcomes, with times and durations.
    #[command(
        after_help = "Examples:\n  makalog timeline ROOT --session demo-3\n  makalog timeline ROOT --session demo-3 --json"
    )]
    Timeline {
        /// The root directory.
        root: PathBuf,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object per turn.
        #[arg(long)]
        json: bool,
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
    /// A session's stored messages in append order.
    #[command(
        after_help = "Examples:\n  makalog messages ROOT --session demo-1\n  makalog messages ROOT --session demo-1 --turn TURN_ID --json"
    )]
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
        /// Answer from the segments alone, every index sidecar ignored: slower, and nothing
        /// taken on a sidecar's word (for a root you did not write: a sidecar forged with its
        /// checksums intact can leave records out).
        #[arg(long)]
        from_segments: bool,
    },
}

#[derive(Subcommand)]
pub enum IndexCommand {
    /// Compare every sidecar with a fresh rebuild (read-only). Exit 0 when all equal, 1 otherwise.
    #[command(after_help = "Example:\n  makalog index check ROOT --json")]
    Check {
        /// The root directory.
        root: PathBuf,
        /// One JSON object per sidecar.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild and replace every sidecar, under the owner lease (the only index command that writes).
    #[command(after_help = "Example:\n  makalog index rebuild ROOT")]
    Rebuild {
        /// The root directory.
        root: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum EventsCommand {
    /// Read one JSON event per line on stdin; print its canonical JSON or `error: <reason>`.
    /// Exit 0 if every line was accepted, 1 otherwise.
    #[command(after_help = "Example:\n  echo '{\"kind\":\"text\"}' | makalog events canonicalize")]
    Canonicalize,
}
