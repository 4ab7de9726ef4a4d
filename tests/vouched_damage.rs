//! What a sidecar recorded as durable is never read as a write in flight (FORMAT.md, "What a
//! sidecar recorded as durable is never cut"): a read-only view of a session whose last record,
//! covered by its sidecar, was damaged reports damage there, naming the file and offset, as an
//! open for writing refuses the session, instead of answering from the records before it.

mod support;

use makalog::segment::{SessionReader, WriterConfig};
use makalog::store::RuntimeEventStore;
use makalog::Error;
use support::cost::*;

const S: &str = "s";

#[test]
fn a_damaged_record_the_sidecar_covers_is_damage_to_a_read_only_view_too() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    turn(&store, S, "r1", 1.0);
    turn(&store, S, "r2", 10.0);
    store.close().expect("close");
    let last = SessionReader::open(&*storage, S, 1)
        .expect("reader")
        .last()
        .expect("a record")
        .expect("valid");
    // A flipped bit in the last record's payload: its CRC fails, no record follows it.
    let seg = segment(&storage, S);
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes[last.end as usize - 2] ^= 0x20;
    std::fs::write(&seg, &bytes).expect("write");

    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    match store.list_session_invocations(S) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert!(file.ends_with("00000000000000000001.seg"), "{file:?}");
            assert_eq!(offset, last.offset, "where the damaged record starts");
        }
        other => panic!("read the records before the damage as the whole log: {other:?}"),
    }
    // An open for writing refuses it alike, and cuts nothing.
    let e = store
        .append(
            &support::events::opening(S, "r3", "turn-r3", 20.0),
            makalog::segment::Durability::Durable,
        )
        .expect_err("refused");
    assert!(e.to_string().contains("recorded as durable"), "{e}");
    assert_eq!(std::fs::read(&seg).expect("read"), bytes, "nothing cut");
}
