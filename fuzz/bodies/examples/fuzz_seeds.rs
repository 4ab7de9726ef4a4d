//! Writes the fuzz targets' seed corpora from the format vectors, a demo root, the original's
//! RuntimeEvent validation corpus, and the damage the hardening tests inflict (bit flips,
//! truncations, zeroed tails); `tools/fuzz-campaign --seed` runs it, then `cargo fuzz cmin`
//! minimizes what it wrote.
//!
//! `cargo run -p makalog-fuzz-bodies --example fuzz_seeds -- OUT VECTORS DEMO_ROOT COMPAT_JSON`

use makalog::format::{FrameCursor, RecordKind, SegmentHeader, Tail, FOOTER_LEN, HEADER_LEN};
use makalog::storage::SimRng;
use makalog_fuzz_bodies::pack;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Seeds by target, each kept once.
#[derive(Default)]
struct Seeds(BTreeMap<&'static str, Vec<Vec<u8>>>);

impl Seeds {
    fn add(&mut self, target: &'static str, bytes: Vec<u8>) {
        let list = self.0.entry(target).or_default();
        if !list.contains(&bytes) {
            list.push(bytes);
        }
    }
}

/// Every file under `dir`, relative to it, in order.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel)).expect("a directory") {
            let entry = entry.expect("an entry");
            let path = rel.join(entry.file_name());
            if entry.file_type().expect("a type").is_dir() {
                stack.push(path);
            } else {
                out.push((
                    path.clone(),
                    std::fs::read(dir.join(&path)).expect("a file"),
                ));
            }
        }
    }
    out.sort();
    out
}

/// The damage the hardening tests inflict on a file: truncations, bit flips, a zeroed tail.
fn damaged(bytes: &[u8], rng: &mut SimRng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if bytes.is_empty() {
        return out;
    }
    for cut in [
        bytes.len() / 2,
        bytes.len() - 1,
        HEADER_LEN.min(bytes.len()) + 1,
    ] {
        out.push(bytes[..cut.min(bytes.len())].to_vec());
    }
    for _ in 0..3 {
        let mut b = bytes.to_vec();
        let at = rng.below(b.len() as u64) as usize;
        b[at] ^= 1 << rng.below(8);
        out.push(b);
    }
    let mut zeroed = bytes.to_vec();
    let half = zeroed.len() / 2;
    zeroed[half..].fill(0);
    out.push(zeroed);
    out
}

fn segment_seeds(seeds: &mut Seeds, bytes: &[u8], rng: &mut SimRng) {
    seeds.add(
        "segment_header",
        bytes[..HEADER_LEN.min(bytes.len())].to_vec(),
    );
    seeds.add("frame_stream", bytes.to_vec());
    for d in damaged(bytes, rng) {
        seeds.add("frame_stream", d);
    }
    let Ok((header, _)) = SegmentHeader::decode(bytes) else {
        return;
    };
    let mut cursor = FrameCursor::for_segment(&header);
    while let Some((_, frame)) = cursor.next_frame(bytes) {
        let target = match frame.kind {
            RecordKind::SessionHeader => "session_header",
            RecordKind::Message => "message",
            RecordKind::Run => "run_header",
            RecordKind::RunEvent => "run_event",
            RecordKind::Admission | RecordKind::TurnRejection => "admission",
            RecordKind::RuntimeEvent => "runtime_event",
            _ => continue,
        };
        seeds.add(target, frame.payload.to_vec());
    }
    if let Some(Tail::Sealed { footer, .. }) = cursor.end() {
        let at = footer.footer_offset as usize;
        seeds.add("seal_footer", bytes[at..at + FOOTER_LEN].to_vec());
    }
}

/// Seeds from the files of one root, and the root itself packed whole and damaged.
fn root_seeds(seeds: &mut Seeds, root: &Path, rng: &mut SimRng) {
    let files = files_under(root);
    for (path, bytes) in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match name {
            n if n.ends_with(".seg") => segment_seeds(seeds, bytes, rng),
            "claims.log" => {
                seeds.add("claims_log", bytes.clone());
                for d in damaged(bytes, rng) {
                    seeds.add("claims_log", d);
                }
            }
            "index" => seeds.add("sidecar", bytes.clone()),
            ".makalog-root.json" => seeds.add("root_marker", bytes.clone()),
            "open-runs" => seeds.add("open_runs", bytes.clone()),
            _ => {}
        }
    }
    // The files a reader reads; the vectors' expected outputs and inputs are not a root's.
    let root_files: Vec<(PathBuf, Vec<u8>)> = files
        .into_iter()
        .filter(|(p, _)| {
            !p.extension().is_some_and(|e| e == "json" || e == "jsonl")
                || p.ends_with(".makalog-root.json")
        })
        .filter(|(p, _)| p.file_name().is_some_and(|n| n != "MANIFEST.sha256"))
        .collect();
    seeds.add("root_dir", pack(&root_files));
    for (i, (_, bytes)) in root_files.iter().enumerate() {
        for d in damaged(bytes, rng).into_iter().take(2) {
            let mut hurt = root_files.clone();
            hurt[i].1 = d;
            seeds.add("root_dir", pack(&hurt));
        }
    }
}

/// The original's RuntimeEvent validation cases: its base event with each case's overrides,
/// their values kept as written (some numbers are out of any float's range on purpose).
fn compat_seeds(seeds: &mut Seeds, path: &Path) {
    let text = std::fs::read_to_string(path).expect("the corpus");
    let corpus: BTreeMap<String, Box<RawValue>> = serde_json::from_str(&text).expect("the corpus");
    let base: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(corpus["baseEvent"].get()).expect("a base event");
    let cases: Vec<BTreeMap<String, Box<RawValue>>> =
        serde_json::from_str(corpus["cases"].get()).expect("cases");
    for case in cases {
        let overrides: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(case["overrides"].get()).expect("overrides");
        let mut event: BTreeMap<&str, &str> =
            base.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
        for (k, v) in &overrides {
            event.insert(k, v.get());
        }
        let members: Vec<String> = event
            .iter()
            .map(|(k, v)| format!("{}:{v}", Value::String((*k).to_owned())))
            .collect();
        seeds.add(
            "runtime_event",
            format!("{{{}}}", members.join(",")).into_bytes(),
        );
    }
}

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [out, vectors, demo, compat] = args.as_slice() else {
        eprintln!("usage: fuzz_seeds OUT VECTORS DEMO_ROOT COMPAT_JSON");
        std::process::exit(2);
    };
    let mut seeds = Seeds::default();
    let mut rng = SimRng::new(7);
    for version in std::fs::read_dir(vectors).expect("the vectors") {
        let version = version.expect("an entry").path();
        for vector in std::fs::read_dir(&version).expect("a version") {
            let vector = vector.expect("an entry").path();
            if vector.is_dir() {
                root_seeds(&mut seeds, &vector, &mut rng);
            }
        }
    }
    root_seeds(&mut seeds, demo, &mut rng);
    compat_seeds(&mut seeds, compat);
    for _ in 0..16 {
        let len = 32 + rng.below(480) as usize;
        seeds.add("model", (0..len).map(|_| rng.below(256) as u8).collect());
    }
    for (target, list) in &seeds.0 {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).expect("a corpus directory");
        for (i, bytes) in list.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:04}")), bytes).expect("a seed");
        }
        println!("{target}: {} seeds", list.len());
    }
}
