//! The workstation tools of issue 27 (docs/PROTOCOL.md "Planner tools"): what a planner
//! reads, searches and diffs on the user's machine, confined to the project roots.
//!
//! - [`roots`]: the project roots and the confinement of every path to them;
//! - [`fs`]: `herdr_fs_read` (a file's lines) and `herdr_fs_list` (a directory's entries);
//! - [`grep`]: `herdr_fs_grep` (ripgrep's crates);
//! - [`git`]: `herdr_git` (status, diff, log, show through the `git` binary);
//! - [`since`]: `herdr_since` (a page of the runtime's stored Herdr events).
//!
//! The tools here are synchronous, bounded functions of their checked arguments and the
//! call's [`roots::Roots`]; `crate::api::tools` checks the arguments, builds the roots
//! (registered roots and the caller's pane working directories), runs them off the async
//! workers and returns their result. They know nothing of Herdr, the router or MCP.

pub mod fs;
pub mod git;
pub mod grep;
pub mod roots;
pub mod since;
