//! The command line (issue 8, acceptance 4): every subcommand has `--help`, mistakes are
//! explained with the usage, and the host still starts the way the browsers start it.

use std::io::Write;
use std::process::Stdio;

use crate::support::{frame, output_within, ChildGuard, FrameReader, TestHome, ORIGIN, PROCESS_WAIT};

/// Every subcommand, as typed after `herdr-companion`.
const SUBCOMMANDS: &[&[&str]] = &[
    &["host"],
    &["runtime"],
    &["install"],
    &["uninstall"],
    &["doctor"],
    &["task"],
    &["task", "dispatch"],
    &["task", "list"],
    &["version"],
];

#[test]
fn every_subcommand_prints_its_help_and_exits_0() {
    let home = TestHome::new();
    for sub in SUBCOMMANDS {
        for help in ["--help", "-h"] {
            let mut args = sub.to_vec();
            args.push(help);
            let output = output_within(&mut home.command(&args), "--help");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert_eq!(output.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
            let usage = format!("Usage: herdr-companion {}", sub.join(" "));
            assert!(stdout.contains(&usage), "{args:?} does not print `{usage}`:\n{stdout}");
        }
    }
    // `help SUB` says the same as `SUB --help`.
    let output = output_within(&mut home.command(&["help", "install"]), "help install");
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Usage: herdr-companion install"));
}

#[test]
fn the_top_level_help_names_every_subcommand_and_the_home() {
    let output = output_within(&mut TestHome::new().command(&["--help"]), "--help");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for sub in ["host", "runtime", "install", "uninstall", "doctor", "task", "version"] {
        assert!(stdout.contains(&format!("\n  {sub} ")), "{sub} missing:\n{stdout}");
    }
    assert!(stdout.contains("~/Library/Application Support/herdr-continuity on macOS"), "{stdout}");
}

#[test]
fn an_unknown_flag_is_named_with_the_usage_and_exits_2() {
    let output = output_within(&mut TestHome::new().command(&["install", "--browser", "chrome", "--bogus"]), "install --bogus");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unexpected argument '--bogus' found"), "{stderr}");
    assert!(stderr.contains("Usage: herdr-companion install"), "{stderr}");
    assert!(stderr.contains("try '--help'"), "{stderr}");
}

#[test]
fn a_missing_or_unknown_value_says_what_is_accepted() {
    let home = TestHome::new();
    let output = output_within(&mut home.command(&["install"]), "install");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("required arguments were not provided") && stderr.contains("--browser <BROWSER>"), "{stderr}");

    let output = output_within(&mut home.command(&["doctor", "--browser", "firefox"]), "doctor");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid value 'firefox'"), "{stderr}");
    assert!(stderr.contains("[possible values: chrome, chromium, edge, brave]"), "{stderr}");

    let output = output_within(&mut home.command(&["frobnicate"]), "frobnicate");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unrecognized subcommand 'frobnicate'"));
}

#[test]
fn the_version_is_printed_by_three_spellings() {
    let home = TestHome::new();
    for args in [&["--version"][..], &["-V"][..], &["version"][..]] {
        let output = output_within(&mut home.command(args), "version");
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), format!("herdr-companion {}", env!("CARGO_PKG_VERSION")));
    }
}

/// The host answers `runtime_unreachable` (autostart off, no runtime) when started with
/// `args`, which proves the arguments reached our host and it accepted the origin.
fn assert_host_runs(args: &[&str]) {
    let home = TestHome::new();
    let mut command = home.command(args);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut host = ChildGuard::spawn(&mut command, "the host");
    let mut stdin = host.child.stdin.take().expect("stdin");
    let _ = stdin.write_all(&frame(b"{}"));
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));
    let error = stdout.next().expect("frame");
    assert_eq!(error["data"]["code"], "runtime_unreachable", "{args:?}");
    assert_eq!(host.wait_within(PROCESS_WAIT).code(), Some(1), "{args:?}");
}

/// Chrome on Windows adds `--parent-window=N` after the origin; it is ignored.
#[test]
fn the_host_ignores_what_the_browser_passes_after_the_origin() {
    assert_host_runs(&["host", ORIGIN, "--parent-window=0"]);
}

/// A manifest whose `path` is the binary itself: the origin is argv[1].
#[test]
fn an_origin_as_the_first_argument_runs_the_host() {
    assert_host_runs(&[ORIGIN]);
}
