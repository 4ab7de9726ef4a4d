//! Edges of `makalog export` and `makalog verify BUNDLE.tar`: a bundle cut just after its
//! manifest, and a stray directory under `sessions/` in the root exported.

mod common;

use common::{demo_root, entries, export, makalog, s, text};

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
