//! The forensic commands on a large root, from the page cache, beside `sha256sum` of the same
//! files in the same run (the chain makes SHA-256 the floor of every full scan):
//! - verify, heads, export, `index rebuild` and report of a 1 GiB root, in MiB/s; bars:
//!   verify and index rebuild at least 0.7 × sha256sum;
//! - report of a 10,000-session root beside verify of it; bar: under 2 × verify's time.
//!
//! The roots are built from the demo's first session (its session header, runs, run events,
//! runtime events, messages and admissions, every record as the stores wrote it): the large
//! root holds 32 sessions each repeating it with fresh ids, the many-session root holds one
//! copy per session. Every command runs as the `makalog` binary; each is timed three times on
//! a warm page cache and the best is kept.
//!
//! Run: `cargo bench -p makalog-cli --bench forensics` (`-- --quick`: 64 MiB and 500 sessions;
//! `-- --keep`: leave the roots under `target/tmp` to profile a command on them).

use makalog::format::RecordKind;
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The bench's directory.
struct Scratch(PathBuf);

impl Scratch {
    fn path(&self) -> &Path {
        &self.0
    }
}

const BIN: &str = env!("CARGO_BIN_EXE_makalog");
const TRIES: usize = 3;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let (big_bytes, many) = if quick {
        (64u64 << 20, 500)
    } else {
        (1u64 << 30, 10_000)
    };
    let dir = tempfile::TempDir::new_in(env!("CARGO_TARGET_TMPDIR"))?;
    let scratch = Scratch(dir.path().to_path_buf());
    // `--keep`: leave the roots in the target directory, to profile a command on them.
    let _dir = if args.iter().any(|a| a == "--keep") {
        eprintln!("keeping the roots in {}", dir.keep().display());
        None
    } else {
        Some(dir)
    };
    let template = template(scratch.path())?;
    // A frame's bytes are its payload's and about 60 more; the sidecars add about a fifth.
    let template_bytes: usize = template.iter().map(|(_, p)| p.len() + 60).sum::<usize>() * 6 / 5;

    let big = scratch.path().join("big");
    let per_session = (big_bytes / 32 / template_bytes as u64).max(1);
    eprintln!("writing a root of 32 sessions × {per_session} copies of the demo's first session");
    write_root(&big, &template, 32, per_session)?;
    run(&[OsArg::s("index"), OsArg::s("rebuild"), OsArg::p(&big)])?;
    let files = all_files(&big)?;
    let bytes: u64 = files
        .iter()
        .map(|f| f.metadata().map_or(0, |m| m.len()))
        .sum();
    let mib = bytes as f64 / (1 << 20) as f64;
    let floor = best(|| sha256sum(&files))?;
    let mut rows = vec![("sha256sum (the floor)".to_owned(), floor)];
    let out = scratch.path().join("out");
    let cases: Vec<(&str, Vec<OsArg>)> = vec![
        ("verify", vec![OsArg::s("verify"), OsArg::p(&big)]),
        ("heads", vec![OsArg::s("heads"), OsArg::p(&big)]),
        (
            "export",
            vec![
                OsArg::s("export"),
                OsArg::p(&big),
                OsArg::s("-o"),
                OsArg::p(&out.join("b.tar")),
            ],
        ),
        (
            "index rebuild",
            vec![OsArg::s("index"), OsArg::s("rebuild"), OsArg::p(&big)],
        ),
        (
            "report",
            vec![
                OsArg::s("report"),
                OsArg::p(&big),
                OsArg::s("-o"),
                OsArg::p(&out.join("r.html")),
            ],
        ),
    ];
    for (name, args) in &cases {
        let t = best(|| {
            let _ = std::fs::remove_dir_all(&out);
            std::fs::create_dir_all(&out)?;
            run(args)
        })?;
        rows.push(((*name).to_owned(), t));
    }
    println!(
        "\n{:.0} MiB in {} files, best of {TRIES} from the page cache:\n",
        mib,
        files.len()
    );
    println!("| command | time | MiB/s | × sha256sum | bar |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, t) in &rows {
        let rate = mib / t.as_secs_f64();
        let ratio = floor.as_secs_f64() / t.as_secs_f64();
        let bar = match name.as_str() {
            "verify" | "index rebuild" => {
                format!("≥ 0.7: {}", if ratio >= 0.7 { "met" } else { "missed" })
            }
            _ => String::new(),
        };
        println!(
            "| {name} | {:.3} s | {rate:.0} | {ratio:.2} | {bar} |",
            t.as_secs_f64()
        );
    }

    let wide = scratch.path().join("many");
    eprintln!("writing a root of {many} sessions");
    write_root(&wide, &template, many, 1)?;
    run(&[OsArg::s("index"), OsArg::s("rebuild"), OsArg::p(&wide)])?;
    let verify = best(|| run(&[OsArg::s("verify"), OsArg::p(&wide)]))?;
    let report = best(|| {
        run(&[
            OsArg::s("report"),
            OsArg::p(&wide),
            OsArg::s("-o"),
            OsArg::p(&scratch.path().join("many.html")),
        ])
    })?;
    let ratio = report.as_secs_f64() / verify.as_secs_f64();
    println!("\n{many} sessions: verify {:.3} s, report {:.3} s: report = {ratio:.2} × verify (bar < 2: {})",
        verify.as_secs_f64(), report.as_secs_f64(), if ratio < 2.0 { "met" } else { "missed" });
    Ok(())
}

/// The demo's first session, record by record.
fn template(scratch: &Path) -> Result<Vec<(RecordKind, String)>> {
    let root = scratch.join("template");
    run(&[OsArg::s("demo"), OsArg::p(&root)])?;
    let storage = makalog::storage::RealStorage::new(&root);
    let mut out = Vec::new();
    for r in SessionReader::open(&storage, "demo-1", 1)? {
        let r = r?;
        out.push((r.kind, String::from_utf8(r.payload)?));
    }
    Ok(out)
}

/// Every run of exactly 32 lowercase hex digits (the demo's ids) with its last six digits
/// replaced by `copy`, so each copy's ids are its own.
fn fresh_ids(text: &str, copy: u64) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let is_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| is_hex(c)).count();
        if run == 32 {
            out.extend_from_slice(&b[i..i + 26]);
            out.extend_from_slice(format!("{:06x}", copy & 0xff_ffff).as_bytes());
        } else {
            // Bytes, not chars: a run of hex digits is ASCII, and the rest is copied as it is.
            out.extend_from_slice(&b[i..i + run.max(1)]);
        }
        i += run.max(1);
    }
    String::from_utf8(out).expect("only ASCII digits were replaced")
}

/// `sessions` sessions, each holding `copies` copies of the template (its session header once).
fn write_root(
    root: &Path,
    template: &[(RecordKind, String)],
    sessions: usize,
    copies: u64,
) -> Result<()> {
    let owner = makalog::root::try_acquire_owner(root)?.ok_or("root busy")?;
    for s in 0..sessions {
        let id = format!("bench-{s:06}");
        let (w, _) = SegmentWriter::open(&owner, &id, WriterConfig::default())?;
        for copy in 0..copies {
            for (i, (kind, payload)) in template.iter().enumerate() {
                if copy > 0 && i == 0 {
                    continue;
                }
                let text = payload.replace("\"demo-1\"", &format!("\"{id}\""));
                let text = if copy == 0 {
                    text
                } else {
                    fresh_ids(&text, copy)
                };
                w.append(*kind, text.as_bytes(), Durability::Buffered)?;
            }
        }
        w.close()?;
    }
    Ok(())
}

enum OsArg {
    S(&'static str),
    P(PathBuf),
}

impl OsArg {
    fn s(s: &'static str) -> OsArg {
        OsArg::S(s)
    }
    fn p(p: &Path) -> OsArg {
        OsArg::P(p.to_path_buf())
    }
}

fn run(args: &[OsArg]) -> Result<()> {
    let mut c = Command::new(BIN);
    for a in args {
        match a {
            OsArg::S(s) => c.arg(s),
            OsArg::P(p) => c.arg(p),
        };
    }
    let out = c.output()?;
    if !out.status.success() {
        return Err(format!("makalog failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

fn sha256sum(files: &[PathBuf]) -> Result<()> {
    for chunk in files.chunks(2000) {
        let out = Command::new("sha256sum").args(chunk).output()?;
        if !out.status.success() {
            return Err("sha256sum failed".into());
        }
    }
    Ok(())
}

fn best(mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    f()?; // warm the page cache
    let mut best = Duration::MAX;
    for _ in 0..TRIES {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed());
    }
    Ok(best)
}

fn all_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            } else if e.file_name() != "owner.lock" {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}
