//! The Herdr client against tiny in-test Herdr servers that answer `ping` like the
//! recorded transcript (transcript §1).

use companion::herdr::{self, HerdrError, HerdrState, HerdrStatus};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::support::{LineClient, TestHome};

/// Serves `ping` with the given protocol, one request per connection.
async fn fake_herdr(listener: UnixListener, protocol: u64) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut line = String::new();
            if BufReader::new(read).read_line(&mut line).await.is_err() {
                return;
            }
            let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let answer = json!({"id": request["id"], "result": {"type":"pong","version":"0.8.2","protocol":protocol,"capabilities":{"live_handoff":true,"detached_server_daemon":true}}});
            let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
        });
    }
}

fn status(socket: &Path, outcome: &Result<herdr::Pong, HerdrError>) -> HerdrStatus {
    herdr::monitor::status_from_ping(socket, outcome)
}

#[tokio::test]
async fn ping_reports_version_and_protocol_20() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("herdr.sock");
    tokio::spawn(fake_herdr(UnixListener::bind(&socket).expect("bind"), 20));
    let pong = herdr::ping(&socket, Duration::from_secs(2)).await.expect("pong");
    assert_eq!((pong.version.as_str(), pong.protocol), ("0.8.2", 20));
    assert_eq!(pong.capabilities["live_handoff"], true);
    let s = status(&socket, &Ok(pong));
    assert_eq!((s.state, s.protocol, s.detail), (HerdrState::Connected, Some(20), None));
}

#[tokio::test]
async fn protocol_19_is_unsupported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("herdr.sock");
    tokio::spawn(fake_herdr(UnixListener::bind(&socket).expect("bind"), 19));
    let outcome = herdr::ping(&socket, Duration::from_secs(2)).await;
    assert!(matches!(outcome, Err(HerdrError::UnsupportedProtocol { protocol: 19, .. })));
    let s = status(&socket, &outcome);
    assert_eq!(s.state, HerdrState::UnsupportedProtocol);
    assert!(s.detail.is_some_and(|d| d.contains("update Herdr or the companion")));
}

#[tokio::test]
async fn a_missing_socket_is_not_running_and_a_silent_one_times_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.sock");
    let outcome = herdr::ping(&missing, Duration::from_secs(1)).await;
    assert!(matches!(outcome, Err(HerdrError::NotRunning { .. })));
    assert_eq!(status(&missing, &outcome).state, HerdrState::NotRunning);

    // A server that accepts but never answers.
    let silent = dir.path().join("silent.sock");
    let listener = UnixListener::bind(&silent).expect("bind");
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let outcome = herdr::ping(&silent, Duration::from_millis(200)).await;
    assert!(matches!(outcome, Err(HerdrError::Timeout { .. })));
    assert_eq!(status(&silent, &outcome).state, HerdrState::Error);
    hold.abort();
}

/// A real runtime pointed at a Herdr answering protocol 20 reports it connected.
#[test]
fn the_runtime_reports_a_connected_herdr() {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let socket: PathBuf = home.herdr_socket.clone();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        rt.block_on(async move {
            let listener = UnixListener::bind(&socket).expect("bind fake herdr");
            let _ = bound_tx.send(());
            tokio::time::timeout(Duration::from_secs(20), fake_herdr(listener, 20)).await
        })
    });
    bound_rx.recv().expect("fake herdr bound");
    let _runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let answer = client.call("s", "herdr.status", json!({}));
    let herdr = &answer["result"]["herdr"];
    assert_eq!(herdr["state"], "connected");
    assert_eq!(herdr["protocol"], 20);
    assert_eq!(herdr["version"], "0.8.2");
    assert_eq!(herdr["detail"], Value::Null);
    drop(server);
}

/// docs/PROTOCOL.md "Events": when Herdr comes up, every connected client gets one
/// `herdr_state` event with the new state.
#[test]
fn herdr_state_changes_are_pushed_to_every_client() {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let _runtime = home.start_runtime();
    let mut first = LineClient::connect(&home.socket());
    let mut second = LineClient::connect(&home.socket());
    assert_eq!(first.call("a", "herdr.status", json!({}))["result"]["herdr"]["state"], "not_running");
    assert_eq!(second.call("b", "herdr.status", json!({}))["result"]["herdr"]["state"], "not_running");

    let socket = home.herdr_socket.clone();
    let _server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        rt.block_on(async move {
            let listener = UnixListener::bind(&socket).expect("bind fake herdr");
            tokio::time::timeout(Duration::from_secs(20), fake_herdr(listener, 20)).await
        })
    });
    for client in [&mut first, &mut second] {
        let event = client.next().expect("an event before EOF");
        assert_eq!(event["event"], "herdr_state");
        assert_eq!(event["data"]["herdr"]["state"], "connected");
        assert_eq!(event["data"]["herdr"]["version"], "0.8.2");
    }
}
