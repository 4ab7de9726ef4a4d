//! Damaged and rearranged copies of a root: truncations and bit flips of its logs, segments
//! removed, renamed or copied into another session.

use crate::common::copy_dir;
use std::path::{Path, PathBuf};

/// The logs of a root: its segment files and claims log, relative to the root.
pub fn log_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if root.join("claims.log").is_file() {
        out.push(PathBuf::from("claims.log"));
    }
    if let Ok(sessions) = std::fs::read_dir(root.join("sessions")) {
        for s in sessions {
            let s = s.expect("entry").path();
            for f in std::fs::read_dir(&s).expect("session dir") {
                let f = f.expect("entry").path();
                if f.extension().is_some_and(|x| x == "seg") {
                    out.push(f.strip_prefix(root).expect("under root").to_owned());
                }
            }
        }
    }
    out.sort();
    out
}

/// A small deterministic generator (splitmix64), so the damaged copies are the same each run.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Damaged copies of `root` under `out`: for each log file, truncations at the header's edges,
/// the last byte and a footer's length from the end, and at random places; bit flips at random
/// places and in its first and last bytes; a segment followed by another of its session
/// removed; a segment renamed to another first seq, or copied into a session of its own; only
/// every `every`-th of them is made. Returns (what was done, the copy).
pub fn damaged(root: &Path, out: &Path, rng: &mut Rng, every: usize) -> Vec<(String, PathBuf)> {
    let mut made = Vec::new();
    let mut n = 0usize;
    let files = log_files(root);
    for (fi, rel) in files.iter().enumerate() {
        let bytes = std::fs::read(root.join(rel)).expect("read log");
        let len = bytes.len() as u64;
        let mut cuts: Vec<u64> = vec![
            0,
            1,
            127,
            128,
            255,
            256,
            257,
            len - 1,
            len.saturating_sub(68),
        ];
        cuts.extend((0..6).map(|_| rng.below(len)));
        let mut flips: Vec<u64> = vec![0, 8, 200, len - 1];
        flips.extend((0..10).map(|_| rng.below(len * 8) / 8));
        cuts.sort_unstable();
        cuts.dedup();
        flips.sort_unstable();
        flips.dedup();
        let same_session =
            |other: Option<&PathBuf>| other.is_some_and(|o| o.parent() == rel.parent());
        let segment = rel.starts_with("sessions");
        // A segment with another after it in its session: the first (its successor is then the
        // first left) or one in the middle (a gap).
        let drop = (segment && same_session(files.get(fi + 1))).then_some(("drop", 0));
        // Renamed to announce another first seq; copied alone into a session of its own, whose
        // name its header does not give.
        // Renamed only to a free name, which then keeps the files' order.
        let rename_to = segment
            .then(|| renamed(rel))
            .filter(|to| !root.join(to).exists());
        let moves = rename_to
            .as_ref()
            .map(|_| ("rename", 0))
            .into_iter()
            .chain(segment.then_some(("transplant", 0)));
        for (what, at) in cuts
            .iter()
            .filter(|&&c| c < len)
            .map(|&c| ("cut", c))
            .chain(flips.iter().filter(|&&f| f < len).map(|&f| ("flip", f)))
            .chain(drop)
            .chain(moves)
        {
            let bit = rng.below(8);
            n += 1;
            if !(n - 1).is_multiple_of(every) {
                continue;
            }
            let copy = out.join(format!("{}-{fi}-{what}-{at}", made.len()));
            copy_dir(root, &copy);
            let path = copy.join(rel);
            let mut b = bytes.clone();
            match what {
                "drop" => {
                    std::fs::remove_file(&path).expect("remove segment");
                    made.push((format!("{} removed", rel.display()), copy));
                    continue;
                }
                "rename" => {
                    let to = copy.join(rename_to.as_ref().expect("a free name"));
                    std::fs::rename(&path, to).expect("rename segment");
                    made.push((format!("{} renamed", rel.display()), copy));
                    continue;
                }
                "transplant" => {
                    let dir = copy.join("sessions/transplanted");
                    std::fs::create_dir_all(&dir).expect("mkdir");
                    std::fs::copy(&path, dir.join(rel.file_name().expect("name")))
                        .expect("copy segment");
                    made.push((
                        format!("{} copied into another session", rel.display()),
                        copy,
                    ));
                    continue;
                }
                "cut" => b.truncate(at as usize),
                _ => b[at as usize] ^= 1 << bit,
            }
            std::fs::write(&path, &b).expect("write damaged copy");
            made.push((format!("{} {what} at {at}", rel.display()), copy));
        }
    }
    made
}

/// The segment at `rel` named for the next sequence number: a name its header does not give.
pub fn renamed(rel: &Path) -> PathBuf {
    let first: u64 = rel
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("a segment's 20 digits");
    rel.with_file_name(format!("{:020}.seg", first + 1))
}
