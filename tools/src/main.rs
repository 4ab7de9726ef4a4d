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
        Command::Report { root, output } => report::run(&root, &output),
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
        } => invocations::invocations(&root, &session, json),
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
    tell!("makalog: {message}");
    ExitCode::from(2)
}
