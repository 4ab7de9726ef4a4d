//! Unit tests of the read-only tree of files over ranges of a buffer or a file.
use super::*;

fn tree(paths: &[&str]) -> Result<MemStorage, String> {
    let files = paths
        .iter()
        .map(|p| (PathBuf::from(p), 0..0))
        .collect::<Vec<_>>();
    MemStorage::new("bundle", Arc::new(Vec::new()), files)
}

fn names(s: &MemStorage, dir: &str) -> Vec<(String, bool)> {
    s.list_dir(Path::new(dir))
        .expect("a directory")
        .into_iter()
        .map(|e| (e.name, e.kind == EntryKind::Dir))
        .collect()
}

#[test]
fn each_directory_lists_each_child_once_in_name_order() {
    let s = tree(&["a/b/c", "f", "a/e", "a/b/d", "a/x/y/z"]).expect("a tree");
    let (dir, file) = (true, false);
    assert_eq!(names(&s, ""), [("a".into(), dir), ("f".into(), file)]);
    assert_eq!(
        names(&s, "a"),
        [("b".into(), dir), ("e".into(), file), ("x".into(), dir)]
    );
    assert_eq!(names(&s, "a/b"), [("c".into(), file), ("d".into(), file)]);
    assert_eq!(names(&s, "a/x/y"), [("z".into(), file)]);
    assert!(tree(&["a/b", "a/b"]).is_err_and(|e| e.contains("named twice")));
    assert!(tree(&["a/b", "a/b/c"]).is_err_and(|e| e.contains("both a file and a directory")));
    assert!(tree(&["a/b/c", "a/b"]).is_err_and(|e| e.contains("named twice")));
}

/// Files over ranges of a file answer every read as the same files over a buffer: reads at
/// each offset, short and past the end, and whole.
#[test]
fn files_over_a_file_read_as_files_over_a_buffer() {
    let data: Arc<Vec<u8>> = Arc::new((0..=255u8).cycle().take(1000).collect());
    let files = vec![
        (PathBuf::from("a"), 10..400),
        (PathBuf::from("d/b"), 400..1000),
        (PathBuf::from("d/empty"), 7..7),
    ];
    let held = MemStorage::new("bundle", data.clone(), files.clone()).expect("tree");
    let whole: Arc<dyn StorageFile> = Arc::new(MemFile {
        backing: Backing::Bytes(data.clone()),
        range: 0..data.len(),
    });
    let read = MemStorage::over_file("bundle", whole, 1000, files.clone()).expect("tree");
    for (path, range) in &files {
        let (h, r) = (
            held.open(path, OpenMode::Read).expect("h"),
            read.open(path, OpenMode::Read).expect("r"),
        );
        assert_eq!(h.size().expect("h"), r.size().expect("r"));
        for offset in [0u64, 1, 63, 389, 390, 599, 600, 10_000] {
            let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
            let n = h.read_at(&mut a, offset).expect("h");
            assert_eq!(
                r.read_at(&mut b, offset).expect("r"),
                n,
                "{path:?} at {offset}"
            );
            assert_eq!(a[..n], b[..n]);
        }
        assert_eq!(read.read_file(path).expect("r"), data[range.clone()]);
        assert_eq!(&*read.map_file(path).expect("r"), &data[range.clone()]);
    }
    let past = MemStorage::over_file(
        "bundle",
        Arc::new(MemFile {
            backing: Backing::Bytes(data.clone()),
            range: 0..10,
        }),
        10,
        files,
    );
    assert!(past.is_err(), "a range past the file's end");
}

/// Names that are not UTF-8 (two such differed only in bytes the listing's names lose, and
/// a debug build panicked on finding one name twice) are refused, as no root has them.
#[test]
fn a_name_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
    let files = vec![(path(b"d/a\xff"), 0..0), (path(b"d/a\xfe"), 0..0)];
    let refused = MemStorage::new("bundle", Arc::new(Vec::new()), files);
    assert!(refused.is_err_and(|e| e.contains("not UTF-8")));
    let files = vec![(path(b"\xff/a"), 0..0)];
    let refused = MemStorage::new("bundle", Arc::new(Vec::new()), files);
    assert!(refused.is_err_and(|e| e.contains("not UTF-8")));
}

/// Over a file, a range's holes are the file's, within the range: more than a reader holds
/// is refused whole, unread, as real storage refuses it, and the hole map is clipped and
/// shifted to the range.
#[test]
fn holes_of_a_file_backed_range_are_the_files() {
    use std::os::unix::fs::FileExt as _;
    let t = tempfile::tempdir().expect("tmp");
    let f = std::fs::File::create(t.path().join("bundle")).expect("create");
    f.write_all_at(b"head", 0).expect("head");
    let end = (1u64 << 30) + 4;
    f.write_all_at(b"tail", end).expect("after a hole");
    let real = super::super::RealStorage::new(t.path());
    let file: Arc<dyn StorageFile> = Arc::from(
        real.open(Path::new("bundle"), OpenMode::Read)
            .expect("open"),
    );
    let files = vec![
        (PathBuf::from("sparse"), 2..end as usize + 2),
        (PathBuf::from("dense"), 0..4),
    ];
    let s = MemStorage::over_file("bundle", file, end + 4, files).expect("tree");
    let e = s
        .read_file(Path::new("sparse"))
        .expect_err("1 GiB of holes");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(s.map_file(Path::new("sparse")).is_err());
    assert_eq!(s.read_file(Path::new("dense")).expect("dense"), b"head");
    let sparse = s.open(Path::new("sparse"), OpenMode::Read).expect("open");
    // The head's block (its size is the file system's), then the tail's.
    let (from, block) = sparse.data_after(0).expect("map").expect("the head");
    assert!(from == 0 && (2..1 << 20).contains(&block), "(0, {block})");
    let (from, to) = sparse.data_after(block).expect("map").expect("the tail");
    // The range is `end` bytes long: its last two are the tail's first two.
    assert!(from <= end - 2 && to == end, "({from}, {to})");
    assert_eq!(sparse.data_after(end).expect("map"), None);
}

/// A file whose storage misreports its hole map: every stretch lies before the offset asked.
struct Misreported;

impl StorageFile for Misreported {
    fn size(&self) -> io::Result<u64> {
        Ok(1 << 20)
    }
    fn read_at(&self, buf: &mut [u8], _: u64) -> io::Result<usize> {
        buf.fill(0);
        Ok(buf.len())
    }
    fn data_after(&self, _: u64) -> io::Result<Option<(u64, u64)>> {
        Ok(Some((0, 1)))
    }
    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(refused())
    }
    fn sync_data(&self) -> io::Result<()> {
        Err(refused())
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(refused())
    }
}

/// A stretch the file's storage reports before the range (a file system that misreports, as
/// a FUSE one may) is no data of the range: nothing is taken from it, and nothing wraps.
#[test]
fn a_misreported_hole_map_gives_a_range_nothing() {
    let files = vec![(PathBuf::from("f"), 4096..8192)];
    let s = MemStorage::over_file("bundle", Arc::new(Misreported), 1 << 20, files).expect("tree");
    let f = s.open(Path::new("f"), OpenMode::Read).expect("open");
    assert_eq!(f.data_after(10).expect("map"), None);
    assert_eq!(s.read_file(Path::new("f")).expect("read").len(), 4096);
}
