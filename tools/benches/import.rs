//! `makalog import-sqlite` on a generated database in the original's schema with 100,000
//! runtime events (100 sessions × 100 runs × 10 events, with their admissions, runs, run
//! events, ordinals and messages), beside a plain SQLite scan of every row of the same file in
//! the same run: the floor any importer pays to read its source. Reports rows/s and MiB/s of
//! the source; bar: at least 50,000 rows/s. Each is timed three times (a fresh root each
//! time) and the best is kept; a rerun on the imported root (nothing new) is timed too.
//!
//! Run: `cargo bench -p makalog-cli --bench import` (`-- --quick`: 10,000 events; `-- --keep`:
//! leave the database and the roots under `target/tmp` to profile the import on them).

#[path = "../tests/common/sqlite_gen.rs"]
mod sqlite_gen;

use rusqlite::{Connection, OpenFlags};
use sqlite_gen::{generate, Shape};
use std::error::Error;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const BIN: &str = env!("CARGO_BIN_EXE_makalog");
const TRIES: usize = 3;
const BAR_ROWS_PER_S: f64 = 50_000.0;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let shape = if quick {
        Shape {
            sessions: 10,
            runs_per_session: 100,
            events_per_run: 10,
        }
    } else {
        Shape {
            sessions: 100,
            runs_per_session: 100,
            events_per_run: 10,
        }
    };
    let tmp = tempfile::TempDir::new_in(env!("CARGO_TARGET_TMPDIR"))?;
    let dir = tmp.path().to_path_buf();
    let _tmp = if args.iter().any(|a| a == "--keep") {
        eprintln!("keeping the database and roots in {}", tmp.keep().display());
        None
    } else {
        Some(tmp)
    };
    let db = dir.join("db");
    std::fs::create_dir_all(&db)?;
    eprintln!(
        "generating {} runtime events in the original's schema",
        shape.runtime_events()
    );
    generate(&db, shape);
    let db_bytes = std::fs::metadata(db.join("runtime.sqlite"))?.len();
    let mib = db_bytes as f64 / (1 << 20) as f64;

    let mut rows = 0u64;
    let scan = best(|_| {
        rows = scan_every_row(&db.join("runtime.sqlite"))?;
        Ok(())
    })?;
    let mut report = serde_json::Value::Null;
    let import = best(|i| {
        let root = dir.join(format!("root-{i}"));
        report = run_import(&db, &root)?;
        Ok(())
    })?;
    let reported = report["totals"]["rows"].as_u64().unwrap_or(0);
    if reported != rows {
        return Err(format!("the report counts {reported} rows, the scan {rows}").into());
    }
    let rerun = best(|_| {
        let again = run_import(&db, &dir.join("root-0"))?;
        if again["written"]["nothingNew"] != true {
            return Err("a rerun wrote something".into());
        }
        Ok(())
    })?;

    let per_s = |d: Duration| rows as f64 / d.as_secs_f64();
    let mib_s = |d: Duration| mib / d.as_secs_f64();
    println!(
        "source: {rows} rows ({} runtime events), runtime.sqlite {mib:.1} MiB; best of {TRIES}",
        shape.runtime_events()
    );
    println!("| what | time | rows/s | MiB/s | × the scan's time |");
    println!("|---|---:|---:|---:|---:|");
    for (what, d) in [
        ("SQLite scan of every row (the floor)", scan),
        ("makalog import-sqlite", import),
        ("makalog import-sqlite again (nothing new)", rerun),
    ] {
        println!(
            "| {what} | {:.3} s | {:.0} | {:.1} | {:.2} |",
            d.as_secs_f64(),
            per_s(d),
            mib_s(d),
            d.as_secs_f64() / scan.as_secs_f64()
        );
    }
    let met = per_s(import) >= BAR_ROWS_PER_S;
    println!(
        "bar: import at least {BAR_ROWS_PER_S:.0} rows/s: {:.0} rows/s, {}",
        per_s(import),
        if met { "met" } else { "MISSED" }
    );
    Ok(())
}

/// Reads every column of every row of every table, as an importer must at the least.
fn scan_every_row(path: &Path) -> Result<u64> {
    let conn = Connection::open_with_flags(
        format!("file:{}?immutable=1", path.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let (mut rows, mut bytes) = (0u64, 0usize);
    for t in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\""))?;
        let n = stmt.column_count();
        let mut q = stmt.query([])?;
        while let Some(row) = q.next()? {
            rows += 1;
            for i in 0..n {
                bytes += match row.get_ref(i)? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        t.len()
                    }
                    _ => 8,
                };
            }
        }
    }
    std::hint::black_box(bytes);
    Ok(rows)
}

fn run_import(db: &Path, root: &Path) -> Result<serde_json::Value> {
    let out = Command::new(BIN)
        .arg("import-sqlite")
        .arg(db)
        .arg(root)
        .arg("--json")
        .output()?;
    if !out.status.success() {
        return Err(format!("import-sqlite: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn best(mut f: impl FnMut(usize) -> Result<()>) -> Result<Duration> {
    let mut best = Duration::MAX;
    for i in 0..TRIES {
        let start = Instant::now();
        f(i)?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}
