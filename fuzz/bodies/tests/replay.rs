//! Replays, on the stable toolchain, every input of every fuzz target's corpus
//! (`fuzz/corpus/<target>/`) and its kept regressions (`tests/fuzz-regressions/<target>/`)
//! through the target's body, as libFuzzer would run them.

use makalog_fuzz_bodies::TARGETS;
use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_corpus_and_regression_input_passes_its_target() {
    let mut total = 0;
    for (name, body) in TARGETS {
        let corpus = inputs(&repo().join("fuzz/corpus").join(name));
        let kept = inputs(&repo().join("tests/fuzz-regressions").join(name));
        // Every target is seeded: an empty corpus would replay nothing and pass.
        assert!(!corpus.is_empty(), "target {name} has no corpus");
        for path in corpus.iter().chain(&kept) {
            let bytes = std::fs::read(path).expect("an input");
            let run = std::panic::catch_unwind(|| body(&bytes));
            assert!(run.is_ok(), "target {name} fails on {}", path.display());
            total += 1;
        }
        println!(
            "{name}: {} corpus inputs, {} regressions",
            corpus.len(),
            kept.len()
        );
    }
    println!("{total} inputs replayed");
}

#[test]
fn every_target_has_a_fuzz_binary_and_only_those() {
    let dir = repo().join("fuzz/fuzz_targets");
    let mut binaries: Vec<String> = inputs(&dir)
        .iter()
        .filter_map(|p| p.file_stem()?.to_str().map(str::to_owned))
        .collect();
    binaries.sort();
    let mut names: Vec<String> = TARGETS.iter().map(|(n, _)| (*n).to_owned()).collect();
    names.sort();
    assert_eq!(binaries, names);
}
