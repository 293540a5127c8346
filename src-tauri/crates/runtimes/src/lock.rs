//! Our own writers' lock: an advisory exclusive lock on a sibling lock file
//! (e.g. `.credentials.json.patchbay.lock`), taken with an explicit timeout.
//!
//! The lock serializes Patchbay's writers (the app, the CLI, a second instance) with each other
//! only. Claude Code 2.1.332 takes a lock of its own around its credential writes, which our Claude
//! writers also take, inside this one ([`crate::claude_lock`]); older releases take none (they
//! write by temp file and rename), so the writers in [`crate::atomic`] still re-read and re-merge
//! before replacing the file.
//!
//! A lock file of our own beside a user's file ([`FileLock::acquire_own`]) is removed on Unix
//! when the lock is released, so no `*.patchbay.lock` stays beside a user's config: the holder
//! unlinks it before it closes, and every writer that gets a lock checks that the file it locked
//! is still the one at the path (else a holder released and removed it meanwhile, and it tries
//! again). So two writers never hold two different inodes. Another program's lock file (Codex's
//! refresh lock) is never removed: it does not check. Elsewhere the file stays (an open file
//! cannot be removed there).

use crate::RuntimeError;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a writer waits for another of our writers before giving up with `Busy`.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a waiting writer tries again.
const POLL: Duration = Duration::from_millis(10);

/// Held while a writer reads, decides and replaces a store file; released on drop (closing the
/// descriptor releases the lock).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
    /// Removed on release (ours alone; see the module docs).
    #[cfg_attr(not(unix), allow(dead_code))]
    remove: bool,
}

impl FileLock {
    /// Take the exclusive lock on `path` (created if missing, mode 0600), polling a non-blocking
    /// attempt until `timeout`; past it, [`RuntimeError::Busy`].
    pub fn acquire(path: &Path, timeout: Duration) -> Result<FileLock, RuntimeError> {
        Self::take(path, timeout, false)
    }

    /// [`FileLock::acquire`] for a lock file only Patchbay uses: removed on release.
    pub fn acquire_own(path: &Path, timeout: Duration) -> Result<FileLock, RuntimeError> {
        Self::take(path, timeout, true)
    }

    fn take(path: &Path, timeout: Duration, remove: bool) -> Result<FileLock, RuntimeError> {
        let mut file = open_lock_file(path)?;
        let deadline = Instant::now() + timeout;
        loop {
            match try_lock(&file) {
                Ok(true) if still_at(&file, path) => {
                    return Ok(FileLock {
                        _file: file,
                        path: path.to_path_buf(),
                        remove,
                    })
                }
                // The holder removed it as it released it: lock the one at the path now.
                Ok(true) => {
                    file = open_lock_file(path)?;
                    continue;
                }
                Ok(false) => {}
                Err(e) => {
                    return Err(RuntimeError::Io {
                        path: path.to_path_buf(),
                        message: format!("cannot lock: {e}"),
                    })
                }
            }
            if Instant::now() >= deadline {
                return Err(RuntimeError::Busy {
                    what: path.display().to_string(),
                    message: format!(
                        "another Patchbay writer held the lock for more than {} ms",
                        timeout.as_millis()
                    ),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still held (see the module docs); the descriptor closes after this.
        #[cfg(unix)]
        if self.remove {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is the file at `path` (not one a holder removed before we locked it).
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(ours), Ok(there)) => ours.dev() == there.dev() && ours.ino() == there.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_at(_: &File, _: &Path) -> bool {
    true
}

fn open_lock_file(path: &Path) -> Result<File, RuntimeError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| RuntimeError::Io {
        path: path.to_path_buf(),
        message: format!("cannot open the lock file: {e}"),
    })
}

/// `Ok(false)`: someone else holds it.
#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Windows: std's `File::try_lock` (LockFileEx), stable since Rust 1.89; the workspace's MSRV
/// predates it, so building for Windows needs a newer toolchain than 1.85.
#[cfg(not(unix))]
#[allow(clippy::incompatible_msrv)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn our_own_lock_file_goes_with_the_lock_and_anothers_stays() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("mcp.json.patchbay.lock");
        let held = FileLock::acquire_own(&own, Duration::from_secs(1)).unwrap();
        assert!(own.exists());
        // Held: a second writer waits, then gives up.
        assert!(matches!(
            FileLock::acquire_own(&own, Duration::from_millis(30)),
            Err(RuntimeError::Busy { .. })
        ));
        drop(held);
        assert!(!own.exists(), "the lock file stayed beside the config");

        let foreign = dir.path().join("codex.lock");
        drop(FileLock::acquire(&foreign, Duration::from_secs(1)).unwrap());
        assert!(foreign.exists());
    }

    #[test]
    fn a_waiter_on_a_removed_lock_file_locks_the_new_one_never_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.patchbay.lock");
        let first = FileLock::acquire_own(&path, Duration::from_secs(1)).unwrap();
        let waiting = {
            let path = path.clone();
            std::thread::spawn(move || FileLock::acquire_own(&path, Duration::from_secs(5)))
        };
        // The waiter has opened the first holder's file and polls its lock.
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        let second = waiting.join().unwrap().unwrap();
        // Whoever comes now must wait for the second holder: they lock the same file.
        assert!(matches!(
            FileLock::acquire_own(&path, Duration::from_millis(30)),
            Err(RuntimeError::Busy { .. })
        ));
        drop(second);
        assert!(!path.exists());
    }
}
