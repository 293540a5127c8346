//! Claude Code's own write lock on its secure storage, taken by our writers too, so that our
//! read-merge-write of its credentials and its own are mutually exclusive.
//!
//! Why: Claude Code 2.1.332 (read in its binary, not in shared/reference) serializes every
//! secure-storage write it makes, to `.credentials.json` and to the macOS Keychain item alike, with
//! the npm `proper-lockfile` protocol (a bundled reimplementation with the same on-disk format):
//! `lock("<dir>/.storage-write", {realpath: false, retries: {retries: 10, minTimeout: 100,
//! maxTimeout: 1000}, stale: 15000, onCompromised})`, then, inside the lock, it re-reads the
//! store, applies its change and writes (`claude mcp remove` deleting a credential is one such
//! write: tests/tests/claude_lock_interop.rs runs it against our lock). `<dir>` is the directory
//! its `I6()` returns, which is also the one `.credentials.json` lives in:
//! `$CLAUDE_SECURESTORAGE_CONFIG_DIR` when set, else the config dir (`$CLAUDE_CONFIG_DIR`, else
//! `~/.claude`), i.e. the parent of [`crate::config::RuntimePaths::claude_credentials`] (one
//! difference: Claude Code reads a defined but empty `CLAUDE_SECURESTORAGE_CONFIG_DIR` as
//! `~/.claude`, `RuntimePaths` as unset). Older releases take no lock, which is why
//! [`crate::atomic`] still re-reads before its rename and [`crate::heal`] still heals.
//!
//! The format, as proper-lockfile defines it:
//! - the lock is a DIRECTORY, `<dir>/.storage-write.lock`; acquiring it is a `mkdir` succeeding
//!   (atomic; never `create_dir_all`);
//! - on `EEXIST`, the holder is considered gone when the directory's mtime is older than `stale`
//!   (15 s): it is removed and the `mkdir` tried once more; a fresh one is never touched, and the
//!   caller retries with backoff (Claude Code: 10 retries, 100 ms doubling to 1 s, ~7.5 s in all);
//! - while held, the holder refreshes the mtime every `stale / 2` (7.5 s), and gives the lock up
//!   as compromised when the mtime is no longer the one it set;
//! - release is `rmdir` (`ENOENT` ignored).
//!
//! Ours ([`ClaudeWriteLock`]): `mkdir`, the same stale rule, polling with backoff (10 ms doubling
//! to 100 ms) up to an explicit timeout, then [`RuntimeError::Busy`] naming the directory; an
//! RAII guard that `rmdir`s on drop. We never refresh the mtime: our writers hold it for the
//! milliseconds a re-read, merge and rename take (or one Keychain round trip), far below the 7.5 s
//! after which a refresh would be due, and never across anything slow (no network). Should a
//! hold ever outlast 15 s (a stalled disk, a Keychain prompt) Claude Code may take the lock over
//! as stale; then the guard sees on drop that the directory is no longer the one it created
//! (another inode or mtime) and leaves it in place instead of removing Claude Code's lock.
//!
//! The same protocol guards Claude Code's `~/.claude.json` (its config, where `mcpServers`
//! live): 2.1.332's `saveConfigWithLock` takes `lock(<config>, {lockfilePath: "<config>.lock"})`
//! with proper-lockfile's default `stale` (10 s) and retries of its own (read in its binary), so
//! "Add to Claude Code" takes [`claude_config_lock_path`] around its read-modify-write of that
//! file ([`crate::claude::add_server`]). Our stale rule (15 s) is the more patient of the two, so
//! we never take over a lock Claude Code still considers live.
//!
//! Our own writers are serialized first by [`crate::lock::FileLock`] (a flock on
//! `.credentials.json.patchbay.lock`); this lock is taken inside it and released before it.
//!
//! A lock a killed Patchbay left ([`ClaudeWriteLock::acquire_under`]): beside each lock
//! directory it creates, a writer notes which of our flocks it held and which directory it made
//! (`<lock>.patchbay-owner`: the flock's path, the directory's device and inode; on Linux the
//! directory is made under another name, noted, and renamed into place, so no kill leaves one
//! without the other). A writer
//! that holds that same flock and finds that same directory knows its maker is gone (the flock
//! is released when a process dies), so it takes the lock over at once instead of waiting out
//! the 15 s (a `bridge sync` after a killed one failed for 5.5 s). A directory Claude Code made
//! never matches a note of ours, so its locks are only ever taken over by the stale rule.
//! Known limit, the same as proper-lockfile's: two waiters that find the same stale lock may both
//! remove it, the second removal taking away the lock the first just re-created. It needs a
//! holder that died without releasing first.

use crate::RuntimeError;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Claude Code's lock directory, created beside its credentials around each secure-storage write.
pub const CLAUDE_WRITE_LOCK_DIR: &str = ".storage-write.lock";

/// proper-lockfile's `stale` as Claude Code passes it: a lock directory whose mtime is older than
/// this belongs to a dead holder.
pub const CLAUDE_LOCK_STALE: Duration = Duration::from_secs(15);

/// How long a writer waits for Claude Code's lock by default before giving up with `Busy`.
pub const DEFAULT_CLAUDE_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// The first wait after finding the lock held; doubled each time up to [`MAX_POLL`].
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_millis(100);

/// `<dir>/.storage-write.lock`, for the directory holding Claude Code's `.credentials.json`.
pub fn claude_write_lock_path(dir: &Path) -> PathBuf {
    dir.join(CLAUDE_WRITE_LOCK_DIR)
}

/// `<config>.lock`: the lock directory Claude Code takes around its writes of `config` (its
/// `~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`).
pub fn claude_config_lock_path(config: &Path) -> PathBuf {
    let mut name = config.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Holds Claude Code's write lock; removes the lock directory on drop.
#[derive(Debug)]
pub struct ClaudeWriteLock {
    path: PathBuf,
    /// What the directory was when we created it, to recognise it on release.
    created: Option<Identity>,
}

impl ClaudeWriteLock {
    /// Take the lock directory `path` (see [`claude_write_lock_path`]; its parent must exist),
    /// removing a stale one, polling with backoff until `timeout`; past it,
    /// [`RuntimeError::Busy`].
    pub fn acquire(path: &Path, timeout: Duration) -> Result<ClaudeWriteLock, RuntimeError> {
        Self::acquire_with(path, timeout, &mut mkdir_once)
    }

    /// The acquire loop, `create` making the directory (`Ok(false)`: it exists already).
    fn acquire_with(
        path: &Path,
        timeout: Duration,
        create: &mut dyn FnMut(&Path) -> std::io::Result<bool>,
    ) -> Result<ClaudeWriteLock, RuntimeError> {
        let deadline = Instant::now() + timeout;
        let mut delay = MIN_POLL;
        loop {
            if try_acquire(path, create).map_err(|e| io_error(path, "cannot take the lock", e))? {
                return Ok(ClaudeWriteLock {
                    path: path.to_path_buf(),
                    created: Identity::of(path),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RuntimeError::Busy {
                    what: path.display().to_string(),
                    message: format!(
                        "Claude Code held its write lock for more than {} ms",
                        timeout.as_millis()
                    ),
                });
            }
            std::thread::sleep(delay.min(deadline - now));
            delay = (delay * 2).min(MAX_POLL);
        }
    }

    /// [`Self::acquire`] for a writer that holds our flock `guard`: a lock directory a killed
    /// writer under that same flock left behind is taken over at once (see the module docs), and
    /// the one taken is noted as ours.
    pub fn acquire_under(
        path: &Path,
        timeout: Duration,
        guard: &crate::lock::FileLock,
    ) -> Result<ClaudeWriteLock, RuntimeError> {
        release_left_behind(path, guard);
        Self::acquire_with(path, timeout, &mut |at| create_noted(at, guard.path()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `<lock>.patchbay-owner`: which of our flocks was held when we made the lock directory, and
/// which directory that was.
fn owner_note(lock: &Path) -> PathBuf {
    let mut name = lock.as_os_str().to_owned();
    name.push(".patchbay-owner");
    PathBuf::from(name)
}

/// Whether the lock directory at `path` is one a writer under our flock at `guard` made: the
/// note names that flock and this very directory. Whoever holds the flock knows that writer is
/// gone.
pub(crate) fn noted_as_ours(path: &Path, guard: &Path) -> bool {
    let Ok(note) = fs::read_to_string(owner_note(path)) else {
        return false;
    };
    let Some(now) = Identity::of(path) else {
        return false;
    };
    let mut lines = note.lines();
    lines.next() == Some(&*guard.display().to_string()) && lines.next() == Some(&*now.describe())
}

/// Removes a note of a writer under `guard` (which the caller holds) that names no lock at
/// `path` any more (its writer was killed releasing it): before the directory it names is
/// removed, so no later lock with that inode could match it. Whether it did.
pub(crate) fn forget_stale_note(path: &Path, guard: &crate::lock::FileLock) -> bool {
    let note = owner_note(path);
    let Ok(text) = fs::read_to_string(&note) else {
        return false;
    };
    let ours = text.lines().next() == Some(&*guard.path().display().to_string());
    ours && !noted_as_ours(path, guard.path()) && fs::remove_file(&note).is_ok()
}

/// Removes the lock directory at `path` (and its note) when a writer under `guard`, which the
/// caller holds, made it and is gone. Whether it did.
pub(crate) fn release_left_behind(path: &Path, guard: &crate::lock::FileLock) -> bool {
    if !noted_as_ours(path, guard.path()) {
        return false;
    }
    tracing::warn!(lock = %path.display(), "removing the write lock a killed Patchbay writer left");
    match fs::remove_dir(path) {
        Ok(()) => {
            let _ = fs::remove_file(owner_note(path));
            true
        }
        Err(e) => {
            tracing::warn!(lock = %path.display(), "cannot remove the lock left behind: {e}");
            false
        }
    }
}

impl Drop for ClaudeWriteLock {
    fn drop(&mut self) {
        let now = Identity::of(&self.path);
        if now.is_none() {
            tracing::warn!(lock = %self.path.display(), "Claude Code's write lock was removed while we held it");
            return;
        }
        if self.created.is_some() && now != self.created {
            tracing::warn!(lock = %self.path.display(), "Claude Code's write lock was taken over while we held it; leaving it");
            return;
        }
        if self.created.is_some() {
            // On Linux moved aside first (one atomic step: the lock is gone for everyone), then
            // the note, then the directory: a kill anywhere leaves no lock, and the note never
            // outlives the directory it names (whose inode a later lock could reuse).
            #[cfg(target_os = "linux")]
            {
                let parked = staging_dir(&self.path);
                if fs::rename(&self.path, &parked).is_ok() {
                    let _ = fs::remove_file(owner_note(&self.path));
                    let _ = fs::remove_dir(&parked);
                    return;
                }
            }
            // Elsewhere the note first: a kill between the two leaves a lock the stale rule
            // takes over, never a note naming a directory made later with the same inode.
            let _ = fs::remove_file(owner_note(&self.path));
        }
        match fs::remove_dir(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(lock = %self.path.display(), "cannot release Claude Code's write lock: {e}")
            }
        }
    }
}

/// One attempt: `Ok(true)` when we now hold the lock, `Ok(false)` when a live holder has it.
fn try_acquire(
    path: &Path,
    create: &mut dyn FnMut(&Path) -> std::io::Result<bool>,
) -> std::io::Result<bool> {
    if create(path)? {
        return Ok(true);
    }
    let modified = match fs::metadata(path) {
        Ok(meta) => meta.modified()?,
        // Released in between: the next attempt may get it.
        Err(e) if e.kind() == ErrorKind::NotFound => return create(path),
        Err(e) => return Err(e),
    };
    // A future mtime (proper-lockfile sets the next second + 5 ms) is fresh.
    let age = SystemTime::now()
        .duration_since(modified)
        .unwrap_or(Duration::ZERO);
    if age <= CLAUDE_LOCK_STALE {
        return Ok(false);
    }
    tracing::warn!(lock = %path.display(), age_ms = age.as_millis() as u64, "removing a stale Claude Code write lock");
    match fs::remove_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // Once, without the stale check (as proper-lockfile): whoever wins the mkdir holds it.
    create(path)
}

/// Makes the lock directory at `path` with our note beside it naming `guard` and the directory,
/// so that no kill leaves one without the other: on Linux the directory is made under another
/// name, noted, then renamed into place (`RENAME_NOREPLACE`: it fails, as `mkdir` would, when a
/// lock is there). Elsewhere `mkdir`, then the note (a kill in between leaves a lock the stale
/// rule takes over).
fn create_noted(path: &Path, guard: &Path) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use rustix::io::Errno;
        let staging = staging_dir(path);
        let _ = fs::remove_dir(&staging);
        fs::create_dir(&staging)?;
        let noted = Identity::of(&staging).is_some_and(|made| write_note(path, guard, &made));
        if noted {
            match renameat_with(CWD, &staging, CWD, path, RenameFlags::NOREPLACE) {
                Ok(()) => return Ok(true),
                Err(Errno::EXIST | Errno::NOTEMPTY) => {
                    let _ = fs::remove_dir(&staging);
                    let _ = fs::remove_file(owner_note(path));
                    return Ok(false);
                }
                // The filesystem cannot: mkdir as everywhere else.
                Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
                Err(e) => {
                    let _ = fs::remove_dir(&staging);
                    let _ = fs::remove_file(owner_note(path));
                    return Err(e.into());
                }
            }
        }
        let _ = fs::remove_dir(&staging);
        let _ = fs::remove_file(owner_note(path));
    }
    if !mkdir_once(path)? {
        return Ok(false);
    }
    if let Some(made) = Identity::of(path) {
        // Best effort: without the note a lock left behind waits out the stale rule.
        write_note(path, guard, &made);
    }
    Ok(true)
}

/// `<lock>.patchbay-new.<pid>`: where [`create_noted`] makes the directory before it is the lock.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn staging_dir(lock: &Path) -> PathBuf {
    let mut name = lock.as_os_str().to_owned();
    name.push(format!("{STAGING_INFIX}{}", std::process::id()));
    PathBuf::from(name)
}

/// What a killed [`create_noted`] can leave beside the lock at `lock`: its staging directory and
/// a note's temp file (`<lock>.patchbay-new.<pid>`, `<lock>.patchbay-owner.<pid>`).
pub(crate) fn staging_left(lock: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (lock.parent(), lock.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let staging = format!("{name}{STAGING_INFIX}");
    let note_temp = format!("{name}.patchbay-owner.");
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            [&staging, &note_temp].iter().any(|prefix| {
                file.strip_prefix(prefix.as_str())
                    .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .map(|e| e.path())
        .collect()
}

/// What follows the lock's name in [`staging_dir`]'s.
pub(crate) const STAGING_INFIX: &str = ".patchbay-new.";

/// Writes the note for the lock at `path` (whole or not at all: a temp file renamed); whether
/// it did.
fn write_note(path: &Path, guard: &Path, made: &Identity) -> bool {
    let note = owner_note(path);
    let mut temp = note.as_os_str().to_owned();
    temp.push(format!(".{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let text = format!("{}\n{}\n", guard.display(), made.describe());
    let written = fs::write(&temp, text).and_then(|()| fs::rename(&temp, &note));
    if let Err(e) = &written {
        let _ = fs::remove_file(&temp);
        tracing::debug!(lock = %path.display(), "cannot note the lock as ours: {e}");
    }
    written.is_ok()
}

fn mkdir_once(path: &Path) -> std::io::Result<bool> {
    match fs::create_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The directory we created, told apart from one created after it: its inode (unix) and mtime.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    #[cfg(unix)]
    inode: (u64, u64),
    modified: Option<SystemTime>,
}

impl Identity {
    /// One line that names this directory: its device and inode (a rename into place keeps
    /// them; elsewhere, its mtime).
    fn describe(&self) -> String {
        #[cfg(unix)]
        return format!("{}:{}", self.inode.0, self.inode.1);
        #[cfg(not(unix))]
        return self
            .modified
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos().to_string())
            .unwrap_or_default();
    }

    fn of(path: &Path) -> Option<Identity> {
        let meta = fs::symlink_metadata(path).ok()?;
        Some(Identity {
            #[cfg(unix)]
            inode: {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            },
            modified: meta.modified().ok(),
        })
    }
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> RuntimeError {
    RuntimeError::Io {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}
