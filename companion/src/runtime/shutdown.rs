//! SIGTERM/SIGINT handling for the runtime that never depends on the async runtime making
//! progress (SPEC N2: a stopped runtime removes its socket and releases its lock).
//!
//! [`install`] must run on the main thread before any other thread exists: it blocks
//! SIGTERM and SIGINT (every later thread, tokio's workers included, inherits the mask),
//! resets an inherited "ignore" disposition (an ignored signal is discarded and could never
//! be waited for), and starts one plain OS thread that waits for them with `sigwait`.
//!
//! On the first signal that thread wakes [`Shutdown::requested`] — an async wait that the
//! runtime's main future selects on; waking it needs no tokio worker and no IO driver, so
//! tasks stuck in blocking code cannot delay it — and arms a watchdog. If the process is
//! still alive [`FORCE_AFTER`] later, or a second signal arrives, the watchdog removes
//! the socket the runtime bound (recorded with [`Shutdown::set_socket`]), logs why, and
//! ends the process with [`FORCED_EXIT_CODE`]; the kernel releases the lock then.
//!
//! Invariants:
//! - A signal that arrives at any moment after [`install`] is never lost: before the
//!   socket exists it stays pending in the [`tokio::sync::Notify`] permit.
//! - Only a socket this process bound while holding the lock is ever removed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use super::RuntimeLog;

/// How long a graceful stop may take before the watchdog forces the exit.
pub const FORCE_AFTER: Duration = Duration::from_secs(3);
/// Exit status of a forced stop (sysexits `EX_SOFTWARE`: a task did not stop in time).
pub const FORCED_EXIT_CODE: i32 = 70;

/// Shared between the runtime and the signal thread.
#[derive(Debug, Default)]
struct Inner {
    /// Woken once by the first signal (a stored permit if nobody waits yet).
    requested: Notify,
    /// The socket this runtime bound, once it did.
    socket: Mutex<Option<PathBuf>>,
    /// The runtime log, once it is open.
    log: OnceLock<Arc<RuntimeLog>>,
}

impl Inner {
    fn log(&self, message: std::fmt::Arguments<'_>) {
        match self.log.get() {
            Some(log) => log.try_line(message),
            None => eprintln!("herdr-companion: {message}"),
        }
    }

    /// Removes the socket (if bound), logs, and ends the process without running any
    /// other code that could block.
    fn force_exit(&self, why: &str) -> ! {
        let socket = match self.socket.try_lock() {
            Ok(guard) => guard.clone(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(socket) = &socket {
            let _ = std::fs::remove_file(socket);
        }
        self.log(format_args!(
            "runtime forced to exit ({why}); socket removed. A task did not stop in time: please report this with runtime.log"
        ));
        // SAFETY: _exit ends the process at once; no Rust state is touched afterwards.
        unsafe { libc::_exit(FORCED_EXIT_CODE) }
    }
}

/// The runtime's handle on stop requests.
#[derive(Debug, Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

impl Shutdown {
    /// Completes once SIGTERM or SIGINT was received (at once if one already was).
    pub async fn requested(&self) {
        self.inner.requested.notified().await;
    }

    /// Records the socket this runtime bound, for the watchdog to remove.
    pub fn set_socket(&self, socket: PathBuf) {
        *self.inner.socket.lock().unwrap_or_else(|p| p.into_inner()) = Some(socket);
    }

    /// Forgets the socket once the graceful path removed it.
    pub fn clear_socket(&self) {
        *self.inner.socket.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Lets the signal thread write to the runtime log.
    pub fn set_log(&self, log: Arc<RuntimeLog>) {
        let _ = self.inner.log.set(log);
    }
}

/// Blocks SIGTERM/SIGINT and starts the signal thread. Call it on the main thread before
/// any other thread is started (before building the tokio runtime).
pub fn install() -> std::io::Result<Shutdown> {
    let set = stop_signals()?;
    // SAFETY: plain libc calls on a sigset we own; SIG_DFL is a valid disposition.
    unsafe {
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        // While blocked the default action cannot run; it only undoes an inherited SIG_IGN.
        for signal in [libc::SIGTERM, libc::SIGINT] {
            if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    let inner = Arc::new(Inner::default());
    let waiter = Arc::clone(&inner);
    std::thread::Builder::new().name("signal-waiter".to_owned()).spawn(move || wait_for_signals(&waiter, set))?;
    Ok(Shutdown { inner })
}

fn stop_signals() -> std::io::Result<libc::sigset_t> {
    // SAFETY: sigemptyset initialises the zeroed set; sigaddset only writes into it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        if libc::sigemptyset(&mut set) != 0 || libc::sigaddset(&mut set, libc::SIGTERM) != 0 || libc::sigaddset(&mut set, libc::SIGINT) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(set)
    }
}

fn next_signal(set: &libc::sigset_t) -> i32 {
    loop {
        let mut signal = 0;
        // SAFETY: `set` is initialised and `signal` is a valid out pointer.
        if unsafe { libc::sigwait(set, &mut signal) } == 0 {
            return signal;
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    if signal == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    }
}

fn wait_for_signals(inner: &Arc<Inner>, set: libc::sigset_t) {
    let first = next_signal(&set);
    inner.log(format_args!("runtime received {}; stopping", signal_name(first)));
    inner.requested.notify_one();
    let watchdog = Arc::clone(inner);
    let armed = std::thread::Builder::new().name("stop-watchdog".to_owned()).spawn(move || {
        std::thread::sleep(FORCE_AFTER);
        watchdog.force_exit(&format!("still running {} s after the stop signal", FORCE_AFTER.as_secs()));
    });
    if armed.is_err() {
        // Without a watchdog thread, wait here instead (a second signal is then ignored).
        std::thread::sleep(FORCE_AFTER);
        inner.force_exit("the stop did not finish in time");
    }
    let second = next_signal(&set);
    inner.force_exit(&format!("a second {} arrived during the stop", signal_name(second)));
}
