//! What a killed Patchbay writer can leave beside another program's file, removed when Patchbay
//! starts: the temp files of [`crate::atomic`] (`<name>.patchbay.<pid>.<n>.tmp`, a whole copy of
//! the file, credentials included) and of a config's one-time backup, and Claude Code's lock
//! directories a writer of ours made and could not release ([`crate::claude_lock`]'s note), and
//! our own lock file (`<name>.patchbay.lock`: no secret, never blocking, but ours to remove).
//!
//! The next write of each file removes them too (under its lock); this finds them without
//! waiting for one, which may never come. Each file is handled under its lock of ours, taken
//! without waiting: a writer of ours holding it now has its temp file in flight and removes what
//! is stale itself. Nothing is created where nothing was left (no lock file appears beside a
//! config Patchbay never wrote).

use crate::atomic::{lock_path_for, stale_temps, sweep_stale_temps};
use crate::claude_lock::{claude_config_lock_path, claude_write_lock_path};
use crate::clients::{write::backup_path, write::user_file, Client, ClientPaths};
use crate::config::RuntimePaths;
use crate::lock::FileLock;
use std::path::PathBuf;
use std::time::Duration;

/// A file Patchbay writes beside another program, with what its writers leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub path: PathBuf,
    /// Claude Code's lock directory our writers of this file take, if any.
    pub runtime_lock: Option<PathBuf>,
}

/// Every file Patchbay writes in the runtimes' and clients' directories.
pub fn written_files(runtime: &RuntimePaths, clients: &ClientPaths) -> Vec<WrittenFile> {
    let mut files = vec![
        WrittenFile {
            runtime_lock: runtime
                .claude_credentials
                .parent()
                .map(claude_write_lock_path),
            path: runtime.claude_credentials.clone(),
        },
        WrittenFile {
            runtime_lock: Some(claude_config_lock_path(&runtime.claude_json)),
            path: runtime.claude_json.clone(),
        },
        WrittenFile {
            path: runtime.codex_credentials(),
            runtime_lock: None,
        },
        WrittenFile {
            path: runtime.codex_config(),
            runtime_lock: None,
        },
    ];
    for client in Client::ALL {
        let Ok(path) = user_file(clients, client) else {
            continue;
        };
        if !files.iter().any(|f| f.path == path) {
            files.push(WrittenFile {
                path,
                runtime_lock: None,
            });
        }
    }
    files
}

/// Removes what killed writers left beside `files`; how many things went. Each directory is
/// listed once first (it runs at every start): a file is looked at closer only where its
/// directory holds a name of ours.
pub fn sweep(files: &[WrittenFile]) -> usize {
    let mut ours_in: std::collections::HashMap<PathBuf, bool> = std::collections::HashMap::new();
    files
        .iter()
        .filter(|file| {
            let Some(dir) = file.path.parent() else {
                return false;
            };
            *ours_in.entry(dir.to_path_buf()).or_insert_with(|| {
                std::fs::read_dir(dir).is_ok_and(|entries| {
                    entries
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().contains(".patchbay"))
                })
            })
        })
        .map(sweep_one)
        .sum()
}

/// [`sweep`] over [`written_files`] as the environment places them (nothing without a home).
pub fn sweep_from_env() -> usize {
    let (Some(runtime), Some(clients)) = (RuntimePaths::from_env(), ClientPaths::from_env()) else {
        return 0;
    };
    sweep(&written_files(&runtime, &clients))
}

fn sweep_one(file: &WrittenFile) -> usize {
    let backup = backup_path(&file.path);
    let ours = lock_path_for(&file.path);
    let lock_left = file
        .runtime_lock
        .as_deref()
        .filter(|lock| crate::claude_lock::noted_as_ours(lock, &ours));
    let staging: Vec<PathBuf> = file
        .runtime_lock
        .as_deref()
        .map(crate::claude_lock::staging_left)
        .unwrap_or_default();
    if stale_temps(&file.path).is_empty()
        && stale_temps(&backup).is_empty()
        && lock_left.is_none()
        && staging.is_empty()
        && !ours.exists()
    {
        return 0;
    }
    // A writer holds it now: it sweeps when it is done. Taken as our own, the lock file a
    // killed writer left goes when this is released.
    let Ok(guard) = FileLock::acquire_own(&ours, Duration::ZERO) else {
        return 0;
    };
    let mut removed = sweep_stale_temps(&file.path) + sweep_stale_temps(&backup);
    if let Some(lock) = &file.runtime_lock {
        // Before the staging directories: a note must never outlive the directory it names.
        removed += usize::from(crate::claude_lock::forget_stale_note(lock, &guard));
    }
    for left in staging {
        let gone = match left.is_dir() {
            true => std::fs::remove_dir(&left),
            false => std::fs::remove_file(&left),
        };
        removed += usize::from(gone.is_ok());
    }
    if let Some(lock) = lock_left {
        removed += usize::from(crate::claude_lock::release_left_behind(lock, &guard));
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::Os;
    use std::fs;

    #[test]
    fn what_killed_writers_left_goes_and_nothing_else() {
        let home = tempfile::tempdir().unwrap();
        let runtime = RuntimePaths::resolve(home.path(), &|_| None);
        let clients = ClientPaths::resolve(home.path(), Os::Linux, &|_| None);
        let files = written_files(&runtime, &clients);
        let claude = runtime.claude_credentials.parent().unwrap().to_path_buf();
        let cursor = clients.cursor_user.parent().unwrap().to_path_buf();
        fs::create_dir_all(&claude).unwrap();
        fs::create_dir_all(&cursor).unwrap();
        // Nothing left: nothing is created (no lock file beside a config never written).
        assert_eq!(sweep(&files), 0);
        assert_eq!(fs::read_dir(&cursor).unwrap().count(), 0);

        let ours = [
            claude.join(".credentials.json.patchbay.4242.0.tmp"),
            cursor.join(".mcp.json.patchbay.4242.3.tmp"),
            cursor.join(".mcp.json.patchbay-backup.patchbay.4242.4.tmp"),
            cursor.join("mcp.json.patchbay.lock"),
        ];
        let theirs = [
            claude.join(".credentials.json.tmp.deadbeef"),
            cursor.join("mcp.json"),
            cursor.join(".mcp.json.patchbay.x.1.tmp"),
        ];
        for path in ours.iter().chain(&theirs) {
            fs::write(path, "secret copy").unwrap();
        }
        // What a writer killed while making its lock leaves: the staging directory, a note's
        // temp file.
        let lock_name = crate::claude_lock::claude_write_lock_path(&claude);
        let staging = PathBuf::from(format!("{}.patchbay-new.4242", lock_name.display()));
        let note_temp = PathBuf::from(format!("{}.patchbay-owner.4242", lock_name.display()));
        fs::create_dir(&staging).unwrap();
        fs::write(&note_temp, "x").unwrap();
        // A Claude Code lock a writer of ours made (with its note), killed before releasing.
        let storage_lock = crate::claude_lock::claude_write_lock_path(&claude);
        {
            let guard =
                FileLock::acquire(&lock_path_for(&runtime.claude_credentials), Duration::ZERO)
                    .unwrap();
            let held = crate::claude_lock::ClaudeWriteLock::acquire_under(
                &storage_lock,
                Duration::ZERO,
                &guard,
            )
            .unwrap();
            std::mem::forget(held);
        }
        // Claude Code's own lock on its config (no note of ours) stays.
        let config_lock = claude_config_lock_path(&runtime.claude_json);
        fs::create_dir(&config_lock).unwrap();

        assert!(sweep(&files) >= ours.len());
        for path in &ours {
            assert!(!path.exists(), "{} is left", path.display());
        }
        for path in &theirs {
            assert!(path.exists(), "{} was removed", path.display());
        }
        assert!(!storage_lock.exists());
        assert!(!staging.exists() && !note_temp.exists());
        assert!(config_lock.is_dir());
        assert!(!claude.join(".credentials.json.patchbay.lock").exists());
        // Once is enough.
        assert_eq!(sweep(&files), 0);
    }

    #[test]
    fn a_file_whose_writer_is_at_work_is_left_to_it() {
        let home = tempfile::tempdir().unwrap();
        let runtime = RuntimePaths::resolve(home.path(), &|_| None);
        let clients = ClientPaths::resolve(home.path(), Os::Linux, &|_| None);
        let cursor = clients.cursor_user.parent().unwrap().to_path_buf();
        fs::create_dir_all(&cursor).unwrap();
        let in_flight = cursor.join(".mcp.json.patchbay.4242.0.tmp");
        fs::write(&in_flight, "being written").unwrap();
        let _writer =
            FileLock::acquire_own(&lock_path_for(&clients.cursor_user), Duration::ZERO).unwrap();
        assert_eq!(sweep(&written_files(&runtime, &clients)), 0);
        assert!(in_flight.exists());
    }
}
