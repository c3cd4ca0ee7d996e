//! The state of the write and exec tools in `state.db`, opened once per runtime start:
//! the audit log ([`super::audit`]), the idempotency keys of `herdr_exec`
//! ([`super::exec::ExecRuns`]) and the exec sessions ([`super::sessions`]).

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
    /// Opens the tables in `state.db` at `path` for the runtime start `boot_id`.
    pub fn open(path: &Path, boot_id: &str) -> Result<Self, DbError> {
        Ok(Self {
            audit: AuditLog::open(path)?,
            runs: ExecRuns::open(path, boot_id)?,
            sessions: Arc::new(ExecSessions::open(path, boot_id)?),
            roots: Arc::new(RootStore::open(path)?),
        })
    }
}
