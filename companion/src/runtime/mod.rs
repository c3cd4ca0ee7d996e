//! The runtime daemon (`herdr-companion runtime`, SPEC N2/N3).
//!
//! Startup order matters:
//! 1. umask 077, home and `run/` forced to 0700;
//! 2. the single-instance flock on `run/runtime.lock` is taken **before** the socket is
//!    touched, so a second runtime never unlinks a live socket;
//! 3. `state.db` is opened once at the current schema; a file from a newer runtime stops
//!    the start (logged with [`crate::log::REFUSED_TO_START`], non-zero exit) before the socket exists;
//! 4. only the lock holder removes a stale socket file and binds a new one (mode 0600).
//!
//! Stopping (SIGTERM/SIGINT, see [`shutdown`]): the main future removes the socket and
//! releases the lock without waiting for any task; the tokio runtime then gets
//! one second (`TASK_SHUTDOWN_TIMEOUT`) to drop its tasks. Nothing on that path depends on a worker
//! thread being free, and a watchdog forces the exit if it ever stalls.
//!
//! Serving (the top of the layering; see `crate::lib`): the Herdr monitor and the
//! services (`crate::stream`, `crate::inbox`, `crate::journal`, `crate::judge`) are built first, then the one router
//! (`crate::api::Router`) that owns them, then the accept loop ([`connections`]).
//! Nothing is set on a service or the router after it is built.
//!
//! Every accepted connection is checked with `SO_PEERCRED` before a byte is read: only
//! the runtime's own uid may talk to it ([`peer_allowed`]). At most
//! [`Limits::max_connections`] are served at once, and every request is bounded
//! ([`connections::Limits`]). Each client gets its own outbox; runtime-wide events
//! (`herdr_state`, `inbox_changed`) are broadcast to every outbox.

pub mod connections;
pub mod shutdown;

pub use crate::log::RuntimeLog;
pub use connections::{own_uid, peer_allowed, Limits};
pub use shutdown::Shutdown;

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::net::UnixListener;
use tokio::sync::watch;

use crate::api::{Router, Services};
use crate::herdr::{self, HerdrStatus, SocketSources};
use crate::outbox::Broadcast;
use crate::paths::CompanionHome;
use crate::protocol::{self, EventName};

/// How often the Herdr connection is re-checked.
const HERDR_POLL_INTERVAL: Duration = Duration::from_secs(2);
/// Timeout for one Herdr probe.
const HERDR_PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// Options of `herdr-companion runtime`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// `--home DIR`.
    pub home: Option<PathBuf>,
    /// `--herdr-session NAME`.
    pub herdr_session: Option<String>,
}

/// Why the runtime could not start.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// Another runtime holds the lock.
    #[error("another herdr-companion runtime is already running for {home} (it holds {lock}); use that one, or stop it first (kill the pid in runtime.log)")]
    AlreadyRunning {
        /// The home in use.
        home: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// The home could not be found.
    #[error(transparent)]
    NoHome(#[from] crate::paths::NoHome),
    /// SIGTERM/SIGINT handling could not be installed.
    #[error("cannot install the SIGTERM/SIGINT handling ({0}); the runtime would not stop cleanly, so it did not start; retry, and report this if it persists")]
    Signals(std::io::Error),
    /// The tokio runtime could not be built.
    #[error("cannot start the async runtime ({0}); check the process limits (ulimit -u, ulimit -n) and retry")]
    AsyncRuntime(std::io::Error),
    /// `state.db` was written by a newer runtime (or cannot be brought to this one's
    /// schema): serving without it would only answer "not ready" to every client.
    #[error(transparent)]
    StateDb(crate::schema::SchemaError),
    /// A filesystem step failed.
    #[error("cannot {action} {path}: {source}; check that the companion home is writable by this user")]
    Fs {
        /// What was attempted.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn fs_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RuntimeError {
    let path = path.to_path_buf();
    move |source| RuntimeError::Fs { action, path, source }
}

/// Takes the single-instance lock; the returned file must stay open for the process life.
pub fn acquire_lock(home: &CompanionHome) -> Result<File, RuntimeError> {
    let lock_path = home.lock_path();
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(fs_error("open the lock file", &lock_path))?;
    // SAFETY: the fd is valid for the lifetime of `file`; flock does not touch memory.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(RuntimeError::AlreadyRunning { home: home.root().to_path_buf(), lock: lock_path });
        }
        return Err(fs_error("lock", &lock_path)(err));
    }
    Ok(file)
}

/// Binds the socket; only call while holding the lock. A leftover file is stale by then.
fn bind_socket(home: &CompanionHome) -> Result<UnixListener, RuntimeError> {
    let socket = home.socket_path();
    if fs::symlink_metadata(&socket).is_ok() {
        fs::remove_file(&socket).map_err(fs_error("remove the stale socket", &socket))?;
    }
    let listener = UnixListener::bind(&socket).map_err(fs_error("bind the socket", &socket))?;
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o600)).map_err(fs_error("set mode 0600 on", &socket))?;
    Ok(listener)
}

/// How long the tokio runtime may take to drop its tasks after a stop; tasks stuck in
/// blocking code are abandoned (the process exits right after).
const TASK_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);

/// `herdr-companion runtime`: installs the stop-signal handling, runs the daemon on its
/// own tokio runtime until SIGTERM or SIGINT, and returns once the socket is removed and
/// the lock released. Call it from the main thread before any other thread exists.
pub fn run_until_stopped(options: RuntimeOptions) -> Result<(), RuntimeError> {
    let shutdown = shutdown::install().map_err(RuntimeError::Signals)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(RuntimeError::AsyncRuntime)?;
    let result = rt.block_on(run(options, &shutdown));
    // Never wait unboundedly for tasks (a plain drop would wait for any worker that is
    // inside blocking code, and the process would outlive its stop signal).
    rt.shutdown_timeout(TASK_SHUTDOWN_TIMEOUT);
    result
}

/// Runs the daemon until `shutdown` is requested; then removes the socket and releases
/// the lock. A stop requested before the socket exists ends it right after binding.
pub async fn run(options: RuntimeOptions, shutdown: &Shutdown) -> Result<(), RuntimeError> {
    // SAFETY: umask only changes this process's file-creation mask.
    unsafe { libc::umask(0o077) };
    let home = CompanionHome::resolve(options.home)?;
    home.ensure_private_dirs().map_err(fs_error("create private directories in", home.root()))?;
    let lock = acquire_lock(&home)?;
    let log = Arc::new(RuntimeLog::open(&home.log_path()));
    // Any `tracing` event in this process goes to runtime.log too.
    log.install_as_global_default();
    shutdown.set_log(log.clone());
    if let Err(error) = check_state_db(home.root().join("state.db")).await {
        log.line(format_args!("{} {error}", crate::log::REFUSED_TO_START));
        return Err(error);
    }
    let listener = bind_socket(&home)?;
    shutdown.set_socket(home.socket_path());
    log.line(format_args!(
        "runtime {} started, pid {}, socket {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        home.socket_path().display()
    ));
    tokio::select! {
        biased;
        () = shutdown.requested() => {}
        () = serve(listener, home.clone(), options.herdr_session, log.clone()) => {}
    }
    let _ = fs::remove_file(home.socket_path());
    shutdown.clear_socket();
    drop(lock);
    log.line(format_args!("runtime stopped by signal; socket removed, lock released"));
    Ok(())
}

/// Opens `state.db` once before the socket is bound (bringing it to the current schema):
/// a file from a newer runtime stops the start here, so the host and the extension are
/// told why instead of every service answering "not ready". Other failures are left to the
/// services, which log them and run without their store.
async fn check_state_db(path: PathBuf) -> Result<(), RuntimeError> {
    match tokio::task::spawn_blocking(move || crate::schema::open_state_db(&path)).await {
        Ok(Err(error @ crate::schema::SchemaError::Newer { .. })) => Err(RuntimeError::StateDb(error)),
        _ => Ok(()),
    }
}

/// Starts the Herdr monitor and the services, builds the router over them, then accepts
/// clients forever.
async fn serve(listener: UnixListener, home: CompanionHome, herdr_session: Option<String>, log: Arc<RuntimeLog>) {
    let herdr_socket = herdr::discover_socket(&SocketSources::from_env(herdr_session));
    let herdr_status = herdr::spawn_monitor(herdr_socket.clone(), HERDR_POLL_INTERVAL, HERDR_PROBE_TIMEOUT).await;
    let events = Broadcast::new(1024);
    spawn_herdr_state_publisher(herdr_status.clone(), events.clone(), log.clone());
    let boot_id = new_boot_id();
    let db_path = home.root().join("state.db");
    let stream = crate::stream::start(db_path.clone(), boot_id.clone(), herdr_socket, log.clone()).await;
    let judge = match crate::judge::JudgeService::new(home.root().to_path_buf(), Some(log.clone())) {
        Ok(judge) => Some(Arc::new(judge)),
        Err(error) => {
            log.line(format_args!("{error}"));
            None
        }
    };
    // Parent guidance (I5) asks the judge's routes; with none configured it gives none.
    let advisor = judge
        .clone()
        .map(|judge| Arc::new(crate::judge::advice::RouteAdvisor::new(judge)) as Arc<dyn crate::inbox::advisor::AttentionAdvisor>);
    let inbox = crate::inbox::start(db_path.clone(), herdr_status.clone(), events.clone(), log.clone(), advisor).await;
    let work_memory = match blocking_open(&db_path, crate::work_memory::WorkMemory::open).await {
        Ok(work_memory) => Some(Arc::new(work_memory)),
        Err(error) => {
            log.line(format_args!("work memory: {error}"));
            None
        }
    };
    let journal = crate::journal::start(db_path.clone(), log.clone()).await;
    let retention = match blocking_open(&db_path, crate::retention::Retention::open).await {
        Ok(retention) => {
            let retention = Arc::new(retention);
            spawn_reclaimer(retention.clone(), log.clone());
            Some(retention)
        }
        Err(error) => {
            log.line(format_args!("retention: {error}"));
            None
        }
    };
    let bridge = match blocking_open(&db_path, crate::bridge::BridgeService::open).await {
        Ok(bridge) => Some(Arc::new(bridge)),
        Err(error) => {
            log.line(format_args!("bridge: {error}"));
            None
        }
    };
    let (attribution, pairs_error) =
        match blocking_open(&db_path, |path| Ok::<_, crate::db::DbError>(crate::api::attribution::Attribution::open(path))).await {
            Ok(opened) => opened,
            Err(lost) => (crate::api::attribution::Attribution::without_pairs(), Some(lost)),
        };
    if let Some(error) = pairs_error {
        log.line(format_args!("attribution: ChatGPT session pairings are not available: {error}"));
    }
    let attribution = Arc::new(attribution);
    let write_tools = match blocking_open(&db_path, {
        let boot_id = boot_id.clone();
        move |path| crate::tools::write::WriteTools::open(path, &boot_id)
    })
    .await
    {
        Ok(tools) => Some(Arc::new(tools)),
        Err(error) => {
            log.line(format_args!("write tools: {error}"));
            None
        }
    };
    let router = Arc::new(Router::new(Services {
        herdr_status,
        boot_id,
        log: log.clone(),
        events: stream,
        inbox,
        home: home.root().to_path_buf(),
        judge,
        journal,
        retention,
        work_memory,
        bridge,
        attribution,
        write_tools,
    }));
    connections::accept_loop(listener, router, events, Limits::default(), log).await;
}

/// Opens a service on `state.db` at `db_path` on the blocking pool: opening runs the schema's
/// migrations (`crate::schema`) and may wait on another connection's lock, which no async
/// worker may (`crate::db`).
async fn blocking_open<T, E>(db_path: &Path, open: impl FnOnce(&Path) -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: From<crate::db::DbCallLost> + Send + 'static,
{
    let path = db_path.to_path_buf();
    crate::db::off_worker(move || open(&path)).await
}

/// Reclaims under the retention limits now and every [`crate::retention::RECLAIM_EVERY`],
/// on the blocking pool; what was removed (or withheld for want of a checkpoint) is logged.
fn spawn_reclaimer(retention: Arc<crate::retention::Retention>, log: Arc<RuntimeLog>) {
    tokio::spawn(async move {
        loop {
            let worker = retention.clone();
            match tokio::task::spawn_blocking(move || worker.reclaim(crate::clock::unix_millis() as i64)).await {
                Ok(Ok(reclaimed)) if reclaimed != crate::retention::Reclaimed::default() => {
                    log.line(format_args!("retention: reclaimed {reclaimed:?}"))
                }
                Ok(Ok(_)) => {}
                Ok(Err(error)) => log.line(format_args!("retention: reclaiming failed: {error}")),
                Err(error) => log.line(format_args!("retention: reclaiming failed: {error}")),
            }
            tokio::time::sleep(crate::retention::RECLAIM_EVERY).await;
        }
    });
}

/// Turns every Herdr status change into a `herdr_state` event for all clients.
fn spawn_herdr_state_publisher(mut status: watch::Receiver<HerdrStatus>, events: Broadcast, log: Arc<RuntimeLog>) {
    tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let current = status.borrow_and_update().clone();
            log.line(format_args!("herdr state: {:?}", current.state));
            events.send(&protocol::event(EventName::HerdrState, serde_json::json!({ "herdr": current })));
        }
    });
}

/// A boot id unique per runtime start: start time in nanoseconds and the pid, in hex.
fn new_boot_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{nanos:x}-{:x}", std::process::id())
}
