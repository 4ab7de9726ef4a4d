//! Edges of `makalog export` and `makalog verify BUNDLE.tar`: a bundle cut just after its
//! manifest, a stray directory under `sessions/` in the root exported, and crafted bundles
//! (a huge long name, a PAX header, an entry deeper than any file of a root).

mod common;

use common::{demo_root, entries, export, makalog, s, text, write_tar};
use std::path::PathBuf;

/// A bundle cut just after its manifest's bytes (in the padding tar puts after them, or in the
/// end-of-archive blocks) is cut short: a finding, not a clean bundle, though every file and
/// the manifest are whole.
#[test]
fn a_bundle_cut_after_its_manifest_is_a_finding() {
    let (t, root) = demo_root();
    let bundle = t.path().join("evidence.tar");
    assert_eq!(export(&root, &bundle, &[]).status.code(), Some(0));
    let data = std::fs::read(&bundle).expect("read");
    let mut archive = tar::Archive::new(&data[..]);
    let manifest_end = archive
        .entries()
        .expect("entries")
        .map(|e| e.expect("entry"))
        .find(|e| e.path().expect("path").as_os_str() == "makalog-manifest.json")
        .map(|e| e.raw_file_position() + e.size())
        .expect("a manifest");
    std::fs::write(&bundle, &data[..manifest_end as usize + 1]).expect("cut");
    let out = makalog(&["verify", s(&bundle)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("damaged after"), "{stdout}");
}

/// A directory under `sessions/` whose name is no session id is a stray: it has no head in
/// the manifest (no listing of sessions names it), so the bundle's heads are the root's.
#[test]
fn a_stray_directory_under_sessions_has_no_head_in_the_manifest() {
    let (t, root) = demo_root();
    std::fs::create_dir(root.join("sessions/old.bak")).expect("mkdir");
    std::fs::write(root.join("sessions/old.bak/notes"), b"kept by hand").expect("write");
    let bundle = t.path().join("evidence.tar");
    assert_eq!(export(&root, &bundle, &[]).status.code(), Some(0));
    let got = entries(&bundle);
    let manifest: serde_json::Value =
        serde_json::from_slice(&got.last().expect("m").1).expect("json");
    let heads: serde_json::Value =
        serde_json::from_slice(&makalog(&["heads", s(&root), "--json"]).stdout).expect("heads");
    assert_eq!(manifest["heads"]["sessions"], heads["sessions"]);
    assert!(
        got.iter().any(|(p, _)| p.ends_with("old.bak/notes")),
        "bundled"
    );
    let out = makalog(&["verify", s(&bundle)]);
    assert!(
        !text(&out.stdout).contains("not the one the manifest recorded"),
        "{}",
        text(&out.stdout)
    );
}

/// A GNU long name is read whole by the tar reader, as long as its header says: one claiming
/// 256 MiB (a sparse file costs nothing) is refused by its header, naming its byte, before
/// anything reads it, as is a PAX header; an export's long names still verify.
#[test]
fn a_bundle_claiming_a_huge_long_name_is_refused_unread() {
    use std::os::unix::fs::FileExt as _;
    let t = tempfile::tempdir().expect("tmp");
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::GNULongName);
    h.set_path("././@LongLink").expect("name");
    h.set_size(256 << 20);
    h.set_cksum();
    let crafted = t.path().join("long.tar");
    let file = std::fs::File::create(&crafted).expect("create");
    file.write_all_at(h.as_bytes(), 0).expect("header");
    file.set_len(512 + (256 << 20) + 2048).expect("sparse");
    let out = makalog(&["verify", s(&crafted)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let want = "not a bundle: entry at byte 0: a GNU long name or link of 268435456 bytes";
    assert!(stderr.contains(want), "{stderr}");
    // A PAX header may say the next entry's size (the reader would then step elsewhere than
    // the walk): none is taken, whatever it says.
    let mut pax = tar::Header::new_ustar();
    pax.set_entry_type(tar::EntryType::XHeader);
    pax.set_path("pax").expect("name");
    pax.set_size(0);
    pax.set_cksum();
    let crafted = t.path().join("pax.tar");
    let file = std::fs::File::create(&crafted).expect("create");
    file.write_all_at(pax.as_bytes(), 0).expect("header");
    file.set_len(4096).expect("zeros");
    let out = makalog(&["verify", s(&crafted)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let want = "not a bundle: entry at byte 0: a PAX header, which no bundle holds";
    assert!(text(&out.stderr).contains(want), "{}", text(&out.stderr));

    let (t, root) = demo_root();
    let long = format!("{}.seg.torn-1", "x".repeat(150));
    std::fs::write(root.join("sessions/demo-1").join(&long), b"kept").expect("a long name");
    let bundle = t.path().join("b.tar");
    assert!(export(&root, &bundle, &[]).status.success());
    assert!(entries(&bundle).iter().any(|(p, _)| p.ends_with(&long)));
    let out = makalog(&["verify", s(&bundle)]);
    assert_ne!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// An entry deeper than any file of a root is left out with a finding naming its byte, before
/// the bundle's tree is built (each directory of an entry is kept by its whole path, so a name
/// of n levels cost n² bytes: 1 GiB for a long name of 64 KiB).
#[test]
fn a_bundle_entry_deeper_than_a_roots_files_is_left_out_as_a_finding() {
    let (t, root) = demo_root();
    let bundle = t.path().join("b.tar");
    assert!(export(&root, &bundle, &[]).status.success());
    let mut edited = entries(&bundle);
    let deep: PathBuf = std::iter::repeat_n("a", 1000).collect();
    edited.insert(0, (deep, b"deep".to_vec()));
    let altered = t.path().join("deep.tar");
    write_tar(&altered, &edited);
    let out = makalog(&["verify", s(&altered)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        // Its header follows its long name's entry: a header and four blocks of name.
        stdout.contains("entry at byte 2560: 1000 names deep, deeper than any file of a root"),
        "{stdout}"
    );
    assert!(stdout.contains("1 findings"), "{stdout}");
}

/// A header whose checksum fails is where the tar reader stops, and reports the damage: what
/// follows it is never read as headers, so bytes there that would be refused as one (a PAX
/// header's type) do not turn a damaged bundle into no bundle.
#[test]
fn bytes_past_a_damaged_header_are_not_judged_as_headers() {
    let (t, root) = demo_root();
    let bundle = t.path().join("b.tar");
    assert!(export(&root, &bundle, &[]).status.success());
    let mut data = std::fs::read(&bundle).expect("read");
    let (header, file) = tar::Archive::new(&data[..])
        .entries()
        .expect("entries")
        .map(|e| e.expect("entry"))
        .find(|e| e.path().expect("path").as_os_str() == "makalog-manifest.json")
        .map(|e| {
            (
                e.raw_header_position() as usize,
                e.raw_file_position() as usize,
            )
        })
        .expect("a manifest");
    // Its size made 0 (its checksum no longer holds): a walk that went on would take the
    // manifest's first block for the next header, here given a size a reader reads and a PAX
    // header's type byte.
    data[header + 124..header + 136].copy_from_slice(b"00000000000\0");
    data[file + 124..file + 136].copy_from_slice(b"00000000000\0");
    data[file + 156] = b'x';
    std::fs::write(&bundle, &data).expect("write");
    let out = makalog(&["verify", s(&bundle)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("damaged after"), "{stdout}");
}
