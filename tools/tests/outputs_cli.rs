//! Where the commands that read a root write: never into that root (the evidence), and beside
//! their output never over a file the user owns.

mod common;

/// The commands that read a root and write elsewhere (`report -o`, `export -o`, `salvage
/// --into`) refuse an output inside that root, named directly, through `..`, or through a
/// symlink to a directory of the root: exit 2, and the root is byte for byte as it was.
/// Before, each wrote into the root it was reading.
#[test]
fn an_output_inside_the_root_read_is_refused_and_nothing_is_written() {
    let (t, root) = common::demo_root();
    let r = root.to_str().expect("utf8");
    let link = t.path().join("link-to-sessions");
    std::os::unix::fs::symlink(root.join("sessions"), &link).expect("symlink");
    let before = common::snapshot(&root);
    let inside = [
        root.join("report.html"),
        root.join("sessions").join("..").join("x.out"),
        link.join("x.out"),
    ];
    for out in &inside {
        let o = out.to_str().expect("utf8");
        for args in [
            vec!["report", r, "-o", o],
            vec!["export", r, "-o", o],
            vec!["salvage", r, "--into", o],
        ] {
            let run = common::makalog(&args);
            assert_eq!(
                run.status.code(),
                Some(2),
                "{args:?}: {}",
                common::text(&run.stderr)
            );
            assert!(
                common::text(&run.stderr).contains("is inside the root"),
                "{args:?}: {}",
                common::text(&run.stderr)
            );
        }
    }
    assert_eq!(
        common::snapshot(&root),
        before,
        "nothing written into the root"
    );
    // Beside the root, the same commands write.
    let beside = t.path().join("report.html");
    let run = common::makalog(&["report", r, "-o", beside.to_str().expect("utf8")]);
    assert_eq!(run.status.code(), Some(0), "{}", common::text(&run.stderr));
}

/// `report -o` leaves the user's files alone: a file named as its temporary file used to be
/// (`OUT.tmp`) is kept, and a `.OUT.partial` already there (another report being written) is
/// refused, exit 1, and left as it was. Before, the first was replaced and removed.
#[test]
fn report_leaves_files_beside_its_output_alone() {
    let (t, root) = common::demo_root();
    let r = root.to_str().expect("utf8");
    let out = t.path().join("report.html");
    let o = out.to_str().expect("utf8");
    let stray = t.path().join("report.html.tmp");
    std::fs::write(&stray, b"the user's own").expect("stray");
    let run = common::makalog(&["report", r, "-o", o]);
    assert_eq!(run.status.code(), Some(0), "{}", common::text(&run.stderr));
    assert_eq!(std::fs::read(&stray).expect("kept"), b"the user's own");
    assert!(std::fs::read(&out).expect("report").starts_with(b"<!"));
    let partial = t.path().join(".report.html.partial");
    std::fs::write(&partial, b"in progress").expect("partial");
    let run = common::makalog(&["report", r, "-o", o]);
    assert_eq!(run.status.code(), Some(1), "{}", common::text(&run.stderr));
    assert!(
        common::text(&run.stderr).contains(".report.html.partial"),
        "{}",
        common::text(&run.stderr)
    );
    assert_eq!(std::fs::read(&partial).expect("left"), b"in progress");
}
