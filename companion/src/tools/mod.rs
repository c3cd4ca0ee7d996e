//! The workstation tools of issue 27 (docs/PROTOCOL.md "Planner tools"): what a planner
//! reads, searches, diffs, writes and runs on the user's machine, confined to the project
//! roots.
//!
//! - [`roots`]: the project roots and the confinement of every path to them;
//! - [`fs`]: `herdr_fs_read` (a file's lines) and `herdr_fs_list` (a directory's entries);
//! - [`grep`]: `herdr_fs_grep` (ripgrep's crates), over [`grep_cache`]'s walk and small
//!   files' contents, checked by stat on every call;
//! - [`git`]: `herdr_git` (status, diff, log, show through the `git` binary);
//! - [`since`]: `herdr_since` (a page of the runtime's stored Herdr events).
//! - [`edit`]: `herdr_fs_edit`, `herdr_fs_write`, and what every write shares (the Git
//!   check, the atomic write);
//! - [`patch`]: `herdr_fs_patch`'s two diff formats, parsed and applied in memory;
//! - [`exec`]: `herdr_exec` (timeout, capped output, idempotency keys);
//! - [`sessions`]: `herdr_exec_start` / `_read` / `_kill`;
//! - [`audit`]: the audit log of every write and exec call;
//! - [`write`]: the write tools' tables in `state.db`, opened once per runtime start.
//!
//! The tools here know nothing of Herdr, the router or MCP: `crate::api::tools` and
//! `crate::api::write_tools` check the arguments, build the call's roots (registered roots
//! and the caller's pane working directories), run them off the async workers and return
//! their result.

pub mod audit;
pub mod edit;
pub mod exec;
pub mod fs;
pub mod git;
pub mod grep;
pub mod grep_cache;
pub mod patch;
pub mod procs;
pub mod roots;
pub mod sessions;
pub mod since;
pub mod write;
