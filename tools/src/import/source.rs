//! The original runtime's databases, opened read-only: which schema they are, and every table
//! with its row count.

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// The operational database's file name in a storage root of the original.
pub const RUNTIME_DB: &str = "runtime.sqlite";
/// The long-term memory database's file name.
pub const MEMORY_DB: &str = "memory.sqlite";

/// Why the source cannot be imported; nothing was written.
#[derive(Debug)]
pub enum SourceError {
    /// A database could not be opened or read.
    Sqlite { file: PathBuf, what: String },
    /// A database of a schema this importer does not know.
    Schema { file: PathBuf, what: String },
    /// A database without the indexes the importer's repeated queries need, so large that
    /// those queries would read `reads` rows beyond those they take (`table`'s the most).
    Unindexed {
        file: PathBuf,
        table: String,
        reads: u128,
    },
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Sqlite { file, what } => write!(f, "{}: {what}", file.display()),
            SourceError::Schema { file, what } => {
                write!(
                    f,
                    "{}: unknown schema: {what}; nothing was imported",
                    file.display()
                )
            }
            SourceError::Unindexed { file, table, reads } => write!(
                f,
                "{}: too costly to import as it is: the importer's queries would read about \
                 {reads} rows beyond those they take ({table} the table read most), more than {}; \
                 a table lacks an index the original's schema.sql gives it, or statistics in \
                 sqlite_stat1 steer SQLite past one: add the original's indexes to a copy (or \
                 drop its statistics) and import the copy; nothing was imported",
                file.display(),
                super::plans::SCAN_BOUND
            ),
        }
    }
}

/// One table of a source database.
#[derive(Debug, Clone)]
pub struct Table {
    pub file: &'static str,
    pub name: String,
    pub rows: u64,
}

/// The source databases, open read-only.
pub struct Source {
    pub dir: PathBuf,
    pub runtime: Connection,
    pub memory: Option<Connection>,
}

impl Source {
    /// Opens `dir`'s databases read-only and checks the runtime database's schema.
    pub fn open(dir: &Path) -> Result<Source, SourceError> {
        let runtime_path = dir.join(RUNTIME_DB);
        if !runtime_path.is_file() {
            return Err(SourceError::Sqlite {
                file: runtime_path,
                what: "no such database: DB_DIR is the original's storage root, holding runtime.sqlite".into(),
            });
        }
        let runtime = open_read_only(&runtime_path)?;
        super::schema::check_migrations(&runtime, &runtime_path)?;
        super::schema::check_columns(&runtime, &runtime_path)?;
        let memory_path = dir.join(MEMORY_DB);
        let memory = if memory_path.is_file() {
            Some(open_read_only(&memory_path)?)
        } else {
            None
        };
        Ok(Source {
            dir: dir.to_owned(),
            runtime,
            memory,
        })
    }

    /// Every table of both databases with its row count, runtime first, each by name.
    pub fn tables(&self) -> Result<Vec<Table>, SourceError> {
        let mut out = tables_of(&self.runtime, RUNTIME_DB, &self.dir)?;
        if let Some(memory) = &self.memory {
            out.extend(tables_of(memory, MEMORY_DB, &self.dir)?);
        }
        Ok(out)
    }

    /// A failure reading the runtime database.
    pub fn error(&self, e: rusqlite::Error) -> SourceError {
        SourceError::Sqlite {
            file: self.dir.join(RUNTIME_DB),
            what: e.to_string(),
        }
    }
}

/// Opens a database read-only: `immutable` (no lock, no `-shm` written) when it has no
/// write-ahead log to read (the original checkpoints before a copy), read-only through its log
/// otherwise (SQLite then keeps its `-shm` beside it). A rollback journal left by a transaction
/// cut short is refused: only a writer can roll it back. The schema's own SQL is not trusted
/// to call functions, and everything is read in one transaction, so all passes see one
/// snapshot.
fn open_read_only(path: &Path) -> Result<Connection, SourceError> {
    let beside = |suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
    if std::fs::metadata(beside("-journal")).is_ok_and(|m| m.len() > 0) {
        return Err(SourceError::Sqlite {
            file: path.to_owned(),
            what: "has a rollback journal: a transaction was cut short; open it once with SQLite where it can write, to roll it back".into(),
        });
    }
    let has_wal = std::fs::metadata(beside("-wal")).is_ok_and(|m| m.len() > 0);
    let uri = format!(
        "file:{}?{}",
        uri_path(path),
        if has_wal { "mode=ro" } else { "immutable=1" }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let fail = |e: rusqlite::Error| SourceError::Sqlite {
        file: path.to_owned(),
        what: if has_wal {
            format!("{e} (it has a write-ahead log: checkpoint it, or copy the files somewhere writable)")
        } else {
            e.to_string()
        },
    };
    let conn = Connection::open_with_flags(uri, flags).map_err(fail)?;
    conn.execute_batch("PRAGMA trusted_schema = OFF; BEGIN")
        .map_err(fail)?;
    // A file that is not a database fails only at its first read.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(fail)?;
    Ok(conn)
}

/// The path as a URI path: `%`, `?` and `#` escaped, so that no file name reads as a query.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

fn tables_of(conn: &Connection, file: &'static str, dir: &Path) -> Result<Vec<Table>, SourceError> {
    let fail = |e: rusqlite::Error| SourceError::Sqlite {
        file: dir.join(file),
        what: e.to_string(),
    };
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .map_err(fail)?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(fail)?;
    names
        .into_iter()
        .map(|name| {
            let rows: i64 = conn
                .query_row(
                    &format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\"")),
                    [],
                    |r| r.get(0),
                )
                .map_err(fail)?;
            Ok(Table {
                file,
                name,
                rows: rows.max(0) as u64,
            })
        })
        .collect()
}
