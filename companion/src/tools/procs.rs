//! What an exec session's processes are, so a runtime that starts after a crash (a
//! SIGKILL, an OOM kill: no `Drop` ran) stops what the earlier start left running, and
//! never a process that merely reuses one of their ids.
//!
//! Invariants:
//! - Every exec command (`herdr_exec`, `herdr_exec_start`) starts in its own process group;
//!   on Linux its first process also gets `PR_SET_PDEATHSIG` = SIGKILL (set in the child
//!   before `exec`, then the parent checked again, so a runtime that died during the spawn
//!   is not missed): when the runtime dies, the group's leader dies with it. The signal
//!   follows the spawning *thread*: commands are spawned from async code on the runtime's
//!   worker threads, which live as long as the runtime (no `spawn_blocking` or
//!   `block_in_place` spawn, whose thread could end first and take the command with it).
//! - The leader's children do not inherit that signal, so each session records its
//!   process group id and its leader's start identity ([`start_identity`]: the boot id and
//!   the start time in clock ticks since boot, `/proc/<pid>/stat` field 22), and each of
//!   its processes carries `HERDR_EXEC_SESSION=<session id>` in its environment.
//! - [`kill_recorded_group`] kills (SIGKILL) a recorded group only when a live member
//!   proves it is that session's: the leader with the recorded identity, or a member
//!   carrying the session's variable. A process group id is not reused while any member
//!   lives, so one proven member proves the whole group. Without proof (the group is gone,
//!   the id belongs to someone else, another user's process, another boot), nothing is
//!   killed.
//! - The limit: after a crash the leader has already died of its death signal, so the
//!   identity proves a group only when the runtime restarts without having died (the
//!   runtime's own restart with the leader alive). After a crash the environment variable
//!   is the only proof, and survivors that cleared their environment (`env -i`, some test
//!   runners) are not killed: they run on until they end or someone stops them.
//! - Outside Linux there is no `/proc`: no identity is recorded and nothing is killed at the
//!   next start (the rows still read `interrupted`).

/// The environment variable that marks a session's processes.
pub const SESSION_ENV: &str = "HERDR_EXEC_SESSION";

#[cfg(target_os = "linux")]
mod linux {
    /// `(state, pgrp, starttime)` of `/proc/<pid>/stat` (the fields after the command,
    /// whose name may hold spaces and parentheses).
    pub(super) fn stat(pid: u32) -> Option<(char, u32, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = text.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let state = fields.first()?.chars().next()?;
        Some((state, fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
    }

    pub(super) fn boot_id() -> Option<String> {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
    }

    /// Whether `pid`'s environment holds `marker` (`NAME=value`).
    pub(super) fn carries(pid: u32, marker: &[u8]) -> bool {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|b| *b == 0).any(|entry| entry == marker))
    }

    /// The live (not zombie) processes of group `pgid`.
    pub(super) fn members(pgid: u32) -> Vec<(u32, u64)> {
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        dir.flatten()
            .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()))
            .filter_map(|pid| {
                stat(pid).filter(|(state, group, _)| *group == pgid && !matches!(state, 'Z' | 'X')).map(|(_, _, start)| (pid, start))
            })
            .collect()
    }
}

/// The start identity of process `pid` (`<boot id>:<start ticks>`), or `None` (gone, or
/// not Linux).
pub fn start_identity(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let (_, _, start) = linux::stat(pid)?;
        Some(format!("{}:{start}", linux::boot_id()?))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Kills the process group `pgid` recorded for `session` when a live member proves it is
/// still that session's (module invariants); whether it did.
pub fn kill_recorded_group(pgid: u32, identity: Option<&str>, session: &str) -> bool {
    #[cfg(target_os = "linux")]
    {
        if pgid <= 1 {
            return false;
        }
        let marker = format!("{SESSION_ENV}={session}");
        let leader = identity.and_then(|identity| {
            let (boot, start) = identity.rsplit_once(':')?;
            (Some(boot) == linux::boot_id().as_deref()).then(|| start.parse::<u64>().ok()).flatten()
        });
        let proven = linux::members(pgid)
            .into_iter()
            .any(|(pid, start)| (pid == pgid && Some(start) == leader) || linux::carries(pid, marker.as_bytes()));
        if proven {
            super::exec::kill_group(pgid, libc::SIGKILL);
        }
        proven
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pgid, identity, session);
        false
    }
}

/// Sets what the child does before `exec` (module invariants): on Linux, die with the
/// runtime.
pub fn die_with_the_runtime(command: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (prctl, getppid) without allocating.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    // The runtime died before the signal was set: do not start.
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = command;
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The leader with the recorded identity proves the group even when no member carries
    /// the session's variable (a leader that cleared its environment).
    #[test]
    fn the_leaders_recorded_identity_alone_proves_the_group() {
        let mut child = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::process_group(&mut child, 0);
        let mut child = child.arg("30").env_clear().spawn().expect("spawn sleep");
        let pid = child.id();
        let identity = start_identity(pid).expect("identity");
        // A start time off by one tick is not the leader: not killed.
        let (boot, start) = identity.rsplit_once(':').expect("boot:start");
        let later = format!("{boot}:{}", start.parse::<u64>().expect("ticks") + 1);
        assert!(!kill_recorded_group(pid, Some(&later), "xs-c"));
        assert!(child.try_wait().expect("wait").is_none(), "a process without proof was killed");
        assert!(kill_recorded_group(pid, Some(&identity), "xs-c"));
        assert!(!child.wait().expect("wait").success());
    }

    #[test]
    fn a_group_is_killed_only_with_proof_that_it_is_the_sessions() {
        let mut child = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::process_group(&mut child, 0);
        let mut child = child.arg("30").env(SESSION_ENV, "xs-a").spawn().expect("spawn sleep");
        let pid = child.id();
        let identity = start_identity(pid).expect("identity");
        // Another boot's identity, another session's variable: not proven, not killed.
        let other_start = format!("{}:{}", "0-other-boot", identity.rsplit_once(':').map(|(_, s)| s).unwrap_or(""));
        assert!(!kill_recorded_group(pid, Some(&other_start), "xs-b"));
        assert!(child.try_wait().expect("wait").is_none(), "a process without proof was killed");
        // The session's variable proves it.
        assert!(kill_recorded_group(pid, None, "xs-a"));
        let status = child.wait().expect("wait");
        assert!(!status.success());
        assert_eq!(start_identity(pid), None, "reaped");
    }
}
