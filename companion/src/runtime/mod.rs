//! The runtime daemon (`herdr-companion runtime`, SPEC N2/N3).
//!
//! Startup order matters:
//! 1. umask 077, home and `run/` forced to 0700;
//! 2. the single-instance flock on `run/runtime.lock` is taken **before** the socket is
//!    touched, so a second runtime never unlinks a live socket;
//! 3. only the lock holder removes a stale socket file and binds a new one (mode 0600).
//!
//! Stopping (SIGTERM/SIGINT, see [`shutdown`]): the main future removes the socket and
//! releases the lock without waiting for any task; the tokio runtime then gets
//! one second (`TASK_SHUTDOWN_TIMEOUT`) to drop its tasks. Nothing on that path depends on a worker
//! thread being free, and a watchdog forces the exit if it ever stalls.
//!
//! Every accepted connection is checked with `SO_PEERCRED` before a byte is read: only
//! the runtime's own uid may talk to it ([`peer_allowed`]). Each client gets its own
//! outbox; runtime-wide events (`herdr_state`) are broadcast to every outbox.

pub mod dispatch;
pub mod log;
pub mod shutdown;

pub use dispatch::{ClientHandle, Dispatcher, RuntimeContext};
pub use log::RuntimeLog;
pub use shutdown::Shutdown;

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc};

use crate::herdr::{self, SocketSources};
use crate::paths::CompanionHome;
use crate::protocol::{self, MAX_LINE};

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
    /// A filesystem step failed.
    #[error(
        "cannot {action} {path}: {source}; check that the companion home is writable by this user"
    )]
    Fs {
        /// What was attempted.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// True when a peer with `peer_uid` may use a runtime running as `own_uid`.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid
}

/// The uid this process runs as.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn fs_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RuntimeError {
    let path = path.to_path_buf();
    move |source| RuntimeError::Fs {
        action,
        path,
        source,
    }
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
            return Err(RuntimeError::AlreadyRunning {
                home: home.root().to_path_buf(),
                lock: lock_path,
            });
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
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o600))
        .map_err(fs_error("set mode 0600 on", &socket))?;
    Ok(listener)
}

/// How long the tokio runtime may take to drop its tasks after a stop; tasks stuck in
/// blocking code are abandoned (the process exits right after).
const TASK_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(1);
/// Pause after a failed `accept` (e.g. out of file descriptors) before the next one.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// `herdr-companion runtime`: installs the stop-signal handling, runs the daemon on its
/// own tokio runtime until SIGTERM or SIGINT, and returns once the socket is removed and
/// the lock released. Call it from the main thread before any other thread exists.
pub fn run_until_stopped(options: RuntimeOptions) -> Result<(), RuntimeError> {
    let shutdown = shutdown::install().map_err(RuntimeError::Signals)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(RuntimeError::AsyncRuntime)?;
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
    home.ensure_private_dirs()
        .map_err(fs_error("create private directories in", home.root()))?;
    let lock = acquire_lock(&home)?;
    let log = Arc::new(RuntimeLog::open(&home.log_path()));
    // Any `tracing` event in this process goes to runtime.log too.
    log.install_as_global_default();
    shutdown.set_log(log.clone());
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

/// Starts the Herdr monitor, the event stream and the inbox, then accepts clients forever.
async fn serve(
    listener: UnixListener,
    home: CompanionHome,
    herdr_session: Option<String>,
    log: Arc<RuntimeLog>,
) {
    let herdr_socket = herdr::discover_socket(&SocketSources::from_env(herdr_session));
    let herdr_status = herdr::spawn_monitor(
        herdr_socket.clone(),
        HERDR_POLL_INTERVAL,
        HERDR_PROBE_TIMEOUT,
    )
    .await;
    let (events, _) = broadcast::channel::<String>(1024);
    let ctx = Arc::new(RuntimeContext::new(home, herdr_status, events, log.clone()));
    spawn_herdr_state_publisher(ctx.clone());
    crate::stream::start(&ctx, herdr_socket).await;
    crate::inbox::start(&ctx).await;
    let dispatcher = Arc::new(Dispatcher::new(ctx.clone()));

    let own = own_uid();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_client(stream, own, dispatcher.clone()));
            }
            Err(e) => {
                log.line(format_args!("accept failed: {e}"));
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
            }
        }
    }
}

/// Turns every Herdr status change into a `herdr_state` event for all clients.
fn spawn_herdr_state_publisher(ctx: Arc<RuntimeContext>) {
    let mut status = ctx.herdr_status.clone();
    tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let current = status.borrow_and_update().clone();
            ctx.log
                .line(format_args!("herdr state: {:?}", current.state));
            ctx.broadcast(&protocol::event(
                protocol::EventName::HerdrState,
                serde_json::json!({ "herdr": current }),
            ));
        }
    });
}

/// One line read from a client, bounded by [`MAX_LINE`].
enum ClientLine {
    /// A complete line without its newline.
    Line(Vec<u8>),
    /// A line longer than the cap; it was discarded up to its newline.
    TooLong,
}

/// Reads one line of at most `cap` bytes without ever buffering more than `cap`.
async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
) -> std::io::Result<Option<ClientLine>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            // EOF: a final unterminated line is still a line.
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Some(ClientLine::TooLong),
                (false, true) => None,
                (false, false) => Some(ClientLine::Line(line)),
            });
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, Some(at)),
            None => (chunk.len(), None),
        };
        let content = &chunk[..done.unwrap_or(used)];
        if !too_long {
            if line.len() + content.len() > cap {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(content);
            }
        }
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(if too_long {
                ClientLine::TooLong
            } else {
                ClientLine::Line(line)
            }));
        }
    }
}

/// Serves one client connection until it closes.
async fn serve_client(stream: UnixStream, own: u32, dispatcher: Arc<Dispatcher>) {
    let log = dispatcher.context().log.clone();
    let peer_uid = match stream.peer_cred() {
        Ok(cred) => cred.uid(),
        Err(e) => {
            log.line(format_args!(
                "refused a client: cannot read its credentials: {e}"
            ));
            return;
        }
    };
    if !peer_allowed(peer_uid, own) {
        log.line(format_args!(
            "refused a client with uid {peer_uid}: only uid {own} may use this runtime"
        ));
        return;
    }
    let (read_half, mut write_half) = stream.into_split();
    let (outbox, mut outbox_rx) = mpsc::channel::<String>(256);
    let client = ClientHandle::new(outbox.clone());

    let writer = tokio::spawn(async move {
        while let Some(mut line) = outbox_rx.recv().await {
            line.push('\n');
            if write_half.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let mut events = dispatcher.context().subscribe();
    let event_outbox = outbox.clone();
    let forwarder = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(line) => {
                    if event_outbox.send(line).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });

    let mut reader = BufReader::new(read_half);
    loop {
        let line = match read_capped_line(&mut reader, MAX_LINE).await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => break,
        };
        match line {
            ClientLine::TooLong => {
                let reply = protocol::error_response(
                    None,
                    protocol::ErrorCode::BadRequest,
                    "request line exceeds 1 MiB and was discarded; send smaller requests",
                );
                let _ = outbox.send(protocol::to_line(&reply)).await;
            }
            ClientLine::Line(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {}
            ClientLine::Line(bytes) => {
                let dispatcher = dispatcher.clone();
                let client = client.clone();
                tokio::spawn(async move {
                    let reply = dispatcher.handle_line(&bytes, &client).await;
                    client.send(&reply).await;
                });
            }
        }
    }
    forwarder.abort();
    drop(outbox);
    drop(client);
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runtime_uid_is_allowed() {
        assert!(peer_allowed(1000, 1000));
        assert!(!peer_allowed(0, 1000));
        assert!(!peer_allowed(65534, 0));
    }

    #[tokio::test]
    async fn capped_lines_are_split_and_oversize_lines_discarded() {
        let input: &[u8] = b"short\nwaytoolongline\n\nlast";
        let mut reader = BufReader::with_capacity(3, input);
        let mut seen = Vec::new();
        while let Some(line) = read_capped_line(&mut reader, 8).await.expect("read") {
            seen.push(match line {
                ClientLine::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                ClientLine::TooLong => "<too long>".to_owned(),
            });
        }
        assert_eq!(seen, ["short", "<too long>", "", "last"]);
    }
}
