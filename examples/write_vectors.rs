//! Writes the golden vectors of the current format version from their `input.json` files:
//! segments, `expected.jsonl` and the manifest. It refuses to touch a vector that already has
//! segments: vectors are never regenerated, a format change bumps the version instead.
//!
//! Run: `cargo run --example write_vectors`

#[path = "../tests/support/vectors.rs"]
mod vectors;

use makalog::format::{hex, FORMAT_VERSION};
use sha2::{Digest, Sha256};
use std::path::Path;

fn main() {
    for older in vectors::VERSIONS.filter(|&v| v != FORMAT_VERSION) {
        println!("v{older}: an older version's vectors, left as they are");
    }
    let base = vectors::vectors_dir(FORMAT_VERSION);
    let mut names: Vec<String> = std::fs::read_dir(&base)
        .expect("vectors dir")
        .filter_map(|e| e.ok())
        .filter(|e| {
            ["input.json", "claims-input.json", "events-input.json"]
                .iter()
                .any(|f| e.path().join(f).exists())
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        let dir = base.join(name);
        if dir.join("sessions").exists() || dir.join("claims.log").exists() {
            println!("{name}: exists, left as it is");
            continue;
        }
        if dir.join("events-input.json").exists() {
            let input = vectors::read_events_input(&dir);
            vectors::write_events_vector(&dir, name, FORMAT_VERSION, &input);
            std::fs::write(
                dir.join("expected.jsonl"),
                vectors::dump(&dir, &input.session_id),
            )
            .expect("expected.jsonl");
            std::fs::write(
                dir.join("expected-invocations.jsonl"),
                vectors::invocations_dump(&dir, &input.session_id),
            )
            .expect("expected-invocations.jsonl");
            println!("{name}: written");
            continue;
        }
        if dir.join("claims-input.json").exists() {
            vectors::write_claims_vector(
                &dir,
                name,
                FORMAT_VERSION,
                &vectors::read_claims_input(&dir),
            );
            std::fs::write(dir.join("expected.jsonl"), vectors::claims_dump(&dir))
                .expect("expected.jsonl");
            println!("{name}: written");
            continue;
        }
        let input = vectors::read_input(&dir);
        vectors::write_vector(&dir, name, FORMAT_VERSION, &input);
        std::fs::write(
            dir.join("expected.jsonl"),
            vectors::dump(&dir, &input.session_id),
        )
        .expect("expected.jsonl");
        println!("{name}: written");
    }
    for name in &names {
        // The lease file is left by writing; it is no part of the vector.
        let _ = std::fs::remove_file(base.join(name).join(makalog::root::LOCK_FILE));
    }
    let mut manifest = String::new();
    let mut files = Vec::new();
    collect(&base, &base, &mut files);
    files.sort();
    for rel in files {
        let bytes = std::fs::read(base.join(&rel)).expect("read");
        manifest.push_str(&format!("{}  {rel}\n", hex(&Sha256::digest(&bytes))));
    }
    std::fs::write(base.join("MANIFEST.sha256"), manifest).expect("manifest");
}

fn collect(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir)
        .expect("read_dir")
        .filter_map(|e| e.ok())
    {
        let p = e.path();
        if p.is_dir() {
            collect(base, &p, out);
        } else if p.file_name().is_some_and(|n| n != "MANIFEST.sha256") {
            out.push(p.strip_prefix(base).expect("prefix").display().to_string());
        }
    }
}
