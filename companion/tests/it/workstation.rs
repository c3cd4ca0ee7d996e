//! The workstation read tools (issue 27, acceptance 1, read half) driven by a real MCP
//! client (`rmcp`, stdio) against the real runtime and `herdr-standin`: a temporary Git
//! repository is the working directory of the workspace's panes (so it is a project root
//! by default); the client reads, lists, greps and diffs it, and every escape (`..`, a
//! symlink, an absolute path outside, a revision that is an option) is refused with the
//! roots named. `herdr-companion roots add|list|remove` widens and narrows the roots.

use std::path::Path;
use std::process::{Command, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::support::{bin, RuntimeProcess, Standin, TestHome};

type Client = RunningService<RoleClient, ()>;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// `project/` (a Git repository with two commits, a modified file, a staged file and an
/// escaping symlink) and `outside/secret.txt` beside it.
fn repository(dir: &Path) -> std::path::PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).expect("mkdir");
    std::fs::create_dir_all(dir.join("outside")).expect("mkdir");
    std::fs::write(dir.join("outside/secret.txt"), "the secret\n").expect("w");
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("src/lib.rs"), "pub fn answer() -> u32 {\n    41\n}\n").expect("w");
    std::fs::write(project.join("README.md"), "# demo\n").expect("w");
    std::fs::write(project.join(".gitignore"), "target/\n").expect("w");
    git(&project, &["add", "."]);
    git(&project, &["commit", "-q", "-m", "first"]);
    std::fs::write(project.join("src/lib.rs"), "pub fn answer() -> u32 {\n    42\n}\n").expect("w");
    git(&project, &["commit", "-q", "-am", "the answer is 42"]);
    // Work in progress: a modified file (not staged) and a new staged one.
    std::fs::write(project.join("README.md"), "# demo\n\nNow with a needle.\n").expect("w");
    std::fs::write(project.join("src/new.rs"), "// staged needle\n").expect("w");
    git(&project, &["add", "src/new.rs"]);
    std::fs::create_dir_all(project.join("target")).expect("mkdir");
    std::fs::write(project.join("target/built.rs"), "needle in ignored output\n").expect("w");
    std::os::unix::fs::symlink(dir.join("outside/secret.txt"), project.join("escape")).expect("symlink");
    project
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed: {e}"))
}

async fn ok(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let result = call(client, tool, arguments.clone()).await;
    assert_eq!(result.is_error, Some(false), "{tool} {arguments}: {result:?}");
    let structured = result.structured_content.clone().expect("structured content");
    // The text part carries the same result for a client that reads only text.
    let text = serde_json::to_value(&result.content).map(|v| v.to_string()).unwrap_or_default();
    assert!(!text.is_empty() && text.len() < 300_000, "{tool}: a text part, capped");
    structured
}

async fn refused(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments.clone()).await;
    assert_eq!(result.is_error, Some(true), "{tool} {arguments} should be refused: {result:?}");
    serde_json::to_value(&result.content).map(|v| v.to_string()).unwrap_or_default()
}

struct World {
    home: TestHome,
    _standin: Standin,
    _runtime: RuntimeProcess,
    _dir: tempfile::TempDir,
    project: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = std::fs::canonicalize(repository(dir.path())).expect("canonical");
    let outside = std::fs::canonicalize(dir.path().join("outside")).expect("canonical");
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let seed = json!({"workspaces": [{"label": "alpha", "cwd": project, "tabs": [{"panes": [{"agent": "bot", "state": "idle"}]}]}]});
    let standin = Standin::start(&home.herdr_socket, Some(&seed), &[]);
    let runtime = home.start_runtime();
    World { home, _standin: standin, _runtime: runtime, _dir: dir, project, outside }
}

async fn client(world: &World) -> Client {
    let mut command = tokio::process::Command::new(bin());
    command.arg("mcp");
    for (key, value) in world.home.command(&[]).get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let (transport, _stderr) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn mcp");
    ().serve(transport).await.expect("initialize over stdio")
}

/// Polls until the pane's working directory (the project) is a root.
async fn wait_for_the_pane_root(client: &Client) {
    for _ in 0..200 {
        let result = call(client, "herdr_fs_list", json!({"path": "."})).await;
        if result.is_error == Some(false) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the pane's working directory never became a project root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_reads_lists_greps_and_diffs_a_repository_inside_its_roots() {
    let world = world();
    let client = client(&world).await;
    wait_for_the_pane_root(&client).await;

    // The five are listed, read-only (so the JSON bridge runs them without a click).
    let tools = client.list_all_tools().await.expect("tools/list");
    for name in ["herdr_fs_read", "herdr_fs_list", "herdr_fs_grep", "herdr_git", "herdr_since"] {
        let tool = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
        assert_eq!(tool.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true), "{name} is read-only");
    }

    // herdr_fs_read: a line range, with the root it lies in.
    let read = ok(&client, "herdr_fs_read", json!({"path": "src/lib.rs", "start_line": 2, "end_line": 2})).await;
    assert_eq!((read["content"].as_str(), read["root"].as_str()), (Some("    42\n"), world.project.to_str()));
    let absolute = ok(&client, "herdr_fs_read", json!({"path": world.project.join("README.md"), "max_bytes": 7})).await;
    assert_eq!(
        (absolute["content"].as_str(), absolute["truncated"].as_bool(), absolute["next_start_line"].as_u64()),
        (Some("# demo\n"), Some(true), Some(2))
    );

    // herdr_fs_list: .gitignore'd target/ and .git are left out; the symlink is listed, not followed.
    let listed = ok(&client, "herdr_fs_list", json!({"path": ".", "recursive": true})).await;
    let entries: Vec<(String, String)> = listed["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["path"].as_str().unwrap_or("").to_owned(), e["type"].as_str().unwrap_or("").to_owned()))
        .collect();
    let names: Vec<&str> = entries.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, [".gitignore", "README.md", "escape", "src", "src/lib.rs", "src/new.rs"]);
    assert!(entries.contains(&("escape".to_owned(), "symlink".to_owned())));

    // herdr_fs_grep: literal, ignored files skipped, the symlink not searched.
    let grepped = ok(&client, "herdr_fs_grep", json!({"root": ".", "pattern": "needle"})).await;
    let hits: Vec<String> = grepped["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().unwrap_or(""), m["line"]))
        .collect();
    assert_eq!(hits, ["README.md:3", "src/new.rs:1"]);
    let regex = ok(&client, "herdr_fs_grep", json!({"root": "src", "pattern": "^\\s+4\\d$", "regex": true, "glob": "*.rs"})).await;
    assert_eq!(regex["count"], 1);
    let secret = ok(&client, "herdr_fs_grep", json!({"root": ".", "pattern": "the secret"})).await;
    assert_eq!(secret["count"], 0, "the escaping symlink is not followed");

    // herdr_git: status, diff of the work tree, staged, a path, two revisions; log; show.
    let status = ok(&client, "herdr_git", json!({"root": ".", "action": "status"})).await;
    let changed: Vec<String> = status["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| format!("{} {}", e["status"].as_str().unwrap_or(""), e["path"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(changed, [" M README.md", "A  src/new.rs", "?? escape"], "XY as git status --porcelain gives them");
    assert_eq!(status["clean"], false);
    assert!(status["branch"].as_str().is_some_and(|b| b.starts_with("main")), "{status}");
    let diff = ok(&client, "herdr_git", json!({"root": ".", "action": "diff"})).await;
    let text = diff["text"].as_str().unwrap_or("");
    assert!(text.contains("+Now with a needle.") && !text.contains("staged needle"), "{text}");
    let staged = ok(&client, "herdr_git", json!({"root": ".", "action": "diff", "staged": true})).await;
    assert!(staged["text"].as_str().is_some_and(|t| t.contains("+// staged needle") && !t.contains("Now with a needle")), "{staged}");
    let path = ok(&client, "herdr_git", json!({"root": ".", "action": "diff", "from": "HEAD~1", "path": "src/lib.rs"})).await;
    assert!(path["text"].as_str().is_some_and(|t| t.contains("-    41") && t.contains("+    42") && !t.contains("README")), "{path}");
    let revisions = ok(&client, "herdr_git", json!({"root": ".", "action": "diff", "from": "HEAD~1", "to": "HEAD"})).await;
    assert!(revisions["text"].as_str().is_some_and(|t| t.contains("+    42") && !t.contains("needle")), "{revisions}");
    let log = ok(&client, "herdr_git", json!({"root": ".", "action": "log", "max_count": 5})).await;
    let subjects: Vec<&str> = log["commits"].as_array().expect("commits").iter().filter_map(|c| c["subject"].as_str()).collect();
    assert_eq!(subjects, ["the answer is 42", "first"]);
    let show = ok(&client, "herdr_git", json!({"root": ".", "action": "show", "from": "HEAD~1"})).await;
    assert!(show["text"].as_str().is_some_and(|t| t.contains("first") && t.contains("+# demo")), "{show}");

    // herdr_since: the stored Herdr events, and a cursor that moves.
    let since = ok(&client, "herdr_since", json!({"cursor": 0})).await;
    assert!(since["events"].as_array().is_some_and(|e| e.iter().any(|e| e["event"] == "pane_upsert")), "{since}");
    let cursor = since["cursor"].as_i64().expect("cursor");
    let again = ok(&client, "herdr_since", json!({"cursor": cursor, "log_id": since["log_id"]})).await;
    assert_eq!((again["count"].as_u64(), again["cursor"].as_i64(), again["log_reset"].as_bool()), (Some(0), Some(cursor), Some(false)));

    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_dot_a_symlink_an_absolute_path_and_an_option_revision_are_refused_naming_the_roots() {
    let world = world();
    let client = client(&world).await;
    wait_for_the_pane_root(&client).await;
    let root = world.project.display().to_string();
    let secret = world.outside.join("secret.txt");
    for (tool, arguments) in [
        ("herdr_fs_read", json!({"path": "../outside/secret.txt"})),
        ("herdr_fs_read", json!({"path": "escape"})),
        ("herdr_fs_read", json!({"path": secret})),
        ("herdr_fs_read", json!({"path": "/etc/passwd"})),
        ("herdr_fs_list", json!({"path": ".."})),
        ("herdr_fs_grep", json!({"root": world.outside, "pattern": "secret"})),
        ("herdr_git", json!({"root": "..", "action": "status"})),
        ("herdr_git", json!({"root": ".", "action": "diff", "path": "../outside/secret.txt"})),
    ] {
        let text = refused(&client, tool, arguments.clone()).await;
        assert!(text.contains("outside the project roots") && text.contains(&root), "{tool} {arguments}: {text}");
        assert!(!text.contains("the secret"), "{tool} {arguments} leaked the file: {text}");
    }
    // A revision that is an option never reaches git (it would write a file).
    let written = world.project.join("pwned");
    let text =
        refused(&client, "herdr_git", json!({"root": ".", "action": "diff", "from": format!("--output={}", written.display())})).await;
    assert!(text.contains("is not a revision"), "{text}");
    assert!(!written.exists());
    let text = refused(&client, "herdr_fs_read", json!({"path": "src/lib.rs", "max_bytes": 10_000_000})).await;
    assert!(text.contains("max_bytes must be an integer from 1 to 262144"), "{text}");

    // Registering the outside directory makes it readable; removing it refuses it again.
    let run = |args: &[&str]| {
        let output = world.home.command(args).output().expect("roots runs");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let outside = world.outside.display().to_string();
    assert!(run(&["roots", "add", &outside]).contains(&outside));
    assert_eq!(run(&["roots", "list"]).trim(), outside);
    let read = ok(&client, "herdr_fs_read", json!({"path": secret})).await;
    assert_eq!(read["content"], "the secret\n");
    // Relative paths with two roots: only where exactly one root has them.
    let ambiguous = refused(&client, "herdr_fs_list", json!({"path": "."})).await;
    assert!(ambiguous.contains("send an absolute path"), "{ambiguous}");
    run(&["roots", "remove", &outside]);
    assert!(refused(&client, "herdr_fs_read", json!({"path": secret})).await.contains("outside the project roots"));
    let missing = world.home.command(&["roots", "remove", &outside]).output().expect("runs");
    assert!(!missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("is not a registered root"));
    client.cancel().await.expect("close");
}

/// `herdr_fs_grep` searches a tree in parallel and answers what the sorted walk answered:
/// the matches in path order (component order: `a/…` before `a-b.txt` and `a.txt`), with
/// `.gitignore`d, binary and hard-linked files and symlinks out of the root left out; at a
/// cap, the first matches in that order, the same on every run.
#[test]
fn a_parallel_grep_answers_the_sorted_walks_matches_in_path_order() {
    use companion::tools::grep::{grep, GrepRequest};
    use companion::tools::roots::Roots;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    for d in ["a/b/c", "ignored", "many", "empty"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(&outside).expect("mkdir");
    let w = |path: &str, text: &[u8]| std::fs::write(root.join(path), text).expect("write");
    w(".gitignore", b"ignored/\n*.log\n");
    w("a.txt", b"needle at 1\nno\nneedle at 3\n");
    w("a-b.txt", b"x\nneedle\n");
    w("a/x.rs", b"needle\n");
    w("a/b/c/deep.rs", b"one\ntwo\nneedle deep\n");
    w("B.md", b"needle upper\n");
    w("ignored/hit.rs", b"needle ignored\n");
    w("x.log", b"needle log\n");
    w("blob.bin", b"needle\0binary\n");
    for i in 0..300 {
        let text = if i % 7 == 0 { format!("line\nneedle {i}\n") } else { format!("line {i}\n") };
        w(&format!("many/f{i:03}.txt"), text.as_bytes());
    }
    std::fs::write(outside.join("secret.txt"), "needle outside\n").expect("write");
    std::os::unix::fs::symlink(&outside, root.join("out")).expect("symlink dir");
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("out.txt")).expect("symlink file");
    std::fs::hard_link(outside.join("secret.txt"), root.join("many/linked.txt")).expect("hard link");

    let mut expected = vec![
        "B.md:1".to_owned(),
        "a/b/c/deep.rs:3".to_owned(),
        "a/x.rs:1".to_owned(),
        "a-b.txt:2".to_owned(),
        "a.txt:1".to_owned(),
        "a.txt:3".to_owned(),
    ];
    expected.extend((0..300).filter(|i| i % 7 == 0).map(|i| format!("many/f{i:03}.txt:2")));
    let roots = Roots::new([root.clone()], []);
    let request = |max_matches: u64, max_bytes: u64| GrepRequest {
        root: root.display().to_string(),
        pattern: "needle".to_owned(),
        regex: false,
        glob: None,
        case_insensitive: false,
        max_matches,
        max_bytes,
    };
    let found = |result: &Value| -> Vec<String> {
        result["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| format!("{}:{}", m["path"].as_str().unwrap_or(""), m["line"]))
            .collect()
    };
    let all = grep(&roots, &request(1000, 100_000)).expect("grep");
    assert_eq!(found(&all), expected, "{all}");
    assert_eq!((all["truncated"].as_bool(), all["hard_links_skipped"].as_u64()), (Some(false), Some(1)), "{all}");
    // Searched: .gitignore, a.txt, a-b.txt, B.md, blob.bin (found binary), a/x.rs,
    // a/b/c/deep.rs and the 300 in many/; not the ignored ones, the symlinks or the hard link.
    assert_eq!(all["files_searched"].as_u64(), Some(5 + 2 + 300), "{all}");
    assert_eq!(all["matches"][0]["text"], "needle upper");
    for _ in 0..5 {
        assert_eq!(grep(&roots, &request(1000, 100_000)).expect("grep"), all, "the same answer on every run");
    }
    // Exactly as many matches as the cap: all of them, and nothing is cut.
    let exact = grep(&roots, &request(expected.len() as u64, 100_000)).expect("grep");
    assert_eq!(found(&exact), expected, "{exact}");
    assert_eq!((exact["truncated"].as_bool(), exact.get("note")), (Some(false), None), "{exact}");
    // At a cap with a match beyond it: the first matches in path order, and the note says
    // which cap.
    for max in [1u64, 3, 9, expected.len() as u64 - 1] {
        let capped = grep(&roots, &request(max, 100_000)).expect("grep");
        assert_eq!(found(&capped), expected[..max as usize], "max_matches {max}: {capped}");
        assert_eq!(capped["truncated"], true, "max_matches {max}: {capped}");
        assert!(capped["note"].as_str().is_some_and(|n| n.contains("max_matches")), "{capped}");
        assert_eq!(grep(&roots, &request(max, 100_000)).expect("grep"), capped);
    }
    // max_bytes: "needle upper" (12) + "needle deep" (11) fit in 28, "needle" (6) does not.
    let bytes = grep(&roots, &request(1000, 28)).expect("grep");
    assert_eq!(found(&bytes), expected[..2], "{bytes}");
    assert!(bytes["note"].as_str().is_some_and(|n| n.contains("max_bytes")), "{bytes}");
}
