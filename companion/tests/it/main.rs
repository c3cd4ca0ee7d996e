//! Integration tests of the real `herdr-companion` binary (SPEC N1, N2).
//!
//! Each test uses its own temporary companion home (`HERDR_CONTINUITY_HOME`) and a Herdr
//! socket path that does not exist unless the test is about Herdr.

mod bridge;
mod cli;
mod db;
mod diagnostics;
mod goal;
mod grep_cache;
mod guidance;
mod herdr_client;
mod host;
mod hostile;
mod inbox;
mod install;
mod journal;
mod judge;
mod layering;
mod mcp;
mod mcp_tunnel;
mod profiles;
mod provider_standin;
mod retention;
mod runtime;
mod stream;
mod support;
mod tools_write;
mod workstation;
