//! Our own writers' lock: an advisory exclusive lock on a sibling lock file
//! (e.g. `.credentials.json.patchbay.lock`), taken with an explicit timeout.
//!
//! The lock serializes Patchbay's writers (the app, the CLI, a second instance) with each other
//! only. Claude Code 2.1.332 takes a lock of its own around its credential writes, which our Claude
//! writers also take, inside this one ([`crate::claude_lock`]); older releases take none (they
//! write by temp file and rename), so the writers in [`crate::atomic`] still re-read and re-merge
//! before replacing the file. The lock file is never deleted: deleting a lock file lets two
//! writers lock two different inodes.

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
}

impl FileLock {
    /// Take the exclusive lock on `path` (created if missing, mode 0600), polling a non-blocking
    /// attempt until `timeout`; past it, [`RuntimeError::Busy`].
    pub fn acquire(path: &Path, timeout: Duration) -> Result<FileLock, RuntimeError> {
        let file = open_lock_file(path)?;
        let deadline = Instant::now() + timeout;
        loop {
            match try_lock(&file) {
                Ok(true) => {
                    return Ok(FileLock {
                        _file: file,
                        path: path.to_path_buf(),
                    })
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
