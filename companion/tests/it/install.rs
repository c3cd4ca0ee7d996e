//! install / uninstall / doctor (SPEC N1, REFERENCE §4).

use serde_json::Value;
use std::io::Write;
use std::process::Stdio;

use crate::support::{frame, output_within, ChildGuard, FrameReader, Standin, TestHome, ORIGIN, PROCESS_WAIT};

/// N1: the manifest lands in `<user-data-dir>/NativeMessagingHosts/`, names our exact
/// origin, and its `path` really runs the host; uninstall removes it.
#[test]
fn install_writes_a_working_manifest_and_uninstall_removes_it() {
    let home = TestHome::new();
    let profile = home.dir.path().join("profile");
    let profile_arg = profile.display().to_string();
    let output = output_within(&mut home.command(&["install", "--browser", "chromium", "--user-data-dir", &profile_arg]), "install");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let manifest_path = profile.join("NativeMessagingHosts/dev.herdr.continuity.json");
    assert!(String::from_utf8_lossy(&output.stdout).contains(&manifest_path.display().to_string()));

    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("manifest")).expect("JSON");
    assert_eq!(manifest["name"], "dev.herdr.continuity");
    assert_eq!(manifest["type"], "stdio");
    assert_eq!(manifest["allowed_origins"], serde_json::json!([ORIGIN]));
    let path = manifest["path"].as_str().expect("path");
    assert!(std::path::Path::new(path).is_absolute());

    // Run the wrapper the way Chrome does: only the origin as argv[1]. With no runtime
    // and autostart off the host answers runtime_unreachable, proving it is our host.
    let mut host = ChildGuard::spawn(
        std::process::Command::new(path)
            .arg(ORIGIN)
            .env("HERDR_CONTINUITY_HOME", home.home())
            .env("HERDR_COMPANION_AUTOSTART", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
        "the installed host wrapper",
    );
    let mut stdin = host.child.stdin.take().expect("stdin");
    let _ = stdin.write_all(&frame(b"{}"));
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));
    let error = stdout.next().expect("frame");
    assert_eq!(error["data"]["code"], "runtime_unreachable");
    assert_eq!(host.wait_within(PROCESS_WAIT).code(), Some(1));

    // The doctor accepts the installed manifest.
    let doctor = output_within(&mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", &profile_arg]), "doctor");
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("ok    host manifest"), "{report}");

    let output = output_within(&mut home.command(&["uninstall", "--browser", "chromium", "--user-data-dir", &profile_arg]), "uninstall");
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("removed host manifest"));
    assert!(!manifest_path.exists());
}

/// The doctor names a missing manifest and the command that fixes it, and exits 1.
#[test]
fn doctor_reports_a_missing_manifest_with_the_fix() {
    let home = TestHome::new();
    let profile = home.dir.path().join("profile").display().to_string();
    let output = output_within(&mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", &profile]), "doctor");
    assert_eq!(output.status.code(), Some(1));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("FAIL  host manifest"), "{report}");
    assert!(report.contains("is missing"), "{report}");
    assert!(report.contains(&format!("fix: run `herdr-companion install --browser chromium --user-data-dir {profile}`")), "{report}");
    assert!(report.contains("FAIL  runtime socket"), "{report}");
    assert!(report.contains("FAIL  Herdr at"), "{report}");
}

/// Issue 3, acceptance 4: a Herdr that speaks another protocol gets a doctor line that says
/// so, with both protocol numbers and what to update.
#[test]
fn doctor_explains_an_unsupported_herdr_protocol() {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let _standin = Standin::start(&home.herdr_socket, None, &["--protocol", "19"]);
    let profile = home.dir.path().join("profile").display().to_string();
    let output = output_within(&mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", &profile]), "doctor");
    assert_eq!(output.status.code(), Some(1));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("unsupported protocol"), "{report}");
    assert!(report.contains("speaks socket protocol 19, this companion speaks 20; update Herdr or the companion"), "{report}");
}
