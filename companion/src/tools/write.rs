//! The state of the write and exec tools in `state.db`, opened once per runtime start on
//! one connection: the audit log ([`super::audit`]), the idempotency keys of `herdr_exec`
//! ([`super::exec::ExecRuns`]), the exec sessions ([`super::sessions`]) and the
//! registered project roots ([`super::roots::RootStore`]).

use std::path::Path;
use std::sync::Arc;

use super::audit::AuditLog;
use super::exec::ExecRuns;
use super::roots::RootStore;
use super::sessions::ExecSessions;
use crate::db::DbError;

/// The write tools' service.
#[derive(Debug)]
pub struct WriteTools {
    /// Every write and exec call, recorded.
    pub audit: AuditLog,
    /// `herdr_exec` idempotency keys and results.
    pub runs: ExecRuns,
    /// Long-running exec sessions.
    pub sessions: Arc<ExecSessions>,
    /// The registered project roots.
    pub roots: Arc<RootStore>,
}

impl WriteTools {
    /// Opens `state.db` at `path` — one connection for the four stores — for the runtime
    /// start `boot_id`. Blocking (call it on the blocking pool, see `crate::db`).
    pub fn open(path: &Path, boot_id: &str) -> Result<Self, DbError> {
        let conn = crate::db::open_shared(path)?;
        Ok(Self {
            audit: AuditLog::on(conn.clone()),
            runs: ExecRuns::on(conn.clone(), boot_id),
            sessions: Arc::new(ExecSessions::on(conn.clone(), boot_id)?),
            roots: Arc::new(RootStore::on(conn)),
        })
    }
}
