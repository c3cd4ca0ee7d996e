//! `herdr-companion`: the native side of herdr-continuity (SPEC N).
//!
//! One binary, five roles:
//! - [`host`]: the Chrome Native Messaging stdio host, a thin frame ↔ line relay;
//! - [`mcp`]: the planner tools as an MCP server (stdio or loopback HTTP), a client of the
//!   runtime's socket;
//! - [`runtime`]: the long-lived daemon that owns the Unix socket and the Herdr connection;
//! - [`install`]: writes the browser's host manifest;
//! - [`doctor`]: checks the whole chain and says how to fix it.
//!
//! [`fuzz`] (above the layering, like the roles) feeds the framing, the request decoder
//! and a real router seeded hostile input, for the tests and `npm run bench`.
//!
//! The runtime is layered; no module imports a layer above its own:
//! - leaves: [`protocol`], [`db`], [`herdr`] (client, monitor, catalog), [`log`],
//!   [`outbox`], [`clock`], [`paths`], [`config`] (`config.json`), [`providers`] (the
//!   judge's provider HTTP clients), [`gitcmd`] (the one hardened `git` command line);
//! - services: [`stream`] (event log, Herdr sync), [`inbox`] (parent inbox), [`journal`]
//!   (the Continuity Journal), [`judge`] (the turn-end judge), [`work_memory`] (W1–W5),
//!   [`tools`] (the workstation tools: project roots, files, search, Git);
//! - [`api`]: the one router from methods to services (it owns them), and the planner tool
//!   registry (`api::tools`) every planner front end uses;
//! - [`runtime`]: accept loop, peer check, connection and request limits, shutdown.
//!
//! Architecture invariants: the host holds no state and makes no product decisions; only
//! the runtime talks to Herdr; nothing but a same-uid peer ever reaches the router.

pub mod api;
pub mod bridge;
pub mod clock;
pub mod config;
pub mod db;
pub mod doctor;
pub mod framing;
pub mod fuzz;
pub mod gitcmd;
pub mod herdr;
pub mod host;
pub mod inbox;
pub mod install;
pub mod journal;
pub mod json_text;
pub mod judge;
pub mod log;
pub mod mcp;
pub mod outbox;
pub mod paths;
pub mod protocol;
pub mod providers;
pub mod retention;
pub mod runtime;
pub mod schema;
pub mod stream;
pub mod tools;
pub mod work_memory;
