//! The forensic building blocks: the cut view a point-in-time replay and salvage read
//! through, the verdicts against recorded heads, and the diff of two chains.

use makalog::forensics::against::judge;
use makalog::forensics::{diff_chains, session_chain, stated_time, HeadVerdict, LogHead};
use makalog::format::RecordKind;
use makalog::segment::{Durability, SegmentWriter, SessionReader, WriterConfig};
use makalog::storage::{Cut, CutView, OpenMode, RealStorage, Storage};
use std::path::Path;

/// A root holding session `s` with `n` records across segments of about 1 KiB.
fn root_with_records(dir: &Path, n: u64) -> RealStorage {
    let owner = makalog::root::try_acquire_owner(dir)
        .expect("root")
        .expect("free");
    let config = WriterConfig {
        segment_size: 1024,
        ..WriterConfig::default()
    };
    let (w, _) = SegmentWriter::open(&owner, "s", config).expect("writer");
    for i in 0..n {
        let payload = format!(
            "{{\"i\":{i},\"pad\":\"{}\",\"ts\":{}}}",
            "x".repeat(100),
            1000 + i
        );
        w.append(
            RecordKind::RuntimeEvent,
            payload.as_bytes(),
            Durability::Durable,
        )
        .expect("append");
    }
    w.close().expect("close");
    RealStorage::new(dir)
}

#[test]
fn a_cut_view_ends_files_hides_others_and_refuses_every_write() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = root_with_records(&t.path().join("r"), 40);
    let records: Vec<_> = SessionReader::open(&storage, "s", 1)
        .expect("reader")
        .map(|r| r.expect("valid"))
        .collect();
    let segments = makalog::segment::layout::list_session(&storage, "s")
        .expect("list")
        .segments;
    assert!(segments.len() >= 3, "several segments: {}", segments.len());
    let keep = &records[17];
    let mut view = CutView::new(&storage);
    let mut past = false;
    for seg in &segments {
        if past {
            view.cut(&seg.path, Cut::Hidden);
        } else if seg.path == keep.file {
            view.cut(&seg.path, Cut::At(keep.end));
            past = true;
        }
    }
    let seen: Vec<u64> = SessionReader::open(&view, "s", 1)
        .expect("reader")
        .map(|r| r.expect("valid").seq)
        .collect();
    assert_eq!(seen, (1..=keep.seq).collect::<Vec<_>>());
    let f = view.open(&keep.file, OpenMode::Read).expect("open");
    assert_eq!(f.size().expect("size"), keep.end);
    let mut buf = [0u8; 16];
    assert_eq!(f.read_at(&mut buf, keep.end).expect("read"), 0);
    assert!(f.write_all_at(b"x", 0).is_err());
    assert!(view.open(&keep.file, OpenMode::ReadWrite).is_err());
    assert!(view.create_dir(Path::new("x")).is_err());
    assert!(view.remove_file(&keep.file).is_err());
    assert!(view.try_lock(Path::new("owner.lock")).is_err());
    let hidden = &segments.last().expect("last").path;
    assert!(view.read_file(hidden).is_err());
    assert_eq!(view.entry_kind(hidden).expect("kind"), None);
    let listed = view.list_dir(hidden.parent().expect("dir")).expect("list");
    assert!(listed.iter().all(|e| !hidden.ends_with(&e.name)));
    assert_eq!(
        view.read_file(&keep.file).expect("read").len() as u64,
        keep.end
    );
    assert_eq!(
        view.map_file(&keep.file).expect("map").len() as u64,
        keep.end
    );
}

/// A live root's durable view is the root as it stood when the view was made: a segment a roll
/// creates afterwards (after a log the view cut before its seal) and a session created
/// afterwards are not in it, by listing, by kind or by name; what was there still is, and the
/// heads read through the view are unchanged.
#[test]
fn a_durable_view_holds_nothing_the_owner_creates_after_it() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = root_with_records(t.path(), 12);
    let dir = Path::new("sessions/s");
    let (view, _) = makalog::forensics::durable_view(&storage).expect("view");
    let before = makalog::forensics::read_heads(&view).expect("heads");
    let listed = view.list_dir(dir).expect("list");
    // What the owner does next: a roll's new segment, a new session.
    let late = dir.join("00000000000000009999.seg");
    std::fs::write(t.path().join(&late), b"MAKASEG late").expect("segment");
    std::fs::create_dir(t.path().join("sessions/late")).expect("session");
    std::fs::write(
        t.path().join("sessions/late/00000000000000000001.seg"),
        b"x",
    )
    .expect("file");

    assert_eq!(view.list_dir(dir).expect("list"), listed);
    assert_eq!(view.entry_kind(&late).expect("kind"), None);
    assert!(view.open(&late, OpenMode::Read).is_err());
    let sessions: Vec<String> = view
        .list_dir(Path::new("sessions"))
        .expect("list")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(sessions, ["s"]);
    assert_eq!(
        view.entry_kind(Path::new("sessions/late")).expect("kind"),
        None
    );
    let deep = Path::new("sessions/late/00000000000000000001.seg");
    assert!(
        view.read_file(deep).is_err(),
        "nothing under a later directory"
    );
    assert!(!listed.is_empty() && view.read_file(&dir.join(&listed[0].name)).is_ok());
    assert_eq!(
        makalog::forensics::read_heads(&view).expect("heads"),
        before
    );
}

#[test]
fn verdicts_against_a_recorded_head_tell_growth_from_rewrite_and_loss() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = root_with_records(&t.path().join("r"), 30);
    let chain = session_chain(&storage, "s").expect("chain");
    assert_eq!(chain.head_seq(), 30);
    let head = |seq: u64| LogHead {
        records: seq,
        head_seq: seq,
        chain: chain.at(seq).expect("link").chain,
    };
    assert_eq!(judge(&head(30), &chain), HeadVerdict::Unchanged);
    assert_eq!(judge(&head(12), &chain), HeadVerdict::Grew { added: 18 });
    let mut forged = head(12);
    forged.chain[0] ^= 1;
    assert_eq!(judge(&forged, &chain), HeadVerdict::Rewritten { seq: 12 });
    let beyond = LogHead {
        records: 31,
        head_seq: 31,
        chain: [7; 32],
    };
    assert_eq!(
        judge(&beyond, &chain),
        HeadVerdict::Lost {
            recorded: 31,
            holds: 30
        }
    );
    let empty = LogHead {
        records: 0,
        head_seq: 0,
        chain: chain.genesis,
    };
    assert_eq!(judge(&empty, &chain), HeadVerdict::Grew { added: 30 });
    assert!(HeadVerdict::Rewritten { seq: 1 }.is_finding());
    assert!(!HeadVerdict::Grew { added: 1 }.is_finding());
}

#[test]
fn a_diff_of_a_log_and_its_prefix_shares_the_prefix_and_lists_the_rest() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = root_with_records(&t.path().join("r"), 25);
    let full = session_chain(&storage, "s").expect("chain");
    let mut prefix = full.clone();
    prefix.links.truncate(10);
    let d = diff_chains("s", Some(&prefix), Some(&full));
    assert_eq!((d.common, d.diverges_at), (10, None));
    assert_eq!(
        d.only_b.iter().map(|l| l.seq).collect::<Vec<_>>(),
        (11..=25).collect::<Vec<_>>()
    );
    assert!(d.only_a.is_empty() && !d.is_same());
    assert!(diff_chains("s", Some(&full), Some(&full)).is_same());
    let mut other = full.clone();
    other.links[14].chain[3] ^= 0x40;
    let d = diff_chains("s", Some(&full), Some(&other));
    assert_eq!((d.common, d.diverges_at), (14, Some(15)));
    let d = diff_chains("s", Some(&full), None);
    assert!(d.in_a && !d.in_b && d.only_a.len() == 25);
}

#[test]
fn a_records_time_is_the_latest_instant_it_states() {
    assert_eq!(stated_time(br#"{"ts":5,"createdAt":9,"x":100}"#), Some(9.0));
    assert_eq!(
        stated_time(br#"{"updatedAt":3,"completedAt":4}"#),
        Some(4.0)
    );
    assert_eq!(stated_time(br#"{"x":1}"#), None);
    assert_eq!(stated_time(b"not json"), None);
}
