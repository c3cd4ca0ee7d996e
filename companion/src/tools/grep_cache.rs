//! The tree cache behind `herdr_fs_grep`: per searched directory, the walk's result (its
//! directories and files, in path order), the stat of every file that decides the walk
//! (`.gitignore`, `.ignore`, `.git` and its `info/exclude`, in the directory and in its
//! ancestors), and the contents of small files — so that a repeated search stats instead
//! of walking, opening and reading.
//!
//! Invariants:
//! - Nothing is answered from stale data: every call stats every cached directory, guard
//!   file and file again (in parallel). A directory or guard that changed (device, inode,
//!   kind, size, mtime, ctime, link count) throws the snapshot away and walks again; a file
//!   that changed is read from the disk again (through [`super::grep`]'s confined open).
//! - A stat that is *racy* — its mtime or ctime within [`RACY_WINDOW`] of the moment the
//!   snapshot was taken — is never trusted (Git's racy-clean rule): a change in the same
//!   clock tick could leave every field equal. A racy directory or guard keeps the
//!   snapshot from being stored; a racy file's content is not kept.
//! - A guard file that is a symlink (`ignore` reads it through the link) is stamped twice:
//!   the link itself and its target, so an edit of the target is seen.
//! - Files of several names (hard links) are never read: the call that finds one opens
//!   it, keeps the open file's stat and skips it, so a later call skips it again by that
//!   stat (still counted as skipped) until its stat changes, and the tree stays cached.
//! - Contents are kept only for files of at most [`CACHE_FILE_MAX`] bytes, and at most
//!   the cache's budget ([`CACHE_BUDGET`] for the runtime's) in all — counting the
//!   contents the calls running now have read for it ([`TreeCache::keep`]: a call that
//!   finds no room searches the bytes and drops them) and each snapshot's listing (its
//!   paths and stats, estimated); the least recently used snapshots go first, and a
//!   snapshot larger than the budget keeps what fits (a listing alone larger than the
//!   budget is not stored). Bytes a running call still searches from a listing it got
//!   stay alive until that call ends, even if its snapshot was evicted meanwhile.
//! - A call refreshes only the snapshot it validated (its generation): a snapshot stored
//!   meanwhile by another call, from a newer walk, is never given an older file list.
//! - A served file is checked by `fstatat` in its directory opened by path: the
//!   directories above it are followed, not re-checked beneath the base as a read from the
//!   disk is. A directory swapped for a symlink between the directory check and that
//!   `fstatat` can therefore serve bytes read earlier from that very inode inside the root
//!   (nothing new is read) where a fresh search would count the file in `moved_skipped`.
//! - The racy rule compares the file system's stamps with this machine's clock: on a
//!   network file system whose server clock lags by more than [`RACY_WINDOW`], with coarse
//!   timestamps, a same-size edit in the same server tick as the read is not seen until
//!   the file changes again (Git has the same limit); search such trees with a fresh root
//!   or accept that window.
//! - A snapshot is keyed by the canonical directory and the call's refused places (the
//!   companion home), so a call never sees a walk filtered for another.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// The file type bits of a mode as u32: libc's constants are `mode_t`, u16 on macOS.
#[allow(clippy::unnecessary_cast)]
const S_IFMT: u32 = libc::S_IFMT as u32;
#[allow(clippy::unnecessary_cast)]
const S_IFREG: u32 = libc::S_IFREG as u32;
#[allow(clippy::unnecessary_cast)]
const S_IFLNK: u32 = libc::S_IFLNK as u32;

/// Largest file whose content is kept (and searched as one slice).
pub const CACHE_FILE_MAX: u64 = 256 * 1024;
/// The runtime cache's content budget.
pub const CACHE_BUDGET: usize = 64 * 1024 * 1024;
/// How recent a change must be for its stat not to be trusted.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);
/// Most snapshots kept (searched directories).
const MAX_SNAPSHOTS: usize = 16;

/// What a stat says of an entry; equal stamps mean an unchanged entry (unless racy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    nlink: u64,
    size: u64,
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            nlink: meta.nlink(),
            size: meta.size(),
            mtime: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }

    /// The stamp of `path` itself (a symlink's own), `None` when it does not exist.
    pub fn lstat(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::of(&m))
    }

    /// A guard file's stamps: its own, and when it is a symlink, its target's (`None`:
    /// absent or dangling), since `ignore` reads it through the link.
    fn guard(path: &Path) -> GuardStamp {
        let own = Self::lstat(path);
        let target = own.filter(|s| s.mode & S_IFMT == S_IFLNK).and_then(|_| std::fs::metadata(path).ok().map(|m| Self::of(&m)));
        (own, target)
    }

    /// Whether the entry changed less than `window` before `taken` (nanoseconds since the epoch).
    fn racy(&self, taken: i128, window: Duration) -> bool {
        self.mtime.max(self.ctime) + i128::try_from(window.as_nanos()).unwrap_or(i128::MAX) >= taken
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }

    /// A file of several names.
    pub fn is_hard_link(&self) -> bool {
        self.nlink > 1
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// Now, in nanoseconds since the epoch.
fn now_nanos() -> i128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// One walked file of a snapshot.
#[derive(Debug, Clone)]
pub struct CachedFile {
    /// The path relative to the snapshot's directory.
    pub relative: Arc<Path>,
    /// Its stat when read; `None`: not known to be current (read it from the disk).
    pub stamp: Option<Stamp>,
    /// Its content, when kept and current.
    pub content: Option<Arc<[u8]>>,
}

/// A guard file's own stat and, for a symlink, its target's (`None`: absent).
type GuardStamp = (Option<Stamp>, Option<Stamp>);

/// One directory's walk, as stored.
#[derive(Debug)]
struct Snapshot {
    /// Which store made it (a refresh keeps it): [`TreeCache::refresh`] replaces only the
    /// snapshot its call validated.
    generation: u64,
    /// Guard files (by absolute path) and their stats.
    guards: Vec<(PathBuf, GuardStamp)>,
    /// Every directory walked (the base first) and its stat.
    dirs: Vec<(PathBuf, Stamp)>,
    /// The files, in path order.
    files: Vec<CachedFile>,
    /// Bytes held: the contents and the listing's estimate ([`listing_bytes`]).
    bytes: usize,
    /// When last used (the cache's counter).
    used: AtomicU64,
}

/// The key of a snapshot: the canonical directory and the refused places of the call.
type Key = (PathBuf, Vec<PathBuf>);

/// The cache (see the module invariants). The runtime has one ([`TreeCache::shared`]).
#[derive(Debug)]
pub struct TreeCache {
    /// Most bytes of content kept.
    budget: usize,
    /// See [`RACY_WINDOW`].
    window: Duration,
    /// The snapshots and the use counter.
    state: Mutex<(HashMap<Key, Arc<Snapshot>>, u64)>,
    /// What counts against the budget (locked after `state` when both are).
    usage: Mutex<Usage>,
}

/// The bytes counted against a cache's budget.
#[derive(Debug, Default)]
struct Usage {
    /// Bytes the snapshots hold (their sum).
    held: usize,
    /// Bytes of content the calls running now have read and kept for the cache.
    running: usize,
    /// The most `held + running` has been.
    peak: usize,
}

/// What [`TreeCache::validate`] gives a search: the files in path order, each with the
/// content to search when it is cached and unchanged.
#[derive(Debug)]
pub struct Listing {
    /// The files (path relative to the directory, stamp, content when current).
    pub files: Vec<CachedFile>,
    /// The generation of the snapshot checked, for [`TreeCache::refresh`].
    pub generation: u64,
}

/// A walk done for a call, handed back to be stored.
#[derive(Debug)]
pub struct Walked {
    /// Every directory walked, the base first.
    pub dirs: Vec<PathBuf>,
    /// The files in path order with what the call read.
    pub files: Vec<CachedFile>,
    /// When the walk started (nanoseconds since the epoch).
    pub taken: i128,
    /// Bytes of `files`' contents the call holds through [`TreeCache::keep`].
    pub kept: usize,
}

impl TreeCache {
    /// An empty cache holding at most `budget` bytes of content, distrusting stats newer
    /// than `window`.
    pub fn new(budget: usize, window: Duration) -> Self {
        Self { budget, window, state: Mutex::new((HashMap::new(), 0)), usage: Mutex::new(Usage::default()) }
    }

    /// Room for a running call to keep `len` more bytes of content for the cache: taken
    /// (counted until [`Self::release`]) when the snapshots' bytes and every running
    /// call's stay within the budget; `false`: search the bytes and drop them.
    pub fn keep(&self, len: usize) -> bool {
        let mut usage = self.usage();
        if usage.held.saturating_add(usage.running).saturating_add(len) > self.budget {
            return false;
        }
        usage.running += len;
        usage.peak = usage.peak.max(usage.held + usage.running);
        true
    }

    /// Gives back what a call took with [`Self::keep`] and did not hand to
    /// [`Self::store`] or [`Self::refresh`] (which take it over).
    pub fn release(&self, len: usize) {
        let mut usage = self.usage();
        usage.running = usage.running.saturating_sub(len);
    }

    /// The most bytes the snapshots and the running calls have held at once.
    pub fn peak(&self) -> usize {
        self.usage().peak
    }

    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Snapshots held now.
    pub fn snapshots(&self) -> usize {
        self.lock().0.len()
    }

    /// Sets `held` from the snapshots (under the state lock and `usage`'s), the peak with
    /// it, and gives back `taken_over` bytes a call had kept (now in a snapshot or dropped).
    fn settle(usage: &mut Usage, snapshots: &HashMap<Key, Arc<Snapshot>>, taken_over: usize) {
        usage.held = snapshots.values().map(|s| s.bytes).sum();
        usage.running = usage.running.saturating_sub(taken_over);
        usage.peak = usage.peak.max(usage.held + usage.running);
    }

    /// The runtime's cache ([`CACHE_BUDGET`], [`RACY_WINDOW`]).
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<TreeCache> = OnceLock::new();
        SHARED.get_or_init(|| Self::new(CACHE_BUDGET, RACY_WINDOW))
    }

    /// Bytes of content held now.
    pub fn bytes(&self) -> usize {
        self.lock().0.values().map(|s| s.bytes).sum()
    }

    /// Files whose content is held now, over every snapshot.
    pub fn files_held(&self) -> usize {
        self.lock().0.values().map(|s| s.files.iter().filter(|f| f.content.is_some()).count()).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<Key, Arc<Snapshot>>, u64)> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The walk of `base` for `refused`, checked against the disk now; `None` when there is
    /// none or any directory or guard changed (the caller walks again and [`Self::store`]s).
    /// A file whose stat changed (or that was racy) comes without content: the caller reads it.
    pub fn validate(&self, base: &Path, refused: &[PathBuf], threads: usize) -> Option<Listing> {
        let key = (base.to_path_buf(), refused.to_vec());
        let snapshot = {
            let mut state = self.lock();
            state.1 += 1;
            let tick = state.1;
            let snapshot = state.0.get(&key)?.clone();
            snapshot.used.store(tick, Ordering::Relaxed);
            snapshot
        };
        let guards_ok = parallel_all(&snapshot.guards, threads, |(path, stamp)| Stamp::guard(path) == *stamp);
        let dirs_ok = guards_ok && parallel_all(&snapshot.dirs, threads, |(path, stamp)| Stamp::lstat(path) == Some(*stamp));
        if !dirs_ok {
            let mut state = self.lock();
            if state.0.get(&key).is_some_and(|s| Arc::ptr_eq(s, &snapshot)) {
                state.0.remove(&key);
                Self::settle(&mut self.usage(), &state.0, 0);
            }
            return None;
        }
        // One open per directory and a stat by name in it: no path walk per file. A stamp
        // that matches names the same unchanged inode, whichever path reached it.
        let chunk = snapshot.files.len().div_ceil(threads.max(1)).max(1);
        let parts: Vec<&[CachedFile]> = snapshot.files.chunks(chunk).collect();
        let checked = parallel_map(&parts, threads, |part| {
            let mut dir: Option<(&Path, Option<std::fs::File>)> = None;
            part.iter()
                .map(|cached| {
                    let parent = cached.relative.parent().unwrap_or(Path::new(""));
                    let mut file = cached.clone();
                    if dir.as_ref().is_none_or(|(p, _)| *p != parent) {
                        dir = Some((parent, open_dir(&base.join(parent))));
                    }
                    let now = dir.as_ref().and_then(|(_, fd)| fd.as_ref()).and_then(|fd| stat_at(fd, file.relative.file_name()?));
                    if file.stamp.is_none() || now != file.stamp {
                        file.stamp = None;
                        file.content = None;
                    }
                    file
                })
                .collect::<Vec<_>>()
        });
        Some(Listing { files: checked.into_iter().flatten().collect(), generation: snapshot.generation })
    }

    /// Keeps a walk done by a call: its guards are stat'ed now; racy directories or guards
    /// keep it from being stored, racy files' contents are dropped, and the budget applies.
    /// It takes over the `walked.kept` bytes the call holds.
    pub fn store(&self, base: &Path, refused: &[PathBuf], walked: Walked) {
        let kept = walked.kept;
        if !self.store_walk(base, refused, walked) {
            self.release(kept);
        }
    }

    /// [`Self::store`]; `false` when nothing was stored (racy).
    fn store_walk(&self, base: &Path, refused: &[PathBuf], walked: Walked) -> bool {
        let window = self.window;
        let racy = |stamp: &Stamp| stamp.racy(walked.taken, window);
        let mut guards = Vec::new();
        for dir in base.ancestors().skip(1).chain(walked.dirs.iter().map(PathBuf::as_path)) {
            guard_files(dir, &mut guards);
        }
        if guards.iter().any(|(_, (own, target))| own.as_ref().is_some_and(racy) || target.as_ref().is_some_and(racy)) {
            return false;
        }
        let mut dirs = Vec::with_capacity(walked.dirs.len());
        for dir in walked.dirs {
            match Stamp::lstat(&dir) {
                Some(stamp) if !racy(&stamp) => dirs.push((dir, stamp)),
                _ => return false,
            }
        }
        let key = (base.to_path_buf(), refused.to_vec());
        let listing = listing_bytes(&guards, &dirs, &walked.files);
        let mut state = self.lock();
        let mut usage = self.usage();
        state.0.remove(&key);
        // What the other running calls hold is theirs; this call's contents move here.
        let others_running = usage.running.saturating_sub(walked.kept);
        if listing.saturating_add(others_running) > self.budget {
            // The paths and stats alone would pass the budget beside what the other running
            // calls hold (evicting snapshots cannot make that room): not kept.
            Self::settle(&mut usage, &state.0, walked.kept);
            return true;
        }
        // Room: the least recently used snapshots go first.
        let wanted: usize = listing
            + walked
                .files
                .iter()
                .filter(|f| f.stamp.as_ref().is_some_and(|s| !racy(s)))
                .filter_map(|f| f.content.as_ref().map(|c| c.len()))
                .sum::<usize>();
        while state.0.len() >= MAX_SNAPSHOTS
            || (!state.0.is_empty() && state.0.values().map(|s| s.bytes).sum::<usize>() + others_running + wanted > self.budget)
        {
            let Some(oldest) = state.0.iter().min_by_key(|(_, s)| s.used.load(Ordering::Relaxed)).map(|(k, _)| k.clone()) else { break };
            state.0.remove(&oldest);
        }
        let mut room = self.budget.saturating_sub(state.0.values().map(|s| s.bytes).sum::<usize>() + others_running + listing);
        let mut bytes = listing;
        let files = walked
            .files
            .into_iter()
            .map(|mut file| {
                let keep = file.content.as_ref().is_some_and(|c| c.len() <= room) && file.stamp.as_ref().is_some_and(|s| !racy(s));
                if keep {
                    let len = file.content.as_ref().map_or(0, |c| c.len());
                    room -= len;
                    bytes += len;
                } else {
                    file.content = None;
                }
                file
            })
            .collect();
        state.1 += 1;
        let used = state.1;
        state.0.insert(key, Arc::new(Snapshot { generation: used, guards, dirs, files, bytes, used: AtomicU64::new(used) }));
        Self::settle(&mut usage, &state.0, walked.kept);
        true
    }

    /// Replaces the files of the snapshot of `generation` (the one the call validated) by
    /// the call's, with what it read again (contents of files that changed); a racy
    /// file's content is not kept. `kept`: the bytes the call holds through [`Self::keep`].
    /// A snapshot stored since (another call's newer walk) is left as it is.
    pub fn refresh(&self, base: &Path, refused: &[PathBuf], generation: u64, files: Vec<CachedFile>, taken: i128, kept: usize) {
        let key = (base.to_path_buf(), refused.to_vec());
        let mut state = self.lock();
        let mut usage = self.usage();
        let others: usize = state.0.iter().filter(|(k, _)| **k != key).map(|(_, s)| s.bytes).sum();
        let others_running = usage.running.saturating_sub(kept);
        let Some(entry) = state.0.get_mut(&key).filter(|e| e.generation == generation) else {
            usage.running = usage.running.saturating_sub(kept);
            return;
        };
        let listing = listing_bytes(&entry.guards, &entry.dirs, &files);
        if others.saturating_add(others_running).saturating_add(listing) > self.budget {
            // No room for even the listing beside the rest: the snapshot goes (the next
            // call walks again) rather than the budget being passed.
            state.0.remove(&key);
            Self::settle(&mut usage, &state.0, kept);
            return;
        }
        let mut room = self.budget.saturating_sub(others + others_running + listing);
        let mut bytes = listing;
        let files: Vec<CachedFile> = files
            .into_iter()
            .map(|mut file| {
                let keep = file.content.as_ref().is_some_and(|c| c.len() <= room)
                    && file.stamp.as_ref().is_some_and(|s| !s.racy(taken, self.window));
                if keep {
                    let len = file.content.as_ref().map_or(0, |c| c.len());
                    room -= len;
                    bytes += len;
                } else {
                    file.content = None;
                }
                file
            })
            .collect();
        let used = AtomicU64::new(entry.used.load(Ordering::Relaxed));
        let snapshot = Snapshot { generation, guards: entry.guards.clone(), dirs: entry.dirs.clone(), files, bytes, used };
        *entry = Arc::new(snapshot);
        Self::settle(&mut usage, &state.0, kept);
    }

    /// Now, for [`Walked::taken`] and [`Self::refresh`].
    pub fn now() -> i128 {
        now_nanos()
    }
}

/// The estimated bytes of a snapshot's listing: each entry's path and the record beside it.
fn listing_bytes(guards: &[(PathBuf, GuardStamp)], dirs: &[(PathBuf, Stamp)], files: &[CachedFile]) -> usize {
    let guards: usize = guards.iter().map(|(p, _)| p.as_os_str().len() + std::mem::size_of::<(PathBuf, GuardStamp)>()).sum();
    let dirs: usize = dirs.iter().map(|(p, _)| p.as_os_str().len() + std::mem::size_of::<(PathBuf, Stamp)>()).sum();
    let files: usize = files.iter().map(|f| f.relative.as_os_str().len() + std::mem::size_of::<CachedFile>()).sum();
    guards + dirs + files
}

/// The files of `dir` that decide what a walk of it skips, as the `ignore` crate reads
/// them: `.gitignore`, `.ignore`, `.git`, and the Git directory's `info/exclude` (through a
/// `.git` file's `gitdir:` and `commondir` for a linked work tree).
fn guard_files(dir: &Path, out: &mut Vec<(PathBuf, GuardStamp)>) {
    for name in [".gitignore", ".ignore"] {
        let path = dir.join(name);
        let stamp = Stamp::guard(&path);
        out.push((path, stamp));
    }
    let git = dir.join(".git");
    let stamp = Stamp::guard(&git);
    out.push((git.clone(), stamp));
    let Ok(meta) = std::fs::metadata(&git) else { return };
    let common = if meta.is_file() {
        let Ok(text) = std::fs::read_to_string(&git) else { return };
        let Some(real) = text.lines().next().and_then(|l| l.strip_prefix("gitdir: ")).map(PathBuf::from) else { return };
        let file = real.join("commondir");
        let stamp = Stamp::guard(&file);
        out.push((file.clone(), stamp));
        let Ok(line) = std::fs::read_to_string(&file) else { return };
        let line = line.lines().next().unwrap_or("").to_owned();
        if line.starts_with('.') {
            real.join(line)
        } else {
            PathBuf::from(line)
        }
    } else {
        git
    };
    let exclude = common.join("info/exclude");
    let stamp = Stamp::guard(&exclude);
    out.push((exclude, stamp));
}

/// A directory opened for [`stat_at`] (not through a final symlink).
fn open_dir(dir: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC).open(dir).ok()
}

/// The stamp of `name` in the open directory `dir` (its own, a symlink's too).
fn stat_at(dir: &std::fs::File, name: &std::ffi::OsStr) -> Option<Stamp> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let name = std::ffi::CString::new(name.as_bytes()).ok()?;
    // SAFETY: a zeroed `stat` is a valid buffer for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated, `st` is ours, `dir` an open directory.
    if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Some(Stamp {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        mode: st.st_mode as u32,
        nlink: st.st_nlink as u64,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
        ctime: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
    })
}

/// Whether `check` holds for every item, run on up to `threads` threads.
fn parallel_all<T: Sync>(items: &[T], threads: usize, check: impl Fn(&T) -> bool + Sync) -> bool {
    let chunk = items.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let check = &check;
        let handles: Vec<_> = items.chunks(chunk).map(|part| scope.spawn(move || part.iter().all(check))).collect();
        handles.into_iter().all(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// `map` over `items` on up to `threads` threads, in order.
pub fn parallel_map<T: Sync, U: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let chunk = items.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let map = &map;
        let handles: Vec<_> = items.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(map).collect::<Vec<U>>())).collect();
        let mut out = Vec::with_capacity(items.len());
        for handle in handles {
            out.extend(handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        out
    })
}
