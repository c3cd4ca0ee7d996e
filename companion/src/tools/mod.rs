//! The workstation tools of issue 27 (docs/PROTOCOL.md "Planner tools"): what a planner
//! reads, searches and diffs on the user's machine, confined to the project roots.
//!
//! - [`roots`]: the project roots and the confinement of every path to them;
//!
//! The tools here are synchronous, bounded functions of their checked arguments and the
//! call's [`roots::Roots`]; `crate::api::tools` checks the arguments, builds the roots
//! (registered roots and the caller's pane working directories), runs them off the async
//! workers and returns their result. They know nothing of Herdr, the router or MCP.

pub mod roots;
