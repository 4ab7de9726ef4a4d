//! `makalog`: verify, dump, replay, salvage, export and report on a storage root offline.
//! Read-only on its input except `demo`, `index rebuild` and `import-sqlite`; never takes the
//! owner lock for reading. Exit codes, the same for every command: 0 clean, 1 findings, 2 usage
//! or not a root.

#[macro_use]
mod output;
mod bundle;
mod claims;
mod cli;
mod demo;
mod diff;
mod dump;
mod events;
mod export;
mod heads;
#[cfg(feature = "sqlite")]
mod import;
mod index;
mod invocations;
mod outside;
mod progress;
mod replay;
mod report;
mod salvage;
mod sessions;
mod time;
mod timeline;
mod verify;

use clap::Parser;

/// Every full scan decodes each record into small JSON values; mimalloc serves those
/// allocations faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use cli::{Cli, Command, EventsCommand, IndexCommand};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Verify {
            root,
            against,
            json,
        } => verify::run(&root, against.as_deref(), json),
        Command::Heads { root, json } => heads::run(&root, json),
        Command::Diff {
            root_a,
            root_b,
            session,
            json,
        } => diff::run(&root_a, &root_b, session.as_deref(), json),
        Command::Replay {
            root,
            session,
            until,
            at,
            json,
        } => replay::run(&root, &session, until, at.as_deref(), json),
        Command::Salvage {
            root,
            into,
            sessions,
            json,
        } => salvage::run(&root, &into, &sessions, json),
        Command::Export {
            root,
            sessions,
            output,
            json,
        } => export::run(&root, &sessions, &output, json),
        Command::Report {
            root,
            output,
            from_segments,
        } => report::run(&root, &output, sidecars(from_segments)),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut cli::Cli::command(),
                "makalog",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Dump { root, session } => dump::run(&root, session.as_deref()),
        Command::Claims { root, graph, json } => claims::run(&root, graph.as_deref(), json),
        Command::Demo { root } => demo::run(&root),
        #[cfg(feature = "sqlite")]
        Command::ImportSqlite { db_dir, root, json } => import::run(&db_dir, &root, json),
        Command::Events {
            command: EventsCommand::Canonicalize,
        } => events::canonicalize(),
        Command::Index {
            command: IndexCommand::Check { root, json },
        } => index::check(&root, json),
        Command::Index {
            command: IndexCommand::Rebuild { root },
        } => index::rebuild_all(&root),
        Command::Invocations {
            root,
            session,
            json,
            from_segments,
        } => invocations::invocations(&root, &session, json, sidecars(from_segments)),
        Command::Sessions {
            root,
            json,
            from_segments,
        } => sessions::list(&root, json, sidecars(from_segments)),
        Command::Timeline {
            root,
            session,
            json,
            from_segments,
        } => timeline::run(&root, &session, json, sidecars(from_segments)),
        Command::Runs {
            root,
            session,
            json,
            from_segments,
        } => sessions::runs(&root, &session, json, sidecars(from_segments)),
        Command::Messages {
            root,
            session,
            turn,
            json,
            from_segments,
        } => sessions::messages(
            &root,
            &session,
            turn.as_deref(),
            json,
            sidecars(from_segments),
        ),
    }
}

/// Exit code 2 with a message: usage errors and paths that are not roots.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    tell!("makalog: {message}");
    ExitCode::from(2)
}

/// What `--from-segments` asks of the read-only views.
fn sidecars(from_segments: bool) -> makalog::store::Sidecars {
    match from_segments {
        true => makalog::store::Sidecars::Ignored,
        false => makalog::store::Sidecars::Trusted,
    }
}
