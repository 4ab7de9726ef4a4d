//! Salvage interrupted at every persistence point of writing the new root, with every tear:
//! what the crash leaves is either not a root at all (no marker) or the whole salvaged root,
//! verifying clean. The marker is written last, after everything else is synced.

mod support;

use makalog::forensics::salvage::{plan, write};
use makalog::storage::{SimRng, SimStorage, Tear};
use makalog::verify::verify_root;
use serde_json::json;
use support::stores::{self, session_header};
use support::temp_root;

#[test]
fn an_interrupted_salvage_leaves_no_root_or_the_whole_one() {
    let (t, source) = temp_root();
    {
        let (_owner, s) = stores::open(&source);
        for id in ["a", "b", "c"] {
            s.sessions.create(session_header(id, 1)).expect("session");
            for i in 0..5 {
                s.sessions
                    .append_message(
                        id,
                        json!({"type": "user", "id": format!("{id}-m{i}"), "text": "hello", "turnId": "t1",
                               "ts": 10 + i}),
                    )
                    .expect("message");
            }
        }
        s.close().expect("close");
    }
    // Damage b's last records: its valid prefix is salvaged, the rest left behind.
    let recs = support::read_all(&*source, "b").expect("b");
    let last = &recs[recs.len() - 2];
    let seg = t.path().join("root").join(&last.file);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, b"\xff", last.offset + 30).expect("damage");
    let planned = plan(&*source, &[]).expect("plan");
    assert!(!planned.report.left_behind.is_empty());

    let whole = SimStorage::new();
    write(&planned, &whole, &|_| {}).expect("salvage");
    assert!(verify_root(&whole).expect("a root").is_clean());
    let want = whole.live_files();
    assert_eq!(whole.durable_files(), want, "everything synced");
    let points = whole.persistence_points();
    assert!(points > 10, "{points}");

    let mut rng = SimRng::new(7);
    let mut roots = 0;
    for point in 1..=points {
        for tear in [Tear::None, Tear::All, Tear::Pages] {
            let target = SimStorage::new();
            target.crash_before_point(point);
            assert!(
                write(&planned, &target, &|_| {}).is_err(),
                "dies at {point}"
            );
            target.crash(tear, &mut rng);
            match makalog::root::read_marker(&target) {
                Err(makalog::Error::NotARoot { .. }) => {}
                Err(e) => panic!("point {point} {tear:?}: {e}"),
                Ok(_) => {
                    roots += 1;
                    assert_eq!(target.durable_files(), want, "point {point} {tear:?}");
                    assert!(verify_root(&target).expect("root").is_clean());
                }
            }
        }
    }
    assert!(
        roots > 0,
        "a crash after the marker's sync leaves the whole root"
    );
}
