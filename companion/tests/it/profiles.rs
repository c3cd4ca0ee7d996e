//! `profiles.get` (issue 25: a profile override dropped into the companion home), through
//! the real runtime on its real socket: the three known sites' files as text, each file
//! that cannot be read answered with its problem, the call never failing for one file.

use std::os::unix::fs::symlink;

use serde_json::{json, Value};

use crate::support::{LineClient, TestHome};

fn profiles(answer: &Value) -> Vec<Value> {
    assert_eq!(answer["result"]["type"], "profiles", "{answer}");
    answer["result"]["profiles"].as_array().cloned().unwrap_or_default()
}

#[test]
fn profiles_get_serves_the_known_sites_files_and_names_each_refused_one() {
    let home = TestHome::new();
    let mut runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    // No directory yet: nothing to serve, and no error.
    assert!(profiles(&client.call("p-1", "profiles.get", json!({}))).is_empty());

    let dir = home.home().join("profiles");
    std::fs::create_dir_all(&dir).expect("profiles dir");
    std::fs::write(dir.join("chatgpt.json"), "{\"schema\":1}").expect("chatgpt");
    let outside = home.home().join("elsewhere.json");
    std::fs::write(&outside, "{\"secret\":true}").expect("outside");
    symlink(&outside, dir.join("zai.json")).expect("zai link");
    std::fs::write(dir.join("deepseek.json"), "x".repeat(64 * 1024 + 1)).expect("deepseek");
    std::fs::write(dir.join("gemini.json"), "{}").expect("unknown site");

    let listed = profiles(&client.call("p-2", "profiles.get", json!({})));
    assert_eq!(listed.len(), 3, "only the three known sites: {listed:?}");
    let chatgpt = &listed[0];
    assert_eq!(chatgpt["site"], "chatgpt");
    assert_eq!(chatgpt["text"], "{\"schema\":1}");
    assert!(chatgpt["modified_ms"].as_u64().is_some_and(|ms| ms > 1_600_000_000_000), "{chatgpt}");
    assert!(chatgpt.get("problem").is_none(), "{chatgpt}");
    let zai = &listed[1];
    assert_eq!(zai["site"], "zai");
    assert!(zai.get("text").is_none(), "a link is never followed: {zai}");
    assert!(zai["problem"].as_str().is_some_and(|p| p.contains("symbolic link")), "{zai}");
    let deepseek = &listed[2];
    assert!(deepseek["problem"].as_str().is_some_and(|p| p.contains("at most 65536")), "{deepseek}");
    assert!(deepseek.get("text").is_none());

    // A directory where the file should be is not read either.
    std::fs::remove_file(dir.join("deepseek.json")).expect("remove");
    std::fs::create_dir(dir.join("deepseek.json")).expect("a directory");
    let listed = profiles(&client.call("p-3", "profiles.get", json!({})));
    assert!(listed[2]["problem"].as_str().is_some_and(|p| p.contains("not a regular file")), "{listed:?}");
    runtime.terminate();
}

#[test]
fn a_profiles_directory_that_is_a_link_is_not_followed() {
    let home = TestHome::new();
    let elsewhere = home.home().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::fs::write(elsewhere.join("chatgpt.json"), "{}").expect("file");
    symlink(&elsewhere, home.home().join("profiles")).expect("link");
    let mut runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let listed = profiles(&client.call("p-1", "profiles.get", json!({})));
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].get("text").is_none());
    assert!(listed[0]["problem"].as_str().is_some_and(|p| p.contains("profiles/ is a symbolic link")), "{listed:?}");
    runtime.terminate();
}

#[test]
fn a_file_with_control_characters_is_refused_so_the_answer_stays_within_the_host_cap() {
    // Escaped as `\u00XX`, 64 KiB of control characters would be 384 KiB of answer per file:
    // three of them pass the browser's 1 MiB Native Messaging cap and the whole answer would
    // be dropped. A profile never needs one (JSON allows only tab, newline and return
    // between tokens), so such a file is refused by name and the others are served.
    let home = TestHome::new();
    let mut runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let dir = home.home().join("profiles");
    std::fs::create_dir_all(&dir).expect("profiles dir");
    for site in ["chatgpt", "zai"] {
        std::fs::write(dir.join(format!("{site}.json")), "\u{1}".repeat(64 * 1024)).expect("control characters");
    }
    std::fs::write(dir.join("deepseek.json"), "{\n\t\"schema\": 1\r\n}").expect("deepseek");
    let listed = profiles(&client.call("p-1", "profiles.get", json!({})));
    assert_eq!(listed.len(), 3, "{listed:?}");
    for refused in &listed[..2] {
        assert!(refused.get("text").is_none(), "{refused}");
        assert!(refused["problem"].as_str().is_some_and(|p| p.contains("control character")), "{refused}");
    }
    assert_eq!(listed[2]["text"], "{\n\t\"schema\": 1\r\n}", "tab, newline and return are kept");
    runtime.terminate();
}
