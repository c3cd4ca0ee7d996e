//! The Native Messaging host binary (SPEC N1, docs/PROTOCOL.md "Framing").

use serde_json::{json, Value};
use std::io::Write;
use std::process::Stdio;

use crate::support::{frame, output_within, send_sigterm, ChildGuard, DetachedRuntime, FrameReader, TestHome, ORIGIN, PROCESS_WAIT};

fn is_host_error(v: &Value) -> bool {
    v["event"] == "host_error"
}

/// N1: only our extension's exact origin may run the host; nothing is written to stdout.
#[test]
fn a_wrong_origin_is_refused_without_output() {
    let home = TestHome::new();
    for args in [vec!["host", "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"], vec!["host"]] {
        let output = output_within(&mut home.command(&args), "the host");
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?} wrote to stdout");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("refusing caller origin"), "{stderr}");
        assert!(stderr.contains("herdr-companion install"), "{stderr}");
    }
}

/// N1: oversize, non-JSON and non-object frames each get a host_error and the host keeps
/// relaying; a frame cut short at EOF gets a host_error and a clean exit.
#[test]
fn bad_frames_get_host_errors_and_the_host_stays_up() {
    let home = TestHome::new();
    let _runtime = home.start_runtime();
    let mut host =
        ChildGuard::spawn(home.command(&["host", ORIGIN]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()), "the host");
    let mut stdin = host.child.stdin.take().expect("stdin");
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));

    stdin.write_all(&frame(b"{not json")).expect("write");
    let error = stdout.until(is_host_error);
    assert_eq!(error["data"]["code"], "bad_frame");

    stdin.write_all(&frame(b"[1,2,3]")).expect("write");
    let error = stdout.until(is_host_error);
    assert_eq!(error["data"]["code"], "bad_frame");

    let oversize = vec![b' '; 1024 * 1024 + 1];
    stdin.write_all(&frame(&oversize)).expect("write");
    let error = stdout.until(is_host_error);
    assert_eq!(error["data"]["code"], "frame_too_large");
    assert!(error["data"]["message"].as_str().unwrap_or("").contains("1 MiB"));

    // Still relaying: a hello goes through the real runtime and comes back.
    let hello = json!({"id":"h1","method":"hello","params":{"protocol":2,"extension_version":"0.1.0"}});
    stdin.write_all(&frame(hello.to_string().as_bytes())).expect("write");
    let answer = stdout.until(|v| v["id"] == "h1");
    assert_eq!(answer["result"]["type"], "hello");
    assert_eq!(answer["result"]["compatible"], true);

    // A frame cut short by EOF.
    let mut truncated = 100u32.to_ne_bytes().to_vec();
    truncated.extend_from_slice(b"{\"id\":");
    stdin.write_all(&truncated).expect("write");
    drop(stdin);
    let error = stdout.until(is_host_error);
    assert_eq!(error["data"]["code"], "bad_frame");
    assert!(error["data"]["message"].as_str().unwrap_or("").contains("mid-message"));
    let status = host.wait_within(PROCESS_WAIT);
    assert!(status.success(), "host should exit cleanly, got {status}");
}

/// N2: host ↔ runtime relay round trip, with the host starting the runtime itself,
/// detached, so that the runtime outlives the host.
#[test]
fn the_host_starts_a_detached_runtime_that_outlives_it() {
    let home = TestHome::new();
    let mut host = ChildGuard::spawn(
        home.command(&["host", ORIGIN])
            .env_remove("HERDR_COMPANION_AUTOSTART")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
        "the host",
    );
    let mut stdin = host.child.stdin.take().expect("stdin");
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));
    let ping = json!({"id":"p1","method":"ping","params":{}});
    stdin.write_all(&frame(ping.to_string().as_bytes())).expect("write");
    let answer = stdout.until(|v| v["id"] == "p1");
    // From here on the runtime is ours to stop, even if an assertion fails.
    let runtime = DetachedRuntime::from_log(&home);
    assert_eq!(answer["result"]["type"], "pong");
    drop(stdin);
    assert!(host.wait_within(PROCESS_WAIT).success());

    // The runtime is still there after the host is gone.
    assert!(runtime.is_running(), "the runtime died with its host");
    let mut client = crate::support::LineClient::connect(&home.socket());
    let answer = client.call("again", "ping", json!({}));
    assert_eq!(answer["result"]["type"], "pong");
    drop(client);

    // Stop the runtime we caused to start: it removes its socket and exits.
    send_sigterm(runtime.pid);
    runtime.wait_for_exit();
    assert!(!home.socket().exists(), "runtime did not remove its socket on SIGTERM");
}

/// N2: with no runtime and autostart disabled the host says so and exits 1.
#[test]
fn no_runtime_means_runtime_unreachable_and_exit_1() {
    let home = TestHome::new();
    let mut host =
        ChildGuard::spawn(home.command(&["host", ORIGIN]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()), "the host");
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));
    let error = stdout.next().expect("a host_error frame");
    assert_eq!(error["event"], "host_error");
    assert_eq!(error["data"]["code"], "runtime_unreachable");
    assert!(error["data"]["message"].as_str().unwrap_or("").contains("herdr-companion runtime"));
    assert_eq!(host.wait_within(PROCESS_WAIT).code(), Some(1));
}

/// docs/PROTOCOL.md "Events": a runtime message over 1 MiB never reaches the browser; a
/// `response_too_large` host_error naming the request id replaces it.
#[test]
fn an_oversize_runtime_message_becomes_response_too_large() {
    use std::io::{BufRead, BufReader};
    let home = TestHome::new();
    std::fs::create_dir_all(home.home().join("run")).expect("mkdir");
    // A stand-in runtime that answers any request with a 2 MiB result, then a small one.
    let listener = std::os::unix::net::UnixListener::bind(home.socket()).expect("bind");
    let runtime = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut writer = stream;
        let mut line = String::new();
        reader.read_line(&mut line).expect("request");
        let request: Value = serde_json::from_str(&line).expect("JSON");
        let big = json!({"id": request["id"], "result": {"type": "big", "pad": "x".repeat(2 << 20)}});
        writeln!(writer, "{big}").expect("write big");
        writeln!(writer, "{}", json!({"event": "after", "data": {}})).expect("write small");
        // Keep the connection open until the host has read both.
        let _ = reader.read_line(&mut line);
    });
    let mut host =
        ChildGuard::spawn(home.command(&["host", ORIGIN]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()), "the host");
    let mut stdin = host.child.stdin.take().expect("stdin");
    let mut stdout = FrameReader::new(host.child.stdout.take().expect("stdout"));
    stdin.write_all(&frame(br#"{"id":"big-1","method":"whatever","params":{}}"#)).expect("write");
    let error = stdout.next().expect("frame");
    assert_eq!(error["event"], "host_error");
    assert_eq!(error["data"]["code"], "response_too_large");
    assert_eq!(error["data"]["id"], "big-1");
    // The relay continues with the next message.
    assert_eq!(stdout.next().expect("frame")["event"], "after");
    drop(stdin);
    assert!(host.wait_within(PROCESS_WAIT).success());
    runtime.join().expect("stand-in runtime");
}
