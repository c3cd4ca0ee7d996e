//! The write and exec planner tools (docs/PROTOCOL.md "Write and exec tools"):
//! `herdr_fs_edit`, `herdr_fs_write`, `herdr_fs_patch`, `herdr_exec`, `herdr_exec_start`,
//! `herdr_exec_read`, `herdr_exec_kill` — their schemas, argument checks and the one code
//! path that runs them for an MCP client or a JSON-bridge chat — and `tools.audit`.
//!
//! Invariants:
//! - Every path (and exec working directory) resolves inside the call's project roots
//!   ([`crate::tools::roots`]) before anything is read or written; a path outside is
//!   refused with the roots named. Resolving, like every file system call here, runs on
//!   the blocking pool, never on the runtime's async workers.
//! - A patch that names one file twice, however spelled (`a/../x`, `./x`, a symlink inside
//!   the root: the same path once resolved), is refused before anything is read.
//! - A file with uncommitted changes, or outside any Git work tree, is not written unless
//!   the call says `confirm_dirty: true`; a file (or exec directory) under the working
//!   directory of a pane whose agent is `working` is not touched unless it says
//!   `confirm_busy: true`.
//! - `herdr_fs_patch` applies every file in memory first (the dry run); only when all
//!   apply does it write, each file through a temp file and a rename; a failed rename rolls
//!   the files already renamed back.
//! - Every call of these tools — done, refused or failed — is one row of the audit log
//!   before its answer goes out.
//! - The caller's approval is not decided here: a JSON-bridge chat reaches these tools only
//!   through the bridge's approval (they are all mutating, `ToolName::is_read_only`); an
//!   MCP client holds the token and is the user's own planner.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::tools::Caller;
use super::Router;
use crate::protocol::{ErrorCode, MethodError};
use crate::tools::audit::AuditEntry;
use crate::tools::edit::{self, GitState, WriteError};
use crate::tools::exec::{self, Claim, Intent, DEFAULT_EXEC_TIMEOUT_MS, MAX_EXEC_TIMEOUT_MS};
use crate::tools::patch::{self, FileChange};
use crate::tools::roots::Roots;
use crate::tools::sessions::{SessionError, MAX_READ_BYTES};
use continuity_protocol::{ToolName, ToolSpec};

/// Longest `idempotency_key`, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 128;
/// Longest path argument, in characters.
const MAX_PATH_CHARS: usize = 4096;

/// The arguments each write tool takes (its schema's `properties`); `None` for the others.
pub const fn arguments_of(tool: ToolName) -> Option<&'static [&'static str]> {
    Some(match tool {
        ToolName::HerdrFsEdit => &["path", "old_string", "new_string", "confirm_dirty", "confirm_busy"],
        ToolName::HerdrFsWrite => &["path", "content", "overwrite", "confirm_dirty", "confirm_busy"],
        ToolName::HerdrFsPatch => &["root", "patch", "dry_run", "confirm_dirty", "confirm_busy"],
        ToolName::HerdrExec => &["root", "command", "timeout_ms", "intent", "idempotency_key", "confirm_busy"],
        ToolName::HerdrExecStart => &["root", "command", "confirm_busy"],
        ToolName::HerdrExecRead => &["session_id", "stream", "offset", "limit"],
        ToolName::HerdrExecKill => &["session_id"],
        _ => return None,
    })
}

fn confirm(what: &str) -> Value {
    json!({"type": "boolean", "description": what})
}

fn path_arg(what: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS, "description": what})
}

fn argv_arg() -> Value {
    json!({"type": "array", "minItems": 1, "maxItems": exec::MAX_ARGV, "items": {"type": "string"},
        "description": "The program and its arguments, e.g. [\"cargo\",\"test\",\"-q\"]. No shell runs: for pipes or globs send [\"sh\",\"-c\",\"…\"] yourself."})
}

const DIRTY: &str = "true: write even though the file has uncommitted changes or is outside any Git work tree (otherwise refused).";
const BUSY: &str = "true: act even though the agent of a pane whose working directory holds this path is working (otherwise refused).";

/// The write tools' specs, in `tools.list` order.
pub fn specs() -> Vec<ToolSpec> {
    let object = |required: &[&str], properties: Value| json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties});
    vec![
        ToolSpec {
            name: ToolName::HerdrFsEdit,
            title: "Edit a file".to_owned(),
            description: "Replace one exact piece of text in a file inside a project root: old_string must occur exactly once \
                (copy it from herdr_fs_read, whitespace included; add surrounding lines when it is not unique). Refused for a \
                file with uncommitted changes or under a working agent unless confirmed. Writes through a temp file and a rename."
                .to_owned(),
            input_schema: object(
                &["path", "old_string", "new_string"],
                json!({
                    "path": path_arg("The file: absolute, or relative to the project root."),
                    "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace; it must occur exactly once."},
                    "new_string": {"type": "string", "description": "The text that replaces it (may be empty)."},
                    "confirm_dirty": confirm(DIRTY),
                    "confirm_busy": confirm(BUSY),
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrFsWrite,
            title: "Write a file".to_owned(),
            description: "Write a whole UTF-8 file inside a project root (missing directories are made). An existing file is \
                replaced only with overwrite: true, and like every write it is refused when it has uncommitted changes or an \
                agent works there, unless confirmed."
                .to_owned(),
            input_schema: object(
                &["path", "content"],
                json!({
                    "path": path_arg("The file: absolute, or relative to the project root."),
                    "content": {"type": "string", "description": "The whole new content."},
                    "overwrite": confirm("true: replace the file if it exists (otherwise an existing file is refused)."),
                    "confirm_dirty": confirm(DIRTY),
                    "confirm_busy": confirm(BUSY),
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrFsPatch,
            title: "Apply a patch".to_owned(),
            description: "Apply a unified diff (as git diff writes it) or a *** Begin Patch … *** End Patch block to files \
                inside a project root, all or nothing: every hunk is checked against the current files first, and only if \
                all apply is anything written. dry_run: true only checks and reports. Paths in the patch are relative to root."
                .to_owned(),
            input_schema: object(
                &["patch"],
                json!({
                    "root": path_arg("The directory the patch's relative paths start from (default: the project root, when there is one)."),
                    "patch": {"type": "string", "minLength": 1, "description": "The patch text."},
                    "dry_run": confirm("true: check that it applies and report, write nothing."),
                    "confirm_dirty": confirm(DIRTY),
                    "confirm_busy": confirm(BUSY),
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrExec,
            title: "Run a command".to_owned(),
            description: "Run one command (an argv, no shell) in a directory inside a project root and wait for it, at most \
                60 s; stdout and stderr come back capped (first 8 KiB and last 24 KiB each). Say what it does in intent. A \
                non_idempotent_write needs an idempotency_key: a retry with the same key returns the first result and never \
                runs it again. For longer runs use herdr_exec_start."
                .to_owned(),
            input_schema: object(
                &["root", "command", "intent"],
                json!({
                    "root": path_arg("The working directory, inside a project root."),
                    "command": argv_arg(),
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_EXEC_TIMEOUT_MS, "description": "Kill it after this long (default 30000, at most 60000)."},
                    "intent": {"type": "string", "enum": Intent::NAMES, "description": "read_only (changes nothing), idempotent_write (running it twice is the same as once) or non_idempotent_write (must run once: send an idempotency_key)."},
                    "idempotency_key": {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_CHARS, "description": "A key you choose for this one run; required for non_idempotent_write."},
                    "confirm_busy": confirm(BUSY),
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrExecStart,
            title: "Start a command session".to_owned(),
            description: "Start a long-running command (an argv, no shell) in a directory inside a project root and return its \
                session_id at once; read its output with herdr_exec_read and stop it with herdr_exec_kill. A session cut by a \
                runtime restart reads as interrupted."
                .to_owned(),
            input_schema: object(
                &["root", "command"],
                json!({
                    "root": path_arg("The working directory, inside a project root."),
                    "command": argv_arg(),
                    "confirm_busy": confirm(BUSY),
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrExecRead,
            title: "Read a command session".to_owned(),
            description: "A session's state (running, exited, killed, interrupted), exit code and output from an offset (the \
                last 256 KiB of each stream are kept; next_offset continues)."
                .to_owned(),
            input_schema: object(
                &["session_id"],
                json!({
                    "session_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "From herdr_exec_start."},
                    "stream": {"type": "string", "enum": ["stdout", "stderr"], "description": "Which output (default stdout)."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default 0; send next_offset to continue)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_BYTES, "description": "Most bytes to return (default and at most 65536)."},
                }),
            ),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrExecKill,
            title: "Kill a command session".to_owned(),
            description: "Stop a session's whole process group (SIGTERM, then SIGKILL after 2 s).".to_owned(),
            input_schema: object(
                &["session_id"],
                json!({
                    "session_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "From herdr_exec_start."},
                }),
            ),
            read_only: false,
        },
    ]
}

fn bad(message: String) -> MethodError {
    (ErrorCode::BadRequest, message)
}

fn refused(message: String) -> MethodError {
    (ErrorCode::Refused, message)
}

/// The checked arguments of one call.
struct Args<'a> {
    tool: ToolName,
    map: &'a Map<String, Value>,
}

impl Args<'_> {
    fn only_known(&self) -> Result<(), MethodError> {
        let allowed = arguments_of(self.tool).unwrap_or(&[]);
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(bad(format!("{} has no argument `{key}`; its arguments are: {}", self.tool, allowed.join(", ")))),
        }
    }

    fn string(&self, key: &str, required: bool, allow_empty: bool, max_chars: usize) -> Result<Option<String>, MethodError> {
        match self.map.get(key) {
            None | Some(Value::Null) if required => Err(bad(format!("{} needs {key}, a string", self.tool))),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() && !allow_empty => Err(bad(format!("{}: {key} must not be empty", self.tool))),
            Some(Value::String(s)) if s.chars().count() > max_chars => {
                Err(bad(format!("{}: {key} is longer than {max_chars} characters", self.tool)))
            }
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(format!("{}: {key} must be a string", self.tool))),
        }
    }

    fn flag(&self, key: &str) -> Result<bool, MethodError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(format!("{}: {key} must be true or false", self.tool))),
        }
    }

    fn integer(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, MethodError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(bad(format!("{}: {key} must be an integer from {min} to {max}", self.tool))),
            },
        }
    }
}

/// The caller as the audit log names it.
fn caller_name(caller: &Caller) -> String {
    match caller {
        Caller::Mcp(_) => "mcp".to_owned(),
        Caller::Bridge { session_ref, .. } => format!("bridge:{session_ref}"),
    }
}

/// The panes the caller may act beside: a bridge chat's workspace, or all for MCP.
fn caller_panes(api: &Router, caller: &Caller) -> Vec<continuity_protocol::Pane> {
    let Some(hub) = api.events.as_ref() else { return Vec::new() };
    hub.catalog()
        .panes
        .values()
        .filter(|p| match caller {
            Caller::Mcp(_) => true,
            Caller::Bridge { workspace_id, .. } => p.workspace_id == *workspace_id,
        })
        .cloned()
        .collect()
}

/// The project roots of this call: [`super::workstation::roots_for`], the read tools' own
/// (one roots store, the same panes).
async fn roots_of_call(api: &Router, caller: &Caller) -> Result<Roots, MethodError> {
    super::workstation::roots_for(api, caller).await
}

/// The caller's panes whose agent is working, each as (what to call it, its working
/// directory resolved), resolved on the blocking pool.
async fn working_panes(api: &Router, caller: &Caller) -> Result<Vec<(String, PathBuf)>, MethodError> {
    let working: Vec<continuity_protocol::Pane> =
        caller_panes(api, caller).into_iter().filter(|p| p.agent_status == "working" && !p.cwd.is_empty()).collect();
    if working.is_empty() {
        return Ok(Vec::new());
    }
    blocking(move || {
        Ok(working
            .into_iter()
            .filter_map(|pane| {
                let cwd = std::fs::canonicalize(&pane.cwd).ok()?;
                Some((format!("pane {} ({} in {})", pane.pane_id, pane.agent.as_deref().unwrap_or("an agent"), cwd.display()), cwd))
            })
            .collect())
    })
    .await
}

fn check_busy(working: &[(String, PathBuf)], tool: ToolName, path: &Path, confirm_busy: bool) -> Result<(), MethodError> {
    match working.iter().find(|(_, cwd)| path.starts_with(cwd)) {
        Some((pane, _)) if !confirm_busy => Err(refused(format!(
            "{tool}: {pane} is working where this call acts ({}); wait until it settles, or send confirm_busy: true to act anyway",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// `paths` resolved inside `roots`, on the blocking pool (resolving reads the disk).
async fn resolve_all(roots: &Arc<Roots>, tool: ToolName, paths: Vec<String>) -> Result<Vec<PathBuf>, MethodError> {
    let roots = Arc::clone(roots);
    blocking(move || paths.iter().map(|path| roots.resolve(path).map_err(|e| refused(format!("{tool}: {e}")))).collect()).await
}

/// `path` resolved inside `roots`, on the blocking pool.
async fn resolve_one(roots: &Arc<Roots>, tool: ToolName, path: &str) -> Result<PathBuf, MethodError> {
    let mut resolved = resolve_all(roots, tool, vec![path.to_owned()]).await?;
    resolved.pop().ok_or_else(|| (ErrorCode::Internal, format!("{tool}: {path} was not resolved")))
}

/// Refuses a patch that names one file twice under different spellings (`a/../x`, `./x`,
/// a symlink inside the root): its sections would be applied one over the other.
fn refuse_same_file_twice(planned: &[(patch::FilePatch, PathBuf, Option<PathBuf>)]) -> Result<(), MethodError> {
    let mut seen: Vec<(&Path, &str)> = Vec::new();
    for (file, path, move_to) in planned {
        let named = std::iter::once((path.as_path(), file.path.as_str())).chain(move_to.as_deref().map(|to| {
            let shown = match &file.change {
                FileChange::Update { move_to: Some(to), .. } => to.as_str(),
                _ => file.path.as_str(),
            };
            (to, shown)
        }));
        for (resolved, spelled) in named {
            if let Some((_, first)) = seen.iter().find(|(p, _)| *p == resolved) {
                return Err(bad(format!(
                    "herdr_fs_patch: the patch names {} twice (as {first} and as {spelled}); nothing was written. Merge those sections into one section for the file",
                    resolved.display()
                )));
            }
            seen.push((resolved, spelled));
        }
    }
    Ok(())
}

fn write_error(error: WriteError) -> MethodError {
    match error {
        WriteError::Refused(m) => refused(m),
        WriteError::Io(m) => (ErrorCode::Internal, m),
    }
}

/// What the audit row says of a call: root, target, and (after the call) outcome, detail.
struct Audit {
    root: String,
    target: String,
}

/// Runs write tool `tool` for `caller` (already confined and approved by the caller's path)
/// and records it in the audit log.
pub async fn run(api: &Router, caller: &Caller, tool: ToolName, map: &Map<String, Value>) -> Result<Value, MethodError> {
    let Some(service) = api.write_tools.clone() else {
        return Err((ErrorCode::NotReady, format!("{tool}: the write tools' tables in state.db could not be opened; see runtime.log (herdr-companion doctor) and restart the runtime")));
    };
    let args = Args { tool, map };
    let mut audit = Audit {
        root: String::new(),
        target: map
            .get("path")
            .or_else(|| map.get("session_id"))
            .or_else(|| map.get("command"))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default(),
    };
    if tool == ToolName::HerdrFsPatch {
        // Every path the patch names, in the started row already.
        if let Some(files) = map.get("patch").and_then(Value::as_str).and_then(|text| patch::parse(text).ok()) {
            audit.target = patch_paths(&files);
        }
    }
    let now = || i64::try_from(crate::clock::unix_millis()).unwrap_or(i64::MAX);
    let started = AuditEntry {
        tool: tool.as_str().to_owned(),
        caller: caller_name(caller),
        root: String::new(),
        target: audit.target.clone(),
        outcome: "started".to_owned(),
        detail: String::new(),
    };
    let seq = match service.audit.start(started, now()).await {
        Ok(seq) => seq,
        Err(error) => {
            // Fail closed: a call that is not in the audit log does not run.
            api.log.line(format_args!("tools audit: {error}"));
            return Err((ErrorCode::NotReady, format!("{tool}: the call was not run because it could not be recorded in the audit log ({error}); see runtime.log (herdr-companion doctor)")));
        }
    };
    let result = dispatch(api, caller, &service, &args, &mut audit).await;
    let (outcome, detail) = match &result {
        Ok(value) => outcome_of(value),
        Err((code, message)) => {
            (if *code == ErrorCode::Refused || *code == ErrorCode::BadRequest { "refused" } else { "failed" }.to_owned(), message.clone())
        }
    };
    let entry =
        AuditEntry { tool: tool.as_str().to_owned(), caller: caller_name(caller), root: audit.root, target: audit.target, outcome, detail };
    if let Err(error) = service.audit.finish(seq, entry).await {
        // Fail closed: an answer that is not in the audit log does not go out as a success.
        api.log.line(format_args!("tools audit: {error}"));
        return Err((
            ErrorCode::Internal,
            format!("{tool}: the call ran but could not be recorded in the audit log ({error}); see runtime.log"),
        ));
    }
    result
}

/// Every path of a patch (a move's destination after `->`), for the audit row.
fn patch_paths(files: &[patch::FilePatch]) -> String {
    files
        .iter()
        .map(|f| match &f.change {
            patch::FileChange::Update { move_to: Some(to), .. } => format!("{} -> {to}", f.path),
            _ => f.path.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// (outcome, detail) of a successful result.
fn outcome_of(value: &Value) -> (String, String) {
    if value.get("idempotent_replay") == Some(&Value::Bool(true)) {
        return ("replayed".to_owned(), "the first run's result was returned; the command did not run again".to_owned());
    }
    if value.get("state").and_then(Value::as_str) == Some("interrupted") {
        return ("interrupted".to_owned(), "the runtime stopped while it ran".to_owned());
    }
    if let Some(code) = value.get("exit_code").filter(|c| !c.is_null()) {
        let failed = code.as_i64() != Some(0);
        return (if failed { "failed" } else { "ok" }.to_owned(), format!("exit {code}"));
    }
    if value.get("timed_out") == Some(&Value::Bool(true)) {
        return ("failed".to_owned(), "timed out".to_owned());
    }
    if let Some(error) = value.get("spawn_error").and_then(Value::as_str) {
        return ("failed".to_owned(), error.to_owned());
    }
    let detail = value.get("summary").and_then(Value::as_str).unwrap_or("done").to_owned();
    ("ok".to_owned(), detail)
}

async fn dispatch(
    api: &Router,
    caller: &Caller,
    service: &std::sync::Arc<crate::tools::write::WriteTools>,
    args: &Args<'_>,
    audit: &mut Audit,
) -> Result<Value, MethodError> {
    args.only_known()?;
    match args.tool {
        ToolName::HerdrExecRead => {
            let id = args.string("session_id", true, false, 64)?.unwrap_or_default();
            let stderr = match args.string("stream", false, false, 16)?.as_deref() {
                None | Some("stdout") => false,
                Some("stderr") => true,
                Some(other) => return Err(bad(format!("herdr_exec_read: stream is stdout or stderr, not {other}"))),
            };
            let offset = args.integer("offset", 0, u64::MAX)?.unwrap_or(0);
            let limit = usize::try_from(args.integer("limit", 1, MAX_READ_BYTES as u64)?.unwrap_or(MAX_READ_BYTES as u64))
                .unwrap_or(MAX_READ_BYTES);
            return service.sessions.read(&caller_name(caller), &id, stderr, offset, limit).await.map_err(session_error);
        }
        ToolName::HerdrExecKill => {
            let id = args.string("session_id", true, false, 64)?.unwrap_or_default();
            return service.sessions.kill(&caller_name(caller), &id).await.map_err(session_error);
        }
        _ => {}
    }
    let roots = Arc::new(roots_of_call(api, caller).await?);
    let working = working_panes(api, caller).await?;
    let root_of = |p: &Path| roots.root_of(p).map(|r| r.display().to_string()).unwrap_or_default();
    match args.tool {
        ToolName::HerdrFsEdit | ToolName::HerdrFsWrite => {
            let path_arg = args.string("path", true, false, MAX_PATH_CHARS)?.unwrap_or_default();
            let (confirm_dirty, confirm_busy) = (args.flag("confirm_dirty")?, args.flag("confirm_busy")?);
            let edit = if args.tool == ToolName::HerdrFsEdit {
                Some((
                    args.string("old_string", true, false, usize::MAX)?.unwrap_or_default(),
                    args.string("new_string", true, true, usize::MAX)?.unwrap_or_default(),
                ))
            } else {
                None
            };
            let content = if edit.is_none() { args.string("content", true, true, usize::MAX)? } else { None };
            let overwrite = if edit.is_none() { args.flag("overwrite")? } else { false };
            let path = resolve_one(&roots, args.tool, &path_arg).await?;
            audit.root = root_of(&path);
            audit.target = path.display().to_string();
            check_busy(&working, args.tool, &path, confirm_busy)?;
            let tool = args.tool;
            let roots = roots.clone();
            blocking(move || -> Result<Value, MethodError> {
                let shown = path.display().to_string();
                let meta = path.symlink_metadata().ok();
                let exists = meta.is_some();
                if edit.is_none() && exists && !overwrite {
                    return Err(refused(format!(
                        "herdr_fs_write: {shown} exists; send overwrite: true to replace it (herdr_fs_edit changes part of it)"
                    )));
                }
                if let Some(meta) = &meta {
                    edit::refuse_hard_link(tool.as_str(), &shown, meta).map_err(write_error)?;
                }
                let git = edit::git_state(&path, &roots);
                edit::check_git(tool.as_str(), &shown, &git, confirm_dirty).map_err(write_error)?;
                let (new_text, summary) = match (edit, content) {
                    (Some((old, new)), _) => {
                        let text = edit::read_text(tool.as_str(), &path, &shown, &roots).map_err(write_error)?;
                        (edit::replace_once(&shown, &text, &old, &new).map_err(write_error)?, format!("replaced 1 occurrence in {shown}"))
                    }
                    (None, Some(content)) => {
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent)
                                .map_err(|e| (ErrorCode::Internal, format!("herdr_fs_write: {} cannot be made ({e})", parent.display())))?;
                        }
                        let summary = format!("{} {shown} ({} bytes)", if exists { "replaced" } else { "created" }, content.len());
                        (content, summary)
                    }
                    (None, None) => return Err(bad(format!("{tool} needs content"))),
                };
                edit::write_atomic(&path, new_text.as_bytes())
                    .map_err(|e| (ErrorCode::Internal, format!("{tool}: {shown} could not be written ({e}); nothing was changed")))?;
                Ok(json!({"path": shown, "bytes": new_text.len(), "git": git_name(&git), "summary": summary}))
            })
            .await
        }
        ToolName::HerdrFsPatch => {
            let text = args.string("patch", true, false, usize::MAX)?.unwrap_or_default();
            let root_arg = args.string("root", false, false, MAX_PATH_CHARS)?;
            let (dry_run, confirm_dirty, confirm_busy) = (args.flag("dry_run")?, args.flag("confirm_dirty")?, args.flag("confirm_busy")?);
            let base = match &root_arg {
                Some(root) => resolve_one(&roots, args.tool, root).await?,
                None => match roots.list().as_slice() {
                    [only] => only.clone(),
                    [] => return Err(refused(format!("herdr_fs_patch: {}", crate::tools::roots::RootError::NoRoots))),
                    many => {
                        return Err(bad(format!(
                            "herdr_fs_patch: there are {} project roots ({}); send root, the directory the patch's paths start from",
                            many.len(),
                            roots.describe()
                        )))
                    }
                },
            };
            audit.root = root_of(&base);
            let files = patch::parse(&text).map_err(|e| bad(format!("herdr_fs_patch: {e}")))?;
            audit.target = patch_paths(&files);
            // Every path (and a move's destination) inside the roots, before anything is read.
            let joined = |p: &str| if Path::new(p).is_absolute() { p.to_owned() } else { base.join(p).display().to_string() };
            let mut named = Vec::new();
            for file in &files {
                named.push(joined(&file.path));
                if let FileChange::Update { move_to: Some(to), .. } = &file.change {
                    named.push(joined(to));
                }
            }
            let mut resolved = resolve_all(&roots, args.tool, named).await?.into_iter();
            let mut planned = Vec::new();
            for file in files {
                let lost = || (ErrorCode::Internal, format!("herdr_fs_patch: {} was not resolved", file.path));
                let path = resolved.next().ok_or_else(lost)?;
                let move_to = match &file.change {
                    FileChange::Update { move_to: Some(_), .. } => Some(resolved.next().ok_or_else(lost)?),
                    _ => None,
                };
                check_busy(&working, args.tool, &path, confirm_busy)?;
                planned.push((file, path, move_to));
            }
            refuse_same_file_twice(&planned)?;
            let roots = roots.clone();
            blocking(move || apply_patch(&roots, planned, dry_run, confirm_dirty)).await
        }
        ToolName::HerdrExec | ToolName::HerdrExecStart => {
            let root_arg = args.string("root", true, false, MAX_PATH_CHARS)?.unwrap_or_default();
            let argv = exec::argv_of(args.map.get("command")).map_err(|e| bad(format!("{}: {e}", args.tool)))?;
            let confirm_busy = args.flag("confirm_busy")?;
            audit.target = serde_json::to_string(&argv).unwrap_or_default();
            let (timeout_ms, intent, key) = if args.tool == ToolName::HerdrExec {
                let timeout = args.integer("timeout_ms", 1, MAX_EXEC_TIMEOUT_MS)?.unwrap_or(DEFAULT_EXEC_TIMEOUT_MS);
                let intent_name = args.string("intent", true, false, 32)?.unwrap_or_default();
                let intent = Intent::parse(&intent_name)
                    .ok_or_else(|| bad(format!("herdr_exec: intent is one of {}, not {intent_name}", Intent::NAMES.join(", "))))?;
                let key = args.string("idempotency_key", false, false, MAX_IDEMPOTENCY_KEY_CHARS)?;
                if intent == Intent::NonIdempotentWrite && key.is_none() {
                    return Err(bad("herdr_exec: a non_idempotent_write needs an idempotency_key (one you choose for this run), so a retry can never run it twice".to_owned()));
                }
                (timeout, Some(intent), key)
            } else {
                (0, None, None)
            };
            let cwd = resolve_one(&roots, args.tool, &root_arg).await?;
            audit.root = root_of(&cwd);
            let probe = cwd.clone();
            if !blocking(move || Ok(probe.is_dir())).await? {
                return Err(bad(format!("{}: root {} is not a directory; send the directory to run in", args.tool, cwd.display())));
            }
            if intent != Some(Intent::ReadOnly) {
                check_busy(&working, args.tool, &cwd, confirm_busy)?;
            }
            if args.tool == ToolName::HerdrExecStart {
                let now = i64::try_from(crate::clock::unix_millis()).unwrap_or(i64::MAX);
                return service.sessions.start(&caller_name(caller), &argv, &cwd, now).await.map_err(session_error);
            }
            let timeout = Duration::from_millis(timeout_ms);
            let Some(key) = key.filter(|_| intent == Some(Intent::NonIdempotentWrite)) else {
                let mut result = exec::run(&argv, &cwd, timeout).await;
                annotate(&mut result, intent, &cwd);
                return Ok(result);
            };
            let scoped = format!("{}\u{1f}{key}", caller_name(caller));
            let now = i64::try_from(crate::clock::unix_millis()).unwrap_or(i64::MAX);
            let claim = service.runs.claim(scoped.clone(), exec::fingerprint(&argv, &cwd), now).await.map_err(|e| {
                (ErrorCode::Internal, format!("herdr_exec: the idempotency key could not be claimed ({e}); the command did not run"))
            })?;
            match claim {
                Claim::Claimed => {
                    // A task of its own: a dropped request (the caller went away) neither
                    // kills the command nor leaves its key without the result.
                    let runs = service.clone();
                    let task = tokio::spawn(async move {
                        let mut result = exec::run(&argv, &cwd, timeout).await;
                        annotate(&mut result, intent, &cwd);
                        if let Value::Object(map) = &mut result {
                            map.insert("idempotency_key".to_owned(), json!(key));
                        }
                        runs.runs.finish(scoped, &result).await.map(|()| result)
                    });
                    match task.await {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(e)) => Err((ErrorCode::Internal, format!("herdr_exec: the command ran but its result could not be stored ({e}); do not retry it — read its effects instead"))),
                        Err(lost) => Err((ErrorCode::Internal, format!("herdr_exec: the run stopped before it finished ({lost}); do not retry it — read its effects instead"))),
                    }
                }
                Claim::Done(mut first) => {
                    if let Value::Object(map) = &mut first {
                        map.insert("idempotent_replay".to_owned(), json!(true));
                    }
                    Ok(first)
                }
                Claim::Unfinished { interrupted: true } => {
                    Ok(json!({"idempotency_key": key, "state": "interrupted", "idempotent_replay": false,
                    "note": "A run with this key was started but the runtime stopped before it finished; it is not run again. Check its effects, then use a new key if it must run."}))
                }
                Claim::Unfinished { interrupted: false } => Err(refused(format!(
                    "herdr_exec: the run with idempotency_key {key} is still running; wait for its answer (it is not run twice)"
                ))),
                Claim::OtherCommand(_) => Err(refused(format!(
                    "herdr_exec: idempotency_key {key} was used for another command or directory; choose a new key for a new command"
                ))),
            }
        }
        _ => Err(bad(format!("{} is not a write tool", args.tool))),
    }
}

/// Runs blocking file and Git work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, MethodError> + Send + 'static) -> Result<T, MethodError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|lost| Err((ErrorCode::Internal, format!("the call stopped before it finished ({lost}); see runtime.log"))))
}

fn annotate(result: &mut Value, intent: Option<Intent>, cwd: &Path) {
    if let Value::Object(map) = result {
        if let Some(intent) = intent {
            map.insert("intent".to_owned(), json!(intent.as_str()));
        }
        map.insert("cwd".to_owned(), json!(cwd.display().to_string()));
    }
}

fn git_name(state: &GitState) -> &'static str {
    match state {
        GitState::Clean => "clean",
        GitState::Dirty(_) => "dirty_confirmed",
        GitState::NoRepository(_) => "no_repository_confirmed",
        GitState::Unknown(_) => "git_unknown_confirmed",
    }
}

fn session_error(error: SessionError) -> MethodError {
    match error {
        SessionError::Refused(m) => refused(m),
        SessionError::NotFound(m) => (ErrorCode::NotFound, m),
        SessionError::Store(e) => (ErrorCode::Internal, e.to_string()),
    }
}

/// One file write of a patch: its path, new text (`None`: delete), old text (`None`: new).
struct Step {
    path: PathBuf,
    new: Option<String>,
    old: Option<String>,
}

/// The dry run, then (unless `dry_run`) the all-or-nothing write.
fn apply_patch(
    roots: &Roots,
    planned: Vec<(patch::FilePatch, PathBuf, Option<PathBuf>)>,
    dry_run: bool,
    confirm_dirty: bool,
) -> Result<Value, MethodError> {
    let tool = "herdr_fs_patch";
    let mut steps: Vec<Step> = Vec::new();
    let mut report = Vec::new();
    for (file, path, move_to) in planned {
        let shown = path.display().to_string();
        let exists = path.symlink_metadata().is_ok();
        edit::check_git(tool, &shown, &edit::git_state(&path, roots), confirm_dirty).map_err(write_error)?;
        match file.change {
            FileChange::Add(content) => {
                if exists {
                    return Err(refused(format!(
                        "{tool}: {} adds {shown}, which exists; nothing was written (patch it as an update, or delete it first)",
                        file.path
                    )));
                }
                report.push(json!({"path": shown, "action": "add", "added": content.lines().count(), "removed": 0}));
                steps.push(Step { path, new: Some(content), old: None });
            }
            FileChange::Delete(hunks) => {
                let old = edit::read_text(tool, &path, &shown, roots).map_err(write_error)?;
                if let Some(hunks) = hunks {
                    let rest =
                        patch::apply_hunks(&old, &hunks).map_err(|e| refused(format!("{tool}: {shown}: {e}; nothing was written")))?;
                    if !rest.is_empty() {
                        return Err(refused(format!(
                            "{tool}: the deletion of {shown} does not match its whole current text; nothing was written"
                        )));
                    }
                }
                report.push(json!({"path": shown, "action": "delete", "added": 0, "removed": old.lines().count()}));
                steps.push(Step { path, new: None, old: Some(old) });
            }
            FileChange::Update { hunks, .. } => {
                let old = edit::read_text(tool, &path, &shown, roots).map_err(write_error)?;
                let new = patch::apply_hunks(&old, &hunks).map_err(|e| refused(format!("{tool}: {shown}: {e}; nothing was written")))?;
                let (added, removed) = patch::counts(&hunks);
                match move_to {
                    Some(to) => {
                        if to.symlink_metadata().is_ok() {
                            return Err(refused(format!("{tool}: {shown} moves to {}, which exists; nothing was written", to.display())));
                        }
                        edit::check_git(tool, &to.display().to_string(), &edit::git_state(&to, roots), confirm_dirty)
                            .map_err(write_error)?;
                        report.push(
                            json!({"path": shown, "action": "move", "to": to.display().to_string(), "added": added, "removed": removed}),
                        );
                        steps.push(Step { path: to, new: Some(new), old: None });
                        steps.push(Step { path, new: None, old: Some(old) });
                    }
                    None => {
                        report.push(json!({"path": shown, "action": "update", "added": added, "removed": removed}));
                        steps.push(Step { path, new: Some(new), old: Some(old) });
                    }
                }
            }
        }
    }
    let summary = format!("{} file(s) {}", report.len(), if dry_run { "would change (dry run; nothing written)" } else { "changed" });
    if dry_run {
        return Ok(json!({"dry_run": true, "applies": true, "files": report, "summary": summary}));
    }
    // Write: each step atomically; on a failure, undo the steps already done.
    let mut done: Vec<&Step> = Vec::new();
    for step in &steps {
        let result = match &step.new {
            Some(text) => {
                step.path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| edit::write_atomic(&step.path, text.as_bytes()))
            }
            None => std::fs::remove_file(&step.path),
        };
        if let Err(error) = result {
            let mut undone = true;
            for back in done.iter().rev() {
                let restored = match &back.old {
                    Some(old) => edit::write_atomic(&back.path, old.as_bytes()),
                    None => std::fs::remove_file(&back.path),
                };
                undone &= restored.is_ok();
            }
            return Err((
                ErrorCode::Internal,
                format!(
                    "{tool}: {} could not be written ({error}); {}",
                    step.path.display(),
                    if undone {
                        "the files already written were put back, so nothing changed"
                    } else {
                        "some files already written could not be put back: check git status"
                    }
                ),
            ));
        }
        done.push(step);
    }
    Ok(json!({"dry_run": false, "applied": true, "files": report, "summary": summary}))
}

/// `tools.audit {limit?, before?}`: the newest audit rows.
pub async fn audit_page(api: &Router, params: &Map<String, Value>) -> Result<Value, MethodError> {
    let Some(service) = api.write_tools.clone() else {
        return Err((
            ErrorCode::NotReady,
            "the tool audit log in state.db could not be opened; see runtime.log and restart the runtime".to_owned(),
        ));
    };
    let typed: continuity_protocol::ToolsAuditParams = serde_json::from_value(Value::Object(params.clone()))
        .map_err(|e| bad(format!("tools.audit: {e}; send {{\"limit\": 1..200, \"before\": seq}}")))?;
    let entries = service.audit.page(typed.limit.unwrap_or(50), typed.before).await.map_err(|e| (ErrorCode::Internal, e.to_string()))?;
    Ok(json!({"type": "tools_audit", "entries": entries}))
}
