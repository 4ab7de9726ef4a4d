//! `makalog export` and `makalog verify BUNDLE.tar`: a bundle that checks itself (every file's
//! SHA-256, completeness, the root inside, the heads) without being extracted.

mod common;

use common::{demo_root, entries, export, makalog, s, snapshot, text, write_tar};
use std::path::{Path, PathBuf};

#[test]
fn an_exported_bundle_verifies_and_holds_every_file_with_the_roots_heads() {
    let (t, root) = demo_root();
    let bundle = t.path().join("evidence.tar");
    let before = snapshot(&root);
    let out = export(&root, &bundle, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(snapshot(&root), before, "export writes nothing in the root");
    assert!(text(&out.stdout).contains("sha256 of the bundle: "));
    let got = entries(&bundle);
    let want: Vec<PathBuf> = snapshot(&root)
        .keys()
        .map(|p| p.strip_prefix(&root).expect("under").to_path_buf())
        .filter(|p| p != Path::new("owner.lock"))
        .collect();
    let mut names: Vec<PathBuf> = got.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        names.pop(),
        Some(PathBuf::from("makalog-manifest.json")),
        "the manifest is last"
    );
    names.sort();
    assert_eq!(names, want, "every file of the root but the lock");
    for (name, bytes) in &got[..got.len() - 1] {
        assert_eq!(
            &std::fs::read(root.join(name)).expect("read"),
            bytes,
            "{}",
            name.display()
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&got.last().expect("m").1).expect("json");
    let heads: serde_json::Value =
        serde_json::from_slice(&makalog(&["heads", s(&root), "--json"]).stdout).expect("heads");
    assert_eq!(manifest["heads"]["sessions"], heads["sessions"]);
    assert_eq!(manifest["heads"]["claims"], heads["claims"]);
    assert_eq!(manifest["rootId"], heads["rootId"]);
    assert!(manifest["tool"]
        .as_str()
        .expect("tool")
        .starts_with("makalog "));
    assert_eq!(manifest["live"], false);

    let out = makalog(&["verify", s(&bundle)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "clean: {} files, each matching its SHA-256",
            want.len()
        )),
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&makalog(&["verify", s(&bundle), "--json"]).stdout).expect("json");
    assert_eq!(v["clean"], true);
    assert_eq!(v["verify"]["sessions"].as_array().expect("s").len(), 8);
}

#[test]
fn a_bundle_altered_cut_short_or_incomplete_is_a_finding() {
    let (t, root) = demo_root();
    let bundle = t.path().join("b.tar");
    assert!(export(&root, &bundle, &[]).status.success());
    let good = entries(&bundle);

    // One bit of one segment.
    let mut flipped = good.clone();
    let (name, bytes) = flipped
        .iter_mut()
        .find(|(p, _)| p.to_string_lossy().ends_with(".seg"))
        .expect("a segment");
    let name = name.clone();
    bytes[600] ^= 0x10;
    let altered = t.path().join("altered.tar");
    write_tar(&altered, &flipped);
    let out = makalog(&["verify", s(&altered)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("{}: ", name.display())) && stdout.contains("the manifest says"),
        "{stdout}"
    );
    assert!(
        stdout.contains("in the bundle: "),
        "the root inside is verified too: {stdout}"
    );

    // A file taken out, another put in.
    let mut swapped: Vec<(PathBuf, Vec<u8>)> =
        good.iter().filter(|(p, _)| *p != name).cloned().collect();
    swapped.insert(0, (PathBuf::from("notes.txt"), b"hello".to_vec()));
    let incomplete = t.path().join("incomplete.tar");
    write_tar(&incomplete, &swapped);
    let out = makalog(&["verify", s(&incomplete)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "{}: in the manifest but missing from the bundle",
            name.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("notes.txt: in the bundle but not in the manifest"),
        "{stdout}"
    );

    // Cut short: no manifest.
    let data = std::fs::read(&bundle).expect("read");
    let cut = t.path().join("cut.tar");
    std::fs::write(&cut, &data[..data.len() / 2]).expect("write");
    let out = makalog(&["verify", s(&cut)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("the bundle is incomplete"),
        "{}",
        text(&out.stdout)
    );

    // Not a bundle at all.
    let junk = t.path().join("junk.tar");
    std::fs::write(&junk, vec![b'x'; 2048]).expect("write");
    assert_eq!(makalog(&["verify", s(&junk)]).status.code(), Some(2));
}

#[test]
fn a_bundle_of_chosen_sessions_holds_only_them_and_the_roots_own_files() {
    let (t, root) = demo_root();
    let bundle = t.path().join("one.tar");
    let out = export(&root, &bundle, &["--session", "demo-1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["live"], false);
    let names: Vec<String> = entries(&bundle)
        .into_iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("sessions/") || n.starts_with("sessions/demo-1/")),
        "{names:?}"
    );
    assert!(
        names.contains(&"claims.log".to_owned())
            && names.contains(&".makalog-root.json".to_owned())
    );
    let out = makalog(&["verify", s(&bundle), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verify"]["sessions"].as_array().expect("s").len(), 1);
}

#[test]
fn a_live_roots_bundle_holds_each_log_as_far_as_it_is_valid() {
    let (t, root) = demo_root();
    let _owner = makalog::root::try_acquire_owner(&root)
        .expect("owner")
        .expect("free");
    // A write in flight: half a frame after the last record of demo-1.
    let (_, seg, end) = common::last_record(&root, "demo-1");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, &[0x30, 0, 0, 0, 1, 2, 3], end).expect("tear");
    let bundle = t.path().join("live.tar");
    let out = export(&root, &bundle, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("live root"),
        "{}",
        text(&out.stdout)
    );
    let out = makalog(&["verify", s(&bundle)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let rel = seg.strip_prefix(&root).expect("under").to_path_buf();
    let held = entries(&bundle)
        .into_iter()
        .find(|(p, _)| *p == rel)
        .expect("segment");
    assert_eq!(
        held.1.len() as u64,
        end,
        "cut at the end of the valid prefix"
    );
    // No sidecar: one written after the cut could claim records the cut left out.
    let sidecars: Vec<_> = entries(&bundle)
        .into_iter()
        .filter(|(p, _)| p.file_name().is_some_and(|n| n == "index"))
        .map(|(p, _)| p)
        .collect();
    assert!(sidecars.is_empty(), "{sidecars:?}");
}

#[test]
fn export_refuses_an_existing_output_an_unknown_session_and_a_non_root() {
    let (t, root) = demo_root();
    let existing = t.path().join("there.tar");
    std::fs::write(&existing, b"mine").expect("write");
    assert_eq!(export(&root, &existing, &[]).status.code(), Some(2));
    assert_eq!(std::fs::read(&existing).expect("read"), b"mine");
    let out_path = t.path().join("new.tar");
    assert_eq!(
        export(&root, &out_path, &["--session", "nobody"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(export(t.path(), &out_path, &[]).status.code(), Some(2));
    assert!(!out_path.exists());
    let leftovers: Vec<_> = std::fs::read_dir(t.path())
        .expect("dir")
        .map(|e| e.expect("e").file_name())
        .filter(|n| n.to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Another export's file in progress (or anyone's) under the name this one would write
    // first: this export fails and leaves it alone (it removed it).
    let theirs = t.path().join(".busy.tar.partial");
    std::fs::write(&theirs, b"theirs").expect("write");
    let busy = t.path().join("busy.tar");
    assert_eq!(export(&root, &busy, &[]).status.code(), Some(1));
    assert_eq!(std::fs::read(&theirs).expect("still there"), b"theirs");
    assert!(!busy.exists());
}

/// FORMAT.md orders a bundle's entries by the bytes of their paths: `sessions/a-b/…` before
/// `sessions/a/…` ('-' is below '/'), where an order by path components put `a` first.
#[test]
fn a_bundles_entries_are_in_byte_order_of_their_paths() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    {
        let owner = makalog::root::try_acquire_owner(&root)
            .expect("acquire")
            .expect("free");
        let stores = makalog::store::open_execution_stores_for_write(&owner).expect("stores");
        for id in ["a", "a-b"] {
            let mut h = common::subagent_header(id, "p");
            for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
                h.as_object_mut().expect("object").remove(key);
            }
            stores.sessions.create(h).expect("session");
        }
        stores.close().expect("close");
    }
    let bundle = t.path().join("b.tar");
    let out = export(&root, &bundle, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = entries(&bundle)
        .into_iter()
        .map(|(p, _)| p.to_str().expect("utf8").to_owned())
        .filter(|p| p != "makalog-manifest.json")
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "byte order");
    let a_b = names.iter().position(|n| n.starts_with("sessions/a-b/"));
    let a = names.iter().position(|n| n.starts_with("sessions/a/"));
    assert!(a_b < a, "{names:?}");
    let out = makalog(&["verify", s(&bundle)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// A manifest whose recorded heads disagree with the bundle's logs names each session that
/// differs once: one whose head changed, one recorded but not in the bundle; heads naming a
/// session twice (a crafted manifest) do not decode. Before, a changed session was reported
/// twice, once from each list, and each list was searched for every name of the other.
#[test]
fn a_manifest_whose_heads_disagree_names_each_session_once() {
    let (t, root) = demo_root();
    let bundle = t.path().join("b.tar");
    assert!(export(&root, &bundle, &[]).status.success());
    let mut edited = entries(&bundle);
    let (_, manifest) = edited
        .iter_mut()
        .find(|(p, _)| p == Path::new("makalog-manifest.json"))
        .expect("manifest");
    let mut m: serde_json::Value = serde_json::from_slice(manifest).expect("json");
    let sessions = m["heads"]["sessions"].as_array_mut().expect("sessions");
    let first = sessions[0].clone();
    let changed = first["session"].as_str().expect("id").to_owned();
    sessions[0]["headSeq"] = serde_json::json!(first["headSeq"].as_u64().expect("seq") + 7);
    let mut ghost = first.clone();
    ghost["session"] = serde_json::json!("ghost-session");
    sessions.push(ghost.clone());
    let twice = {
        let mut m = m.clone();
        let sessions = m["heads"]["sessions"].as_array_mut().expect("sessions");
        sessions.push(ghost);
        serde_json::to_vec(&m).expect("bytes")
    };
    *manifest = serde_json::to_vec(&m).expect("bytes");
    let altered = t.path().join("heads.tar");
    write_tar(&altered, &edited);
    let out = makalog(&["verify", s(&altered)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let named = |id: &str| {
        stdout
            .matches(&format!(
                "session {id}: its head is not the one the manifest recorded"
            ))
            .count()
    };
    assert_eq!(named(&changed), 1, "{stdout}");
    assert_eq!(named("ghost-session"), 1, "{stdout}");
    assert_eq!(
        stdout.matches("its head is not the one").count(),
        2,
        "no other session: {stdout}"
    );
    let (_, manifest) = edited
        .iter_mut()
        .find(|(p, _)| p == Path::new("makalog-manifest.json"))
        .expect("manifest");
    *manifest = twice;
    write_tar(&altered, &edited);
    let out = makalog(&["verify", s(&altered)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let want = "the manifest's heads do not decode: it names session ghost-session more than once";
    assert!(stdout.contains(want), "{stdout}");
}

/// A stray file whose name is not UTF-8 in a session's directory is skipped by `export` and
/// said to be, and the bundle still verifies clean; `verify` of the root names it as a stray.
/// Before, the listing named it lossily and `export` failed reading a file by that name.
#[test]
fn a_stray_name_that_is_not_utf8_is_skipped_by_export() {
    use std::os::unix::ffi::OsStrExt;
    let (t, root) = demo_root();
    let name = std::ffi::OsStr::from_bytes(b"stray-\xff\xfe");
    std::fs::write(root.join("sessions").join("demo-1").join(name), b"x").expect("stray");
    let bundle = t.path().join("b.tar");
    let out = export(&root, &bundle, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("skipped sessions/demo-1/stray-\u{fffd}\u{fffd}"),
        "{}",
        text(&out.stdout)
    );
    let checked = makalog(&["verify", s(&bundle)]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stdout));
    let verified = makalog(&["verify", s(&root)]);
    assert!(
        text(&verified.stdout).contains("stray-\u{fffd}\u{fffd}"),
        "{}",
        text(&verified.stdout)
    );
}
