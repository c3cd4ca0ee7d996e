//! The workstation read tools of the planner registry (docs/PROTOCOL.md "Workstation
//! tools"): `herdr_fs_read`, `herdr_fs_list`, `herdr_fs_grep`, `herdr_git`, `herdr_since`.
//! Their specs, argument checks and the project roots of a call; the work itself is
//! `crate::tools`'s, run on the blocking pool (file IO) or as a child process (`git`).
//!
//! Invariants:
//! - The roots of a call are built at the call ([`roots_for`]): the registered roots
//!   (`state.db`'s `roots`, read each time, so `herdr-companion roots add` applies to the
//!   next call) and the working directories of the caller's panes — a bridge chat's own
//!   workspace's, an MCP client's every pane in the catalog. No roots: the call is refused
//!   and says how to add one.
//! - Every result is bounded by the tool's caps (the `max_*` arguments, themselves capped),
//!   so the `tools.call` answer stays under the runtime's line limit.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::tools::{Arguments, Caller};
use super::Router;
use crate::db::off_worker;
use crate::protocol::{ErrorCode, MethodError};
use crate::tools::fs::{self, ListRequest, ReadRequest, ToolError};
use crate::tools::git::{self, GitAction, GitRequest};
use crate::tools::grep::{self, GrepRequest};
use crate::tools::roots::{RootError, RootStore, Roots, MAX_PATH_BYTES};
use crate::tools::since;
use continuity_protocol::limits::MAX_REF_CHARS;
use continuity_protocol::{ToolName, ToolSpec};

/// The arguments each workstation tool takes (`None` for the other tools).
pub const fn arguments_of(tool: ToolName) -> Option<&'static [&'static str]> {
    match tool {
        ToolName::HerdrFsRead => Some(&["path", "start_line", "end_line", "max_bytes"]),
        ToolName::HerdrFsList => Some(&["path", "recursive", "glob", "max_entries"]),
        ToolName::HerdrFsGrep => Some(&["root", "pattern", "regex", "glob", "case_insensitive", "max_matches", "max_bytes"]),
        ToolName::HerdrGit => Some(&["root", "action", "path", "staged", "from", "to", "max_count", "max_bytes"]),
        ToolName::HerdrSince => Some(&["cursor", "log_id", "workspace_id", "limit"]),
        ToolName::HerdrPrompt
        | ToolName::HerdrCall
        | ToolName::HerdrMethods
        | ToolName::HerdrInspect
        | ToolName::HerdrFsEdit
        | ToolName::HerdrFsWrite
        | ToolName::HerdrFsPatch
        | ToolName::HerdrExec
        | ToolName::HerdrExecStart
        | ToolName::HerdrExecRead
        | ToolName::HerdrExecKill => None,
    }
}

/// Longest glob, in characters.
const MAX_GLOB_CHARS: usize = 256;

/// The workstation tools' specs, in `tools.list` order.
pub fn specs() -> Vec<ToolSpec> {
    let path = |what: &str| json!({"type": "string", "minLength": 1, "maxLength": MAX_PATH_BYTES, "description": what});
    let count = |what: String, max: u64| json!({"type": "integer", "minimum": 1, "maximum": max, "description": what});
    let flag = |what: &str| json!({"type": "boolean", "description": what});
    let glob = json!({"type": "string", "minLength": 1, "maxLength": MAX_GLOB_CHARS, "description": "Only paths (relative to the directory searched) that match this glob, e.g. **/*.rs or src/*.ts."});
    const ROOTS: &str = "Paths are confined to the project roots (registered with `herdr-companion roots add`, and the working directories of the workspace's Herdr panes): absolute, or relative to the one root; `..` and symlinks leading outside are refused with the roots named.";
    vec![
        ToolSpec {
            name: ToolName::HerdrFsRead,
            title: "Read a file".to_owned(),
            description: format!("Read lines of a text file in a project root: start_line/end_line (1-based, inclusive) and at most max_bytes of text (default {}, at most {}); the answer says where to continue. A binary file gives its size, no text. Read-only. {ROOTS}", fs::READ_DEFAULT_BYTES, fs::READ_MAX_BYTES),
            input_schema: json!({
                "type": "object", "additionalProperties": false, "required": ["path"],
                "properties": {
                    "path": path("The file, e.g. src/main.rs or an absolute path inside a root."),
                    "start_line": count("First line to read (1-based; default 1).".to_owned(), u64::from(u32::MAX)),
                    "end_line": count("Last line to read (inclusive; default: as far as max_bytes reaches).".to_owned(), u64::from(u32::MAX)),
                    "max_bytes": count(format!("Most bytes of text (default {}).", fs::READ_DEFAULT_BYTES), fs::READ_MAX_BYTES),
                },
            }),
            read_only: true,
        },
        ToolSpec {
            name: ToolName::HerdrFsList,
            title: "List a directory".to_owned(),
            description: format!("List a directory in a project root: its entries (path, type, size), or the whole tree with recursive, filtered by glob; .gitignore'd files and .git are left out, symlinks are listed, not followed. At most max_entries (default {}, at most {}). Read-only. {ROOTS}", fs::LIST_DEFAULT_ENTRIES, fs::LIST_MAX_ENTRIES),
            input_schema: json!({
                "type": "object", "additionalProperties": false, "required": ["path"],
                "properties": {
                    "path": path("The directory, e.g. . or src."),
                    "recursive": flag("Walk the whole tree (default false: the directory's own entries)."),
                    "glob": glob.clone(),
                    "max_entries": count(format!("Most entries (default {}).", fs::LIST_DEFAULT_ENTRIES), fs::LIST_MAX_ENTRIES),
                },
            }),
            read_only: true,
        },
        ToolSpec {
            name: ToolName::HerdrFsGrep,
            title: "Search files".to_owned(),
            description: format!("Search the files under a directory (or one file) in a project root for a literal text or, with regex, a regular expression (Rust syntax); .gitignore'd and binary files are skipped. Answers path, line and text of each matching line: at most max_matches (default {}, at most {}) and max_bytes of line text (default {}, at most {}). Read-only. {ROOTS}", grep::GREP_DEFAULT_MATCHES, grep::GREP_MAX_MATCHES, grep::GREP_DEFAULT_BYTES, grep::GREP_MAX_BYTES),
            input_schema: json!({
                "type": "object", "additionalProperties": false, "required": ["root", "pattern"],
                "properties": {
                    "root": path("The directory (searched recursively) or file, e.g. . or src."),
                    "pattern": {"type": "string", "minLength": 1, "maxLength": grep::MAX_PATTERN_BYTES, "description": "The text to find (a regular expression with regex: true)."},
                    "regex": flag("pattern is a regular expression (default false: literal text)."),
                    "glob": glob,
                    "case_insensitive": flag("Ignore case (default false)."),
                    "max_matches": count(format!("Most matching lines (default {}).", grep::GREP_DEFAULT_MATCHES), grep::GREP_MAX_MATCHES),
                    "max_bytes": count(format!("Most bytes of matched line text (default {}).", grep::GREP_DEFAULT_BYTES), grep::GREP_MAX_BYTES),
                },
            }),
            read_only: true,
        },
        ToolSpec {
            name: ToolName::HerdrGit,
            title: "Git status, diff, log, show".to_owned(),
            description: format!("Read a Git repository in a project root. action status: branch and changed files. diff: the work tree against the index; staged: the index against HEAD; from alone: the work tree against that revision; from and to: two revisions; from as a range A..B (A...B: from their merge base): those two revisions, never the work tree; path narrows it. log: the latest max_count commits (default {}, at most {}) from from (default HEAD). show: one revision (from, default HEAD). Output at most max_bytes (default {}, at most {}). Read-only. {ROOTS}", git::LOG_DEFAULT_COUNT, git::LOG_MAX_COUNT, git::GIT_DEFAULT_BYTES, git::GIT_MAX_BYTES),
            input_schema: json!({
                "type": "object", "additionalProperties": false, "required": ["root", "action"],
                "properties": {
                    "root": path("The repository's directory (or a directory in it)."),
                    "action": {"type": "string", "enum": ["status", "diff", "log", "show"], "description": "What to read."},
                    "path": path("Only this file or directory (relative to root, or absolute inside it)."),
                    "staged": flag("diff: the index against HEAD (what a commit would record)."),
                    "from": {"type": "string", "minLength": 1, "maxLength": git::MAX_REV_CHARS, "description": "A revision (commit id, branch, tag, HEAD~2): diff's older side, log's start, show's commit. diff also takes a range A..B or A...B here (then no to, no staged)."},
                    "to": {"type": "string", "minLength": 1, "maxLength": git::MAX_REV_CHARS, "description": "diff: the newer revision (with from)."},
                    "max_count": count(format!("log: most commits (default {}).", git::LOG_DEFAULT_COUNT), git::LOG_MAX_COUNT),
                    "max_bytes": count(format!("Most bytes of output (default {}).", git::GIT_DEFAULT_BYTES), git::GIT_MAX_BYTES),
                },
            }),
            read_only: true,
        },
        ToolSpec {
            name: ToolName::HerdrSince,
            title: "Herdr events since a cursor".to_owned(),
            description: format!("The Herdr events the companion recorded (agent_working, agent_settled, pane and workspace changes) after cursor, oldest first, at most limit (default {}, at most {}); without cursor, the newest. Send the answer's cursor (and log_id) next time to get only what is new. Read-only.", since::SINCE_DEFAULT_LIMIT, since::SINCE_MAX_LIMIT),
            input_schema: json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "cursor": {"type": "integer", "minimum": 0, "description": "The cursor of the previous answer (events after it)."},
                    "log_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The log_id of the previous answer: when the log was reset since, the page starts over."},
                    "workspace_id": {"type": "string", "minLength": 1, "maxLength": MAX_REF_CHARS, "description": "Only this workspace's events, e.g. w1."},
                    "limit": count(format!("Most events (default {}).", since::SINCE_DEFAULT_LIMIT), since::SINCE_MAX_LIMIT),
                },
            }),
            read_only: true,
        },
    ]
}

fn bad(message: String) -> MethodError {
    (ErrorCode::BadRequest, message)
}

/// A tool failure as a method error: a roots refusal is `refused`, a bad argument
/// `bad_request`, an IO failure `error`; each names the tool.
fn failed(tool: ToolName, error: ToolError) -> MethodError {
    let code = match &error {
        ToolError::Root(RootError::Io { .. }) => ErrorCode::NotFound,
        ToolError::Root(RootError::Invalid(_) | RootError::Ambiguous { .. }) | ToolError::Bad(_) => ErrorCode::BadRequest,
        ToolError::Root(_) => ErrorCode::Refused,
        ToolError::Io(_) => ErrorCode::Error,
    };
    (code, format!("{tool}: {error}"))
}

/// The registered roots store: the one the write tools opened, else opened on first use
/// (one handle per runtime, `Router`'s).
pub(super) async fn store(api: &Router) -> Result<Arc<RootStore>, MethodError> {
    if let Some(store) = api.roots.get() {
        return Ok(Arc::clone(store));
    }
    let path = api.home.join("state.db");
    let opened = off_worker(move || RootStore::open(&path)).await.map_err(|e| {
        (ErrorCode::NotReady, format!("the project roots in state.db could not be read ({e}); see runtime.log (herdr-companion doctor)"))
    })?;
    Ok(Arc::clone(api.roots.get_or_init(|| Arc::new(opened))))
}

/// The project roots of a call by `caller` (see the module invariants).
pub async fn roots_for(api: &Router, caller: &Caller) -> Result<Roots, MethodError> {
    let store = store(api).await?;
    let registered = off_worker(move || store.list())
        .await
        .map_err(|e| (ErrorCode::Error, format!("the project roots in state.db could not be read ({e})")))?;
    let panes: Vec<PathBuf> = match api.events.as_ref() {
        Some(hub) => hub
            .catalog()
            .panes
            .values()
            .filter(|pane| match caller {
                Caller::Mcp(_) => true,
                Caller::Bridge { workspace_id, .. } => pane.workspace_id == *workspace_id,
            })
            .filter(|pane| !pane.cwd.is_empty())
            .map(|pane| PathBuf::from(&pane.cwd))
            .collect(),
        None => Vec::new(),
    };
    // Canonicalising touches the file system: off the async workers.
    let home = api.home.clone();
    off_worker(move || {
        Ok::<_, crate::db::DbError>(Roots::for_call(registered, panes, &home, std::env::var_os("HOME").map(PathBuf::from).as_deref()))
    })
    .await
    .map_err(|e| (ErrorCode::Error, e.to_string()))
}

/// An optional integer in `1..=max` (absent: `default`).
fn count(args: &Arguments<'_>, key: &str, default: u64, max: u64) -> Result<u64, MethodError> {
    match args.map.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(bad(format!("{}: {key} must be an integer from 1 to {max} (default {default})", args.tool))),
        },
    }
}

/// An optional boolean (absent: false).
fn flag(args: &Arguments<'_>, key: &str) -> Result<bool, MethodError> {
    match args.map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("{}: {key} must be true or false", args.tool))),
    }
}

/// Runs blocking tool work on the blocking pool.
async fn blocking<T: Send + 'static>(
    tool: ToolName,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, MethodError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| failed(tool, e)),
        Err(lost) => Err((ErrorCode::Error, format!("{tool} stopped before it finished ({lost}); retry"))),
    }
}

/// Runs the workstation tool `tool` (the caller checked it is one).
pub(super) async fn run(api: &Router, caller: &Caller, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let tool = args.tool;
    let path_hint = "send a path inside a project root";
    match tool {
        ToolName::HerdrFsRead => {
            let request = ReadRequest {
                path: args.required("path", MAX_PATH_BYTES, path_hint)?,
                start_line: count(args, "start_line", 1, u64::from(u32::MAX))?,
                end_line: match args.map.get("end_line") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(count(args, "end_line", 1, u64::from(u32::MAX))?),
                },
                max_bytes: count(args, "max_bytes", fs::READ_DEFAULT_BYTES, fs::READ_MAX_BYTES)?,
            };
            if request.end_line.is_some_and(|end| end < request.start_line) {
                return Err(bad(format!("{tool}: end_line must not be before start_line")));
            }
            let roots = roots_for(api, caller).await?;
            blocking(tool, move || fs::read(&roots, &request)).await
        }
        ToolName::HerdrFsList => {
            let request = ListRequest {
                path: args.required("path", MAX_PATH_BYTES, path_hint)?,
                recursive: flag(args, "recursive")?,
                glob: args.text("glob", MAX_GLOB_CHARS, "send a glob such as **/*.rs, or leave it out")?,
                max_entries: count(args, "max_entries", fs::LIST_DEFAULT_ENTRIES, fs::LIST_MAX_ENTRIES)?,
            };
            let roots = roots_for(api, caller).await?;
            blocking(tool, move || fs::list(&roots, &request)).await
        }
        ToolName::HerdrFsGrep => {
            let request = GrepRequest {
                root: args.required("root", MAX_PATH_BYTES, "send the directory or file to search, e.g. .")?,
                pattern: match args.map.get("pattern") {
                    Some(Value::String(p)) if !p.is_empty() && p.len() <= grep::MAX_PATTERN_BYTES => p.clone(),
                    _ => return Err(bad(format!("{tool} needs pattern, a string of 1 to {} bytes", grep::MAX_PATTERN_BYTES))),
                },
                regex: flag(args, "regex")?,
                glob: args.text("glob", MAX_GLOB_CHARS, "send a glob such as **/*.rs, or leave it out")?,
                case_insensitive: flag(args, "case_insensitive")?,
                max_matches: count(args, "max_matches", grep::GREP_DEFAULT_MATCHES, grep::GREP_MAX_MATCHES)?,
                max_bytes: count(args, "max_bytes", grep::GREP_DEFAULT_BYTES, grep::GREP_MAX_BYTES)?,
            };
            let roots = roots_for(api, caller).await?;
            blocking(tool, move || grep::grep(&roots, &request)).await
        }
        ToolName::HerdrGit => {
            let action = args.required("action", 16, "send status, diff, log or show")?;
            let Some(action) = GitAction::parse(&action) else {
                return Err(bad(format!("{tool}: action `{action}` is not one of status, diff, log, show")));
            };
            let rev_hint = "send a revision such as HEAD~1, or leave it out";
            let request = GitRequest {
                root: args.required("root", MAX_PATH_BYTES, "send the repository's directory, e.g. .")?,
                action,
                path: args.text("path", MAX_PATH_BYTES, "send a file or directory in the repository, or leave it out")?,
                staged: flag(args, "staged")?,
                from: args.text("from", git::MAX_REV_CHARS, rev_hint)?,
                to: args.text("to", git::MAX_REV_CHARS, rev_hint)?,
                max_count: count(args, "max_count", git::LOG_DEFAULT_COUNT, git::LOG_MAX_COUNT)?,
                max_bytes: count(args, "max_bytes", git::GIT_DEFAULT_BYTES, git::GIT_MAX_BYTES)?,
            };
            let roots = roots_for(api, caller).await?;
            git::git(&roots, &request).await.map_err(|e| failed(tool, e))
        }
        ToolName::HerdrSince => {
            let cursor = match args.map.get("cursor") {
                None | Some(Value::Null) => None,
                Some(value) => Some(value.as_i64().filter(|c| *c >= 0).ok_or_else(|| {
                    bad(format!("{tool}: cursor must be a non-negative integer (the cursor of the previous answer), or left out"))
                })?),
            };
            let log_id = args.text("log_id", 64, "send the log_id of the previous answer, or leave it out")?;
            let mut workspace = args.text("workspace_id", MAX_REF_CHARS, "send a workspace id such as w1, or leave it out")?;
            if let Caller::Bridge { workspace_id, .. } = caller {
                // A bridge chat reads its own workspace's events only.
                match &workspace {
                    Some(ws) if ws != workspace_id => {
                        return Err((
                            ErrorCode::Refused,
                            format!(
                            "{tool}: workspace {ws} is not this chat's; it is bound to workspace {workspace_id} and reads only its events"
                        ),
                        ))
                    }
                    _ => workspace = Some(workspace_id.clone()),
                }
            }
            let limit = count(args, "limit", since::SINCE_DEFAULT_LIMIT, since::SINCE_MAX_LIMIT)?;
            let Some(hub) = api.events.as_ref() else {
                return Err((ErrorCode::NotReady, format!("{tool}: the event log in state.db could not be opened; see runtime.log (herdr-companion doctor) and restart the runtime")));
            };
            let limit_i64 = i64::try_from(limit).unwrap_or(i64::MAX);
            let (events, start, reset) =
                hub.events_page(cursor, log_id, limit_i64).await.map_err(|e| (ErrorCode::Error, format!("{tool}: {e}")))?;
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            Ok(since::page(&events, hub.boot_id(), hub.log_id(), start, reset, limit, workspace.as_deref()))
        }
        ToolName::HerdrPrompt
        | ToolName::HerdrCall
        | ToolName::HerdrMethods
        | ToolName::HerdrInspect
        | ToolName::HerdrFsEdit
        | ToolName::HerdrFsWrite
        | ToolName::HerdrFsPatch
        | ToolName::HerdrExec
        | ToolName::HerdrExecStart
        | ToolName::HerdrExecRead
        | ToolName::HerdrExecKill => Err((ErrorCode::Error, format!("{tool} is not a workstation tool"))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{Router, Services};
    use crate::herdr::HerdrStatus;
    use continuity_protocol::HerdrState;

    /// The read tools' roots store is the write tools' (failed before: the read tools
    /// opened a second one).
    #[tokio::test]
    async fn the_read_and_the_write_tools_share_one_roots_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_tx, herdr_status) = tokio::sync::watch::channel(HerdrStatus {
            state: HerdrState::NotRunning,
            protocol: None,
            version: None,
            socket: String::new(),
            detail: None,
        });
        let log = Arc::new(crate::log::RuntimeLog::open(&dir.path().join("runtime.log")));
        let write_tools = Arc::new(crate::tools::write::WriteTools::open(&dir.path().join("state.db"), "boot").expect("write tools"));
        let router = Router::new(Services {
            herdr_status,
            boot_id: "boot".into(),
            log,
            events: None,
            inbox: None,
            home: dir.path().to_path_buf(),
            judge: None,
            journal: None,
            retention: None,
            work_memory: None,
            bridge: None,
            attribution: Arc::new(crate::api::attribution::Attribution::without_pairs()),
            write_tools: Some(write_tools.clone()),
        });
        let store = super::store(&router).await.expect("store");
        assert!(Arc::ptr_eq(&store, &write_tools.roots), "one roots store");
    }
}
