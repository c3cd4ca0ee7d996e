//! Integration tests of the real `herdr-companion` binary (SPEC N1, N2).
//!
//! Each test uses its own temporary companion home (`HERDR_CONTINUITY_HOME`) and a Herdr
//! socket path that does not exist unless the test is about Herdr.

mod bridge;
mod cli;
mod db;
mod diagnostics;
mod herdr_client;
mod hostile;
mod host;
mod guidance;
mod goal;
mod inbox;
mod install;
mod journal;
mod judge;
mod layering;
mod provider_standin;
mod retention;
mod mcp;
mod mcp_tunnel;
mod profiles;
mod runtime;
mod stream;
mod support;
mod tools_write;
mod workstation;
