//! The open-runs file's slots, bound and reset, on real files.

use super::*;
use crate::storage::RealStorage;

fn named(runs: &[(&str, &str)]) -> Listing {
    Listing::Open(
        runs.iter()
            .map(|(s, r)| (s.to_string(), r.to_string()))
            .collect(),
    )
}

/// A turn may start while a recovery that scanned every session is still running, after
/// its session was visited: the recovery that makes the file names it.
#[test]
fn runs_started_while_there_was_no_file_are_named_when_a_recovery_makes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    let mut runs = OpenRuns::default();
    for (s, r) in [("a", "a-1"), ("b", "b-1"), ("b", "b-2"), ("c", "c-1")] {
        runs.mark(&storage, s, r).expect("mark");
    }
    assert!(runs.ended("a", "a-1"));
    assert!(runs.ended("b", "b-1"));
    assert_eq!(read_open_runs(&storage).expect("read"), Listing::Missing);
    runs.reset(&storage).expect("reset");
    let in_flight = named(&[("b", "b-2"), ("c", "c-1")]);
    assert_eq!(read_open_runs(&storage).expect("read"), in_flight);
    // Their sessions hold those slots now: a later run of `c` writes nothing new.
    runs.mark(&storage, "c", "c-2").expect("mark");
    assert_eq!(read_open_runs(&storage).expect("read"), in_flight);
    for (s, r) in [("b", "b-2"), ("c", "c-1"), ("c", "c-2")] {
        assert!(runs.ended(s, r));
    }
    let running: usize = runs.in_use.values().map(|m| m.running.len()).sum();
    assert_eq!(running, 0, "every run counted in ended once");
    runs.reset(&storage).expect("reset");
    runs.mark(&storage, "d", "d-1").expect("mark");
    assert_eq!(
        read_open_runs(&storage).expect("read"),
        named(&[("b", "b-2"), ("c", "c-1"), ("d", "d-1")]),
        "kept while this process holds them; a new session takes the next slot"
    );
}

/// A file that appeared after runs were remembered without it (a creation that failed
/// after its rename): the session's next run takes a slot that counts them all, so each
/// end is counted once and the slot is freed once all have ended.
#[test]
fn runs_remembered_without_the_file_are_counted_with_the_slot_taken_later() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    let mut runs = OpenRuns::default();
    runs.mark(&storage, "a", "a-1").expect("mark");
    OpenRuns::default()
        .reset(&storage)
        .expect("another handle makes the file");
    runs.mark(&storage, "a", "a-2").expect("mark");
    assert!(runs.untracked.is_empty());
    assert_eq!(runs.in_use["a"].running.len(), 2);
    assert!(runs.ended("a", "a-1"));
    assert!(runs.ended("a", "a-2"));
    assert!(runs.in_use["a"].running.is_empty(), "both ends counted");
}

/// A recovery ends runs of an earlier life, which this process never marked, and may end a
/// run of this life (a parked turn's): only the latter is let go, and only once. A session's
/// other run in flight keeps it in flight.
#[test]
fn only_a_run_this_process_marked_is_let_go_and_only_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    let mut runs = OpenRuns::default();
    runs.reset(&storage).expect("the file");
    runs.mark(&storage, "a", "a-parked").expect("mark");
    runs.mark(&storage, "a", "a-next").expect("mark");
    assert!(!runs.ended("a", "a-of-an-earlier-life"));
    assert!(!runs.ended("b", "b-of-an-earlier-life"));
    assert_eq!(runs.in_use["a"].running.len(), 2, "nothing let go");
    assert!(runs.ended("a", "a-parked"));
    assert!(!runs.ended("a", "a-parked"), "once");
    assert_eq!(
        runs.in_use["a"].running.iter().collect::<Vec<_>>(),
        ["a-next"]
    );
}

/// A file claiming a terabyte (a hole, then one byte): read whole, it cost as much memory
/// or failed the start's recovery with an I/O error; its slots were then read one call
/// each. Past the most slots a writer makes it is damage, so recovery visits every
/// session, and the file it then makes replaces it.
#[test]
fn a_file_longer_than_any_writer_makes_is_damage_and_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    let path = dir.path().join(OPEN_RUNS_FILE);
    let f = std::fs::File::create(&path).expect("create");
    f.set_len(1 << 40).expect("set_len");
    std::os::unix::fs::FileExt::write_all_at(&f, b"x", (1 << 40) - 1).expect("write");
    assert_eq!(
        read_open_runs(&storage).expect("read"),
        Listing::Damaged {
            offset: MAX_FILE_LEN
        }
    );
    let mut runs = OpenRuns::default();
    runs.mark(&storage, "a", "a-1")
        .expect("remembered without the file");
    runs.reset(&storage).expect("reset");
    assert_eq!(
        read_open_runs(&storage).expect("read"),
        named(&[("a", "a-1")])
    );
    assert_eq!(
        std::fs::metadata(&path).expect("stat").len(),
        SLOT_LEN as u64
    );
}

/// A slot whose payload is JSON naming a run but not its canonical form (another key, or
/// the keys out of order): a reader from FORMAT.md calls it damaged (recovery then visits
/// every session, the safe side), and so does this one.
#[test]
fn a_slot_is_valid_only_in_its_canonical_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = RealStorage::new(dir.path().to_path_buf());
    for payload in [
        r#"{"runId":"r","sessionId":"s","x":1}"#,
        r#"{"sessionId":"s","runId":"r"}"#,
        r#"{"runId":"r", "sessionId":"s"}"#,
    ] {
        let mut slot = vec![0u8; SLOT_LEN];
        slot[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        slot[4..8].copy_from_slice(&crc32fast::hash(payload.as_bytes()).to_le_bytes());
        slot[8..8 + payload.len()].copy_from_slice(payload.as_bytes());
        let mut bytes = encode_slot("a", "a-1").expect("slot");
        bytes.extend(slot);
        std::fs::write(dir.path().join(OPEN_RUNS_FILE), &bytes).expect("write");
        assert_eq!(
            read_open_runs(&storage).expect("read"),
            Listing::Damaged {
                offset: SLOT_LEN as u64
            },
            "{payload}"
        );
    }
}

/// No slot past the bound is ever given: a run it would need is refused, not written.
#[test]
fn no_slot_is_given_past_the_bound() {
    assert_eq!(free_slot(|&i| i < 3).expect("free"), 3);
    assert_eq!(
        free_slot(|&i| i + 1 < MAX_SLOTS).expect("the last"),
        MAX_SLOTS - 1
    );
    assert!(matches!(free_slot(|_| true), Err(Error::InvalidInput(_))));
}
