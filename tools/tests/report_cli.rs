//! `makalog report`: one self-contained HTML file, opened in headless Chromium (Debian's
//! `chromium`, which `tools/test` and CI install): no console error, every session of the demo
//! root on the page, a bar for every run; the screenshot is kept in the target directory.

mod common;

use common::{demo_root, makalog, snapshot, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    let names = ["chromium", "chromium-browser"];
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
        .expect("the report test needs headless Chromium: apt-get install -y chromium (tools/test installs it)")
}

/// Runs headless Chromium on `page` with `args`; its stdout and stderr. Killed after two
/// minutes, so a browser that hangs fails the test instead of stalling it.
fn browse(page: &Path, args: &[&str], profile: &Path) -> (String, String) {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg("--enable-logging=stderr")
        .arg("--v=0")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    (text(&out.stdout), text(&out.stderr))
}

/// The console messages Chromium logged for the page.
fn console(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn the_report_opens_in_chromium_without_console_errors_and_shows_every_session() {
    let (t, root) = demo_root();
    let r = root.to_str().expect("utf8");
    let page = t.path().join("report.html");
    let before = snapshot(&root);
    let out = makalog(&["report", r, "-o", page.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(snapshot(&root), before, "report writes nothing in the root");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"));
    assert!(!html.contains("<script"), "no script");
    let outside = html.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !outside.contains("http://") && !outside.contains("https://"),
        "nothing from outside"
    );

    // The console check can fail: a page that breaks the policy is caught.
    let bad = t.path().join("bad.html");
    std::fs::write(&bad, "<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><script>console.error('boom')</script>").expect("bad page");
    let (_, stderr) = browse(&bad, &["--dump-dom"], &t.path().join("profile-bad"));
    assert!(
        !console(&stderr).is_empty(),
        "the console check sees errors: {stderr}"
    );

    let (dom, stderr) = browse(&page, &["--dump-dom"], &t.path().join("profile"));
    assert_eq!(console(&stderr), Vec::<&str>::new(), "console messages");
    let sessions = text(&makalog(&["sessions", r, "--json"]).stdout);
    let mut runs = 0;
    for line in sessions.lines() {
        let id = serde_json::from_str::<serde_json::Value>(line).expect("json")["id"]
            .as_str()
            .expect("id")
            .to_owned();
        assert!(
            dom.contains(&format!("id=\"session-{id}\"")),
            "{id} on the page"
        );
        runs += text(&makalog(&["runs", r, "--session", &id, "--json"]).stdout)
            .lines()
            .count();
    }
    assert_eq!(sessions.lines().count(), 8);
    assert_eq!(
        dom.matches("class=\"run-bar\"").count(),
        runs,
        "a bar for every run"
    );
    assert!(
        dom.contains("data-status=\"failed\""),
        "the run recovery ended as failed"
    );
    assert!(
        dom.contains("data-status=\"cancelled\""),
        "the aborted claimed run"
    );

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&shots).expect("artifacts dir");
    let shot = shots.join("demo-report.png");
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) = browse(
        &page,
        &[
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
        ],
        &t.path().join("profile-shot"),
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {stderr}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot of the page"
    );
}

#[test]
fn the_report_of_a_damaged_root_shows_its_findings_and_exits_1() {
    let (t, root) = demo_root();
    // Damage in a sealed segment, and no sidecar to read around it: the session's reads fail,
    // its page still shows.
    let seg = root.join("sessions/demo-3/00000000000000000001.seg");
    std::fs::remove_file(root.join("sessions/demo-3/index")).expect("rm sidecar");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    std::os::unix::fs::FileExt::write_all_at(&f, b"\xff\xff\xff", 300).expect("damage");
    let page = t.path().join("report.html");
    let out = makalog(&[
        "report",
        root.to_str().expect("utf8"),
        "-o",
        page.to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let html = std::fs::read_to_string(&page).expect("page");
    let rel = seg
        .strip_prefix(&root)
        .expect("under")
        .display()
        .to_string();
    assert!(
        html.contains("class=\"finding\"") && html.contains(&rel),
        "the finding names the file"
    );
    assert!(
        html.contains("id=\"session-demo-3\""),
        "the damaged session is still on the page"
    );
    assert!(html.contains("Not all of it could be read"), "and says so");
    assert_eq!(
        html.matches("class=\"session\" id=").count(),
        8,
        "every session"
    );
    let out = makalog(&[
        "report",
        t.path().to_str().expect("utf8"),
        "-o",
        page.to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(2), "not a root");
}
