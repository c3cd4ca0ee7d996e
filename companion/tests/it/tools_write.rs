//! The write and exec planner tools (issue 27, acceptance 1, write half) driven by a real MCP
//! client (`rmcp`, over `herdr-companion mcp` on stdio) against the real runtime and the
//! real `herdr-standin`, on a temporary Git repository that is the workspace's pane
//! directory: edits and patches (all or nothing, dry run first), refusals (uncommitted
//! changes, a working agent, a path escaping the root by `..`, a symlink or an absolute
//! path), a command, a retried `non_idempotent_write` that runs once (a counter file
//! proves it), an exec session that a runtime restart leaves `interrupted`, and the audit
//! log (`tools.audit`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::support::{bin, LineClient, RuntimeProcess, Standin, TestHome};

type Client = RunningService<RoleClient, ()>;

struct Bench {
    home: TestHome,
    standin: Standin,
    runtime: Option<RuntimeProcess>,
    repo: PathBuf,
}

fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A Git repository with `src/lib.txt` committed, the cwd of workspace `alpha`'s pane w1:p1.
fn bench() -> Bench {
    let mut home = TestHome::new();
    let repo = home.dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    git(&repo, &["config", "user.name", "t"]);
    std::fs::write(repo.join("src/lib.txt"), "alpha\nbeta\ngamma\nbeta\n").expect("write");
    std::fs::write(repo.join("README"), "readme\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let seed = json!({"workspaces": [{"label": "alpha", "cwd": repo.display().to_string(), "tabs": [{"panes": [{"agent": "bot", "state": "idle"}]}]}]});
    let standin = Standin::start(&home.herdr_socket, Some(&seed), &[]);
    let runtime = Some(home.start_runtime());
    let bench = Bench { home, standin, runtime, repo };
    bench.wait_for_pane("idle");
    bench
}

impl Bench {
    fn poll(&self, method: &str, params: Value, check: impl Fn(&Value) -> bool) -> Value {
        let mut client = LineClient::connect(&self.home.socket());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut n = 0;
        loop {
            n += 1;
            let answer = client.call(&format!("t{n}"), method, params.clone());
            if check(&answer["result"]) {
                return answer["result"].clone();
            }
            assert!(Instant::now() < deadline, "{method} never got there; last answer {answer}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_for_pane(&self, status: &str) {
        self.poll("herdr.panes", json!({}), |r| {
            r["panes"].as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == "w1:p1" && p["agent_status"] == status))
        });
    }

    async fn client(&self) -> Client {
        let mut command = tokio::process::Command::new(bin());
        command.arg("mcp");
        for (key, value) in self.home.command(&[]).get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let (transport, _stderr) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn mcp");
        ().serve(transport).await.expect("initialize over stdio")
    }
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed: {e}"))
}

/// The structured result of a call that must succeed.
async fn ok(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert_eq!(result.is_error, Some(false), "{tool} failed: {result:?}");
    result.structured_content.clone().expect("structured content")
}

/// The text of a call that must fail.
async fn refused(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert_eq!(result.is_error, Some(true), "{tool} should have been refused: {result:?}");
    serde_json::to_value(&result.content).map(|v| v.to_string()).unwrap_or_default()
}

fn read(repo: &Path, path: &str) -> String {
    std::fs::read_to_string(repo.join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_edits_patches_and_runs_in_a_git_repository_confined_to_the_root() {
    let bench = bench();
    let repo = bench.repo.clone();
    let client = bench.client().await;

    let tools = client.list_all_tools().await.expect("tools/list");
    for name in
        ["herdr_fs_edit", "herdr_fs_write", "herdr_fs_patch", "herdr_exec", "herdr_exec_start", "herdr_exec_read", "herdr_exec_kill"]
    {
        let tool = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
        assert_ne!(tool.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true), "{name} is not read-only");
    }

    // Edit: unique match required, the count said otherwise.
    let twice = refused(&client, "herdr_fs_edit", json!({"path": "src/lib.txt", "old_string": "beta", "new_string": "BETA"})).await;
    assert!(twice.contains("old_string matches 2 times"), "{twice}");
    let edited =
        ok(&client, "herdr_fs_edit", json!({"path": "src/lib.txt", "old_string": "gamma\nbeta", "new_string": "gamma\nBETA"})).await;
    assert_eq!(edited["git"], "clean");
    assert_eq!(read(&repo, "src/lib.txt"), "alpha\nbeta\ngamma\nBETA\n");
    // Now the file has uncommitted changes: refused unless confirmed.
    let dirty = refused(&client, "herdr_fs_edit", json!({"path": "src/lib.txt", "old_string": "alpha", "new_string": "ALPHA"})).await;
    assert!(dirty.contains("has uncommitted changes") && dirty.contains("confirm_dirty"), "{dirty}");
    ok(&client, "herdr_fs_edit", json!({"path": "src/lib.txt", "old_string": "alpha", "new_string": "ALPHA", "confirm_dirty": true})).await;
    git(&repo, &["commit", "-q", "-am", "edits"]);

    // Patch: a unified diff, dry run first, then for real.
    let diff = "--- a/src/lib.txt\n+++ b/src/lib.txt\n@@ -1,2 +1,3 @@\n ALPHA\n+inserted\n beta\n";
    let dry = ok(&client, "herdr_fs_patch", json!({"patch": diff, "dry_run": true})).await;
    assert_eq!((dry["applies"].as_bool(), dry["files"][0]["added"].as_u64()), (Some(true), Some(1)), "{dry}");
    assert_eq!(read(&repo, "src/lib.txt"), "ALPHA\nbeta\ngamma\nBETA\n", "a dry run writes nothing");
    ok(&client, "herdr_fs_patch", json!({"patch": diff})).await;
    assert_eq!(read(&repo, "src/lib.txt"), "ALPHA\ninserted\nbeta\ngamma\nBETA\n");
    git(&repo, &["commit", "-q", "-am", "patch"]);
    // All or nothing: the second file's hunk does not match, so the first is not written.
    let half = "*** Begin Patch\n*** Update File: README\n-readme\n+README\n*** Update File: src/lib.txt\n-not there\n+x\n*** End Patch\n";
    let nothing = refused(&client, "herdr_fs_patch", json!({"patch": half})).await;
    assert!(nothing.contains("hunk 1 does not match") && nothing.contains("nothing was written"), "{nothing}");
    assert_eq!(read(&repo, "README"), "readme\n");
    let added = "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n*** Update File: README\n-readme\n+README\n*** End Patch\n";
    ok(&client, "herdr_fs_patch", json!({"patch": added})).await;
    assert_eq!((read(&repo, "docs/new.md"), read(&repo, "README")), ("# New\n".to_owned(), "README\n".to_owned()));
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "add"]);

    // Write: a new file; an existing one only with overwrite.
    ok(&client, "herdr_fs_write", json!({"path": "notes/todo.txt", "content": "one\n"})).await;
    let exists = refused(&client, "herdr_fs_write", json!({"path": "README", "content": "x"})).await;
    assert!(exists.contains("overwrite: true"), "{exists}");

    // Confinement: `..`, an absolute path and a symlink out of the root are refused, naming the root.
    let outside = bench.home.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::os::unix::fs::symlink(&outside, repo.join("escape")).expect("symlink");
    let root = std::fs::canonicalize(&repo).expect("canonical repo").display().to_string();
    for path in ["../outside/a.txt".to_owned(), outside.join("b.txt").display().to_string(), "escape/c.txt".to_owned()] {
        let text = refused(&client, "herdr_fs_write", json!({"path": path, "content": "x", "confirm_dirty": true})).await;
        assert!(text.contains("outside the project roots") && text.contains(&root), "{path}: {text}");
    }
    let patch_out =
        refused(&client, "herdr_fs_patch", json!({"patch": "*** Begin Patch\n*** Add File: ../outside/p.txt\n+x\n*** End Patch\n"})).await;
    assert!(patch_out.contains("outside the project roots"), "{patch_out}");
    let exec_out =
        refused(&client, "herdr_exec", json!({"root": outside.display().to_string(), "command": ["true"], "intent": "read_only"})).await;
    assert!(exec_out.contains("outside the project roots"), "{exec_out}");
    assert_eq!(std::fs::read_dir(&outside).expect("outside").count(), 0, "nothing was written outside the root");

    // A command; no shell unless asked for.
    let status = ok(&client, "herdr_exec", json!({"root": ".", "command": ["git", "log", "--oneline"], "intent": "read_only"})).await;
    assert_eq!(status["exit_code"], 0);
    assert!(status["stdout"].as_str().is_some_and(|s| s.contains("add") && s.contains("init")), "{status}");
    let no_shell = ok(&client, "herdr_exec", json!({"root": ".", "command": ["echo", "$HOME"], "intent": "read_only"})).await;
    assert_eq!(no_shell["stdout"], "$HOME\n");

    // A retried non_idempotent_write with the same key runs once: the counter file proves it.
    let once = json!({"root": ".", "command": ["sh", "-c", "echo run >> counter.txt; wc -l < counter.txt"], "intent": "non_idempotent_write", "idempotency_key": "deploy-1"});
    let first = ok(&client, "herdr_exec", once.clone()).await;
    let second = ok(&client, "herdr_exec", once.clone()).await;
    assert_eq!(read(&repo, "counter.txt"), "run\n", "the command ran exactly once");
    assert_eq!((first["stdout"].as_str(), second["stdout"].as_str()), (Some("1\n"), Some("1\n")));
    assert_eq!(second["idempotent_replay"], true);
    let other = refused(
        &client,
        "herdr_exec",
        json!({"root": ".", "command": ["true"], "intent": "non_idempotent_write", "idempotency_key": "deploy-1"}),
    )
    .await;
    assert!(other.contains("was used for another command"), "{other}");
    let keyless = refused(&client, "herdr_exec", json!({"root": ".", "command": ["true"], "intent": "non_idempotent_write"})).await;
    assert!(keyless.contains("needs an idempotency_key"), "{keyless}");

    // A working agent in the pane's directory: writes and writing commands wait unless confirmed.
    bench.standin.report("w1:p1", "working");
    bench.wait_for_pane("working");
    let busy =
        refused(&client, "herdr_fs_write", json!({"path": "notes/todo.txt", "content": "two\n", "overwrite": true, "confirm_dirty": true}))
            .await;
    assert!(busy.contains("pane w1:p1") && busy.contains("confirm_busy"), "{busy}");
    let busy_exec = refused(&client, "herdr_exec", json!({"root": ".", "command": ["touch", "x"], "intent": "idempotent_write"})).await;
    assert!(busy_exec.contains("is working"), "{busy_exec}");
    ok(&client, "herdr_exec", json!({"root": ".", "command": ["true"], "intent": "read_only"})).await;
    ok(
        &client,
        "herdr_fs_write",
        json!({"path": "notes/todo.txt", "content": "two\n", "overwrite": true, "confirm_dirty": true, "confirm_busy": true}),
    )
    .await;
    bench.standin.report("w1:p1", "idle");

    // Every call is in the audit log, newest first, with its outcome.
    let audit = bench.poll("tools.audit", json!({"limit": 200}), |r| r["type"] == "tools_audit");
    let entries = audit["entries"].as_array().cloned().unwrap_or_default();
    let find = |tool: &str, outcome: &str| entries.iter().any(|e| e["tool"] == tool && e["outcome"] == outcome && e["caller"] == "mcp");
    assert!(
        find("herdr_exec", "replayed") && find("herdr_exec", "ok") && find("herdr_fs_edit", "refused") && find("herdr_fs_patch", "ok"),
        "{audit}"
    );
    let replay = entries.iter().find(|e| e["outcome"] == "replayed").expect("replay row");
    assert_eq!(replay["root"], root.as_str());
    assert!(replay["target"].as_str().is_some_and(|t| t.contains("counter.txt")), "{replay}");
    assert!(entries.iter().all(|e| e["at"].as_i64().is_some_and(|at| at > 0)));
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_is_read_and_killed_and_a_runtime_restart_leaves_it_interrupted() {
    let mut bench = bench();
    let client = bench.client().await;
    let start = json!({"root": ".", "command": ["sh", "-c", "echo started; sleep 30"]});
    let killed = ok(&client, "herdr_exec_start", start.clone()).await["session_id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let read = ok(&client, "herdr_exec_read", json!({"session_id": killed})).await;
        if read["data"] == "started\n" {
            assert_eq!((read["state"].as_str(), read["next_offset"].as_u64()), (Some("running"), Some(8)));
            break;
        }
        assert!(Instant::now() < deadline, "the session never printed: {read}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ok(&client, "herdr_exec_kill", json!({"session_id": killed})).await["state"], "killed");
    let cut = ok(&client, "herdr_exec_start", start).await["session_id"].as_str().expect("id").to_owned();
    client.cancel().await.expect("close");

    // The runtime stops and starts again: the session it ran reads as interrupted.
    if let Some(mut runtime) = bench.runtime.take() {
        runtime.terminate();
    }
    bench.runtime = Some(bench.home.start_runtime());
    let client = bench.client().await;
    let read = ok(&client, "herdr_exec_read", json!({"session_id": cut})).await;
    assert_eq!(read["state"], "interrupted", "{read}");
    let unknown = refused(&client, "herdr_exec_read", json!({"session_id": "xs-none"})).await;
    assert!(unknown.contains("no exec session xs-none"), "{unknown}");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_cannot_be_recorded_in_the_audit_log_does_not_run() {
    let bench = bench();
    let client = bench.client().await;
    // The first call runs and leaves its row finished, with the whole argv.
    ok(&client, "herdr_exec", json!({"root": ".", "command": ["echo", "first"], "intent": "read_only"})).await;
    let audit = bench.poll("tools.audit", json!({"limit": 10}), |r| r["type"] == "tools_audit");
    assert_eq!(
        (audit["entries"][0]["outcome"].as_str(), audit["entries"][0]["target"].as_str()),
        (Some("ok"), Some("[\"echo\",\"first\"]")),
        "{audit}"
    );
    // The audit table refuses every new row: the next call is refused before it runs.
    let conn = rusqlite::Connection::open(bench.home.home().join("state.db")).expect("open state.db");
    conn.execute_batch("CREATE TRIGGER no_audit BEFORE INSERT ON tool_audit BEGIN SELECT RAISE(ABORT, 'audit refused'); END;")
        .expect("trigger");
    let text = refused(&client, "herdr_exec", json!({"root": ".", "command": ["touch", "ran"], "intent": "idempotent_write"})).await;
    assert!(text.contains("could not be recorded in the audit log"), "{text}");
    let text = refused(&client, "herdr_fs_write", json!({"path": "new.txt", "content": "x", "confirm_dirty": true})).await;
    assert!(text.contains("could not be recorded in the audit log"), "{text}");
    assert!(!bench.repo.join("ran").exists() && !bench.repo.join("new.txt").exists(), "a call ran without an audit row");
}

// Issue 27: the write tools' Git check had no ceiling, so a root that is not a repository
// read the repository of a directory above it (a file there read "untracked" instead of
// "not in a repository"); `herdr_git` must not find that repository either.
#[tokio::test]
async fn a_root_that_is_not_a_repository_never_reaches_the_repository_above_it() {
    use companion::tools::edit::{git_state, GitState};
    use companion::tools::git::{git as herdr_git, GitAction, GitRequest};
    use companion::tools::roots::Roots;
    let dir = tempfile::tempdir().expect("tempdir");
    let outer = std::fs::canonicalize(dir.path()).expect("canonical").join("x");
    let sub = outer.join("sub");
    std::fs::create_dir_all(&sub).expect("mkdir");
    git(&outer, &["init", "-q"]);
    std::fs::write(outer.join("top.txt"), "top\n").expect("write");
    git(&outer, &["add", "."]);
    git(&outer, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "outer"]);
    std::fs::write(sub.join("a.txt"), "a\n").expect("write");
    let roots = Roots::new([sub.clone()], []);
    assert!(
        matches!(git_state(&sub.join("a.txt"), &roots), GitState::NoRepository(_)),
        "the Git check reached {}: {:?}",
        outer.display(),
        git_state(&sub.join("a.txt"), &roots)
    );
    let request = GitRequest {
        root: sub.display().to_string(),
        action: GitAction::Status,
        path: None,
        staged: false,
        from: None,
        to: None,
        max_count: 5,
        max_bytes: 4096,
    };
    let answer = herdr_git(&roots, &request).await;
    assert!(
        answer.as_ref().is_err_and(|e| e.to_string().contains("not a git repository")),
        "herdr_git reached the repository above the root: {answer:?}"
    );
    // Registered at the repository itself, the same file is the repository's (untracked).
    let whole = Roots::new([outer.clone()], []);
    assert_eq!(git_state(&sub.join("a.txt"), &whole), GitState::Dirty("??".to_owned()));
    assert!(herdr_git(&whole, &GitRequest { root: sub.display().to_string(), ..request }).await.is_ok());
}

/// Whether process `pid` is alive (a zombie, dead and waiting to be reaped, is not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

// Issue 27: a runtime killed with SIGKILL (no Drop runs) left its exec sessions' processes
// running, and the next start only marked their rows interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_runtime_leaves_no_exec_session_process_behind() {
    let mut bench = bench();
    let client = bench.client().await;
    // The shell is the group's leader; `sleep` is its child in the same process group.
    let start = json!({"root": ".", "command": ["sh", "-c", "sleep 300 & echo $! > sleeper.pid; echo $$ > shell.pid; wait"]});
    let id = ok(&client, "herdr_exec_start", start).await["session_id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid_in = |name: &str| std::fs::read_to_string(bench.repo.join(name)).ok().and_then(|t| t.trim().parse::<i32>().ok());
    let (sleeper, shell) = loop {
        if let (Some(sleeper), Some(shell)) = (pid_in("sleeper.pid"), pid_in("shell.pid")) {
            break (sleeper, shell);
        }
        assert!(Instant::now() < deadline, "the session never wrote its pids");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(sleeper) && alive(shell));
    client.cancel().await.expect("close");
    if let Some(mut runtime) = bench.runtime.take() {
        runtime.signal_and_wait(libc::SIGKILL);
    }
    // The next start kills what is left of the session's process group.
    bench.runtime = Some(bench.home.start_runtime());
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(sleeper) || alive(shell) {
        assert!(Instant::now() < deadline, "the session's processes outlived the runtime: sleep {} shell {}", alive(sleeper), alive(shell));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client = bench.client().await;
    let read = ok(&client, "herdr_exec_read", json!({"session_id": id})).await;
    assert_eq!(read["state"], "interrupted", "{read}");
    client.cancel().await.expect("close");
}

/// A file inside the root that is a hard link to a file outside every root is neither read,
/// searched, edited, overwritten nor patched, and the refusal says why and what to do; the
/// file outside is unchanged (failed before: every tool followed the link).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_to_a_file_outside_the_roots_is_neither_read_nor_written() {
    let bench = bench();
    let repo = bench.repo.clone();
    let client = bench.client().await;
    let outside = bench.home.dir.path().join("outside.txt");
    std::fs::write(&outside, "outside secret\n").expect("write outside");
    std::fs::hard_link(&outside, repo.join("src/alias.txt")).expect("hard link");
    git(&repo, &["add", "src/alias.txt"]);
    git(&repo, &["commit", "-q", "-m", "alias"]);

    let said = |text: &str| text.contains("hard link") && text.contains("Copy it into the root") && !text.contains("outside secret");
    let read = refused(&client, "herdr_fs_read", json!({"path": "src/alias.txt"})).await;
    assert!(said(&read), "{read}");
    let found = ok(&client, "herdr_fs_grep", json!({"root": ".", "pattern": "outside secret"})).await;
    assert_eq!((found["count"].as_u64(), found["hard_links_skipped"].as_u64()), (Some(0), Some(1)), "{found}");
    assert!(found["skipped"].as_str().is_some_and(|s| s.contains("copy such a file into the root")), "{found}");
    let edit = refused(
        &client,
        "herdr_fs_edit",
        json!({"path": "src/alias.txt", "old_string": "outside", "new_string": "inside", "confirm_dirty": true}),
    )
    .await;
    assert!(said(&edit), "{edit}");
    let write =
        refused(&client, "herdr_fs_write", json!({"path": "src/alias.txt", "content": "x\n", "overwrite": true, "confirm_dirty": true}))
            .await;
    assert!(said(&write), "{write}");
    let patch = "*** Begin Patch\n*** Update File: src/alias.txt\n-outside secret\n+inside\n*** End Patch\n";
    let patched = refused(&client, "herdr_fs_patch", json!({"patch": patch, "confirm_dirty": true})).await;
    assert!(said(&patched), "{patched}");
    let deleted = refused(
        &client,
        "herdr_fs_patch",
        json!({"patch": "*** Begin Patch\n*** Delete File: src/alias.txt\n*** End Patch\n", "confirm_dirty": true}),
    )
    .await;
    assert!(said(&deleted), "{deleted}");
    assert_eq!(std::fs::read_to_string(&outside).expect("outside"), "outside secret\n");
    assert!(repo.join("src/alias.txt").exists());

    // Copied into the root as a file of its own, it is an ordinary file again.
    std::fs::remove_file(repo.join("src/alias.txt")).expect("rm");
    std::fs::copy(&outside, repo.join("src/alias.txt")).expect("copy");
    let read = ok(&client, "herdr_fs_read", json!({"path": "src/alias.txt"})).await;
    assert_eq!(read["content"], "outside secret\n");
    ok(&client, "herdr_fs_edit", json!({"path": "src/alias.txt", "old_string": "outside", "new_string": "inside"})).await;
    assert_eq!(std::fs::read_to_string(&outside).expect("outside"), "outside secret\n");
    client.cancel().await.expect("close");
}

/// A patch that names one file twice under two spellings (`a/../x`, `./x`, a symlink inside
/// the root) is refused as ambiguous and writes nothing (failed before: the paths were
/// compared as strings, both sections applied to the same old text and the second won).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_naming_one_file_twice_by_two_spellings_is_refused() {
    let bench = bench();
    let repo = bench.repo.clone();
    let client = bench.client().await;
    std::os::unix::fs::symlink("src", repo.join("code")).expect("symlink");
    let section = |path: &str, new: &str| format!("*** Update File: {path}\n-alpha\n+{new}\n");
    for (first, second) in [("src/lib.txt", "src/../src/lib.txt"), ("./src/lib.txt", "src/lib.txt"), ("src/lib.txt", "code/lib.txt")] {
        let patch = format!("*** Begin Patch\n{}{}*** End Patch\n", section(first, "ONE"), section(second, "TWO"));
        let text = refused(&client, "herdr_fs_patch", json!({"patch": patch})).await;
        assert!(
            text.contains("names")
                && text.contains("twice")
                && text.contains(first)
                && text.contains(second)
                && text.contains("nothing was written"),
            "{first} + {second}: {text}"
        );
        let dry = refused(&client, "herdr_fs_patch", json!({"patch": patch, "dry_run": true})).await;
        assert!(dry.contains("twice"), "{dry}");
    }
    // A move onto a file the patch also changes is the same file twice too.
    let onto = "*** Begin Patch\n*** Update File: README\n*** Move to: ./src/lib.txt\n-readme\n+moved\n*** Update File: src/lib.txt\n-alpha\n+ONE\n*** End Patch\n";
    let text = refused(&client, "herdr_fs_patch", json!({"patch": onto})).await;
    assert!(text.contains("twice"), "{text}");
    assert_eq!(read(&repo, "src/lib.txt"), "alpha\nbeta\ngamma\nbeta\n", "nothing was written");
    assert_eq!(read(&repo, "README"), "readme\n");
    client.cancel().await.expect("close");
}

/// `herdr-companion roots add` is seen by the read tools and the write tools alike (one
/// roots store), and `roots remove` takes the root from both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_added_on_the_command_line_is_seen_by_the_read_and_the_write_tools() {
    let bench = bench();
    let client = bench.client().await;
    let other = bench.home.dir.path().join("other");
    std::fs::create_dir_all(&other).expect("mkdir other");
    std::fs::write(other.join("notes.txt"), "other notes\n").expect("write");
    let notes = other.join("notes.txt").display().to_string();
    let written = other.join("new.txt").display().to_string();
    let run = |args: &[&str]| {
        let output = bench.home.command(args).output().expect("roots runs");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    assert!(refused(&client, "herdr_fs_read", json!({"path": notes})).await.contains("outside the project roots"));
    assert!(refused(&client, "herdr_fs_write", json!({"path": written, "content": "x\n", "confirm_dirty": true}))
        .await
        .contains("outside the project roots"));
    run(&["roots", "add", &other.display().to_string()]);
    assert_eq!(ok(&client, "herdr_fs_read", json!({"path": notes})).await["content"], "other notes\n");
    assert_eq!(ok(&client, "herdr_fs_grep", json!({"root": other, "pattern": "notes"})).await["count"], 1);
    ok(&client, "herdr_fs_write", json!({"path": written, "content": "x\n", "confirm_dirty": true})).await;
    assert_eq!(std::fs::read_to_string(other.join("new.txt")).expect("written"), "x\n");
    run(&["roots", "remove", &other.display().to_string()]);
    assert!(refused(&client, "herdr_fs_read", json!({"path": notes})).await.contains("outside the project roots"));
    let again =
        refused(&client, "herdr_fs_write", json!({"path": written, "content": "y\n", "overwrite": true, "confirm_dirty": true})).await;
    assert!(again.contains("outside the project roots"), "{again}");
    assert_eq!(std::fs::read_to_string(other.join("new.txt")).expect("kept"), "x\n");
    client.cancel().await.expect("close");
}
