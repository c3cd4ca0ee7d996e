//! Where a running `herdr-companion mcp --http` serves, for `herdr-companion doctor`:
//! `run/mcp-http.json` in the companion home, `{"address": "127.0.0.1:8787", "pid": N}`
//! plus `"public_url": "https://…"` with `--public-url` (0600), written at start when the port is fixed (a port-0 server's real port is printed
//! on stderr only) and removed when the server stops normally. A record left by a server
//! that died names a pid that no longer runs; the doctor says so instead of failing.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::paths::CompanionHome;

/// The record's file name in the run directory.
pub const RECORD_FILE: &str = "mcp-http.json";

/// What a record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The loopback address `--http` listens on.
    pub address: SocketAddr,
    /// The server's process id.
    pub pid: u32,
    /// `--public-url` as the server uses it (`https://host[:port][/prefix]`): its `Host`
    /// checks follow it, so a probe must send that host.
    pub public_url: Option<String>,
}

/// The record of a server that runs; removes its file when dropped.
#[derive(Debug)]
pub struct Record {
    path: PathBuf,
}

impl Record {
    /// Writes the record for this process serving `address` (behind `public_url`, when
    /// given); `None` (nothing written) for
    /// port 0 or when the file cannot be written — the record is a convenience for the
    /// doctor, never a reason not to serve.
    pub fn write(home: &CompanionHome, address: SocketAddr, public_url: Option<&str>) -> Option<Self> {
        if address.port() == 0 || home.ensure_private_dirs().is_err() {
            return None;
        }
        let path = home.run_dir().join(RECORD_FILE);
        let _ = std::fs::remove_file(&path);
        let mut body = json!({"address": address.to_string(), "pid": std::process::id()});
        if let Some(url) = public_url {
            body["public_url"] = json!(url);
        }
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).ok()?;
        file.write_all(format!("{body}\n").as_bytes()).ok()?;
        Some(Self { path })
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        // Only our own record: a newer server on the same home may have replaced it.
        if read_at(&self.path).is_some_and(|served| served.pid == std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The record in `home`, when there is a readable one.
pub fn read(home: &CompanionHome) -> Option<Served> {
    read_at(&home.run_dir().join(RECORD_FILE))
}

fn read_at(path: &std::path::Path) -> Option<Served> {
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let address = value.get("address")?.as_str()?.parse().ok()?;
    let pid = u32::try_from(value.get("pid")?.as_u64()?).ok()?;
    let public_url = value.get("public_url").and_then(Value::as_str).map(str::to_owned);
    Some(Served { address, pid, public_url })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_written_for_a_fixed_port_and_removed_when_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        assert!(Record::write(&home, "127.0.0.1:0".parse().expect("address"), None).is_none(), "port 0: nothing to record");
        let record = Record::write(&home, "127.0.0.1:8787".parse().expect("address"), None).expect("written");
        let address = "127.0.0.1:8787".parse().expect("address");
        assert_eq!(read(&home), Some(Served { address, pid: std::process::id(), public_url: None }));
        drop(record);
        assert_eq!(read(&home), None);
        let public = Record::write(&home, address, Some("https://herdr.example.com/h")).expect("written");
        assert_eq!(read(&home).and_then(|s| s.public_url).as_deref(), Some("https://herdr.example.com/h"));
        drop(public);
    }
}
