//! Live watching: the catalog files and the vault database, so a change made by an editor or by
//! `patchbay secret set` in another process shows up without a restart.
//!
//! Directories are watched, not files: editors and runtimes replace files by rename, which blinds
//! a watch on the old inode. The events are handled as they arrive (patchbay-runtimes'
//! [`watch_files`]: a thread asleep on them, one call for a burst already queued, one more for
//! a change made during a call), so nothing ticks while nothing changes but the expiry tick the
//! caller asks for.

use crate::{CoreError, Paths};
use patchbay_runtimes::watch::{watch_files, FileWatch, Wake, WatchedFile};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Keeps the watch alive; dropping it stops the watch and the ticker.
pub struct Watch {
    _files: FileWatch,
}

/// The directory → file names that matter in it.
fn targets(paths: &Paths) -> BTreeMap<PathBuf, BTreeSet<OsString>> {
    let mut targets: BTreeMap<PathBuf, BTreeSet<OsString>> = BTreeMap::new();
    let mut add = |file: PathBuf| {
        if let (Some(dir), Some(name)) = (file.parent(), file.file_name()) {
            targets
                .entry(dir.to_path_buf())
                .or_default()
                .insert(name.to_os_string());
        }
    };
    for file in paths.catalog_files() {
        add(file);
    }
    let db = paths.database();
    add(db.clone());
    // Another process's write lands in the write-ahead log first.
    let mut wal = db.into_os_string();
    wal.push("-wal");
    add(PathBuf::from(wal));
    targets
}

/// Call `on_change` (from a background thread) when any of the watched files changes (once for
/// a burst of events that arrive together), and every `tick` so that expiry-driven transitions
/// (Ready → Token expired) show up too.
pub fn watch(
    paths: &Paths,
    tick: Duration,
    on_change: impl Fn() + Send + Sync + 'static,
) -> Result<Watch, CoreError> {
    let files = targets(paths)
        .into_iter()
        .flat_map(|(dir, names)| {
            names.into_iter().map(move |name| WatchedFile {
                dir: dir.clone(),
                name,
                tag: 0,
            })
        })
        .collect();
    let files = watch_files(
        "patchbay-status-watch",
        files,
        None,
        Some(tick),
        move |wake: Wake| match wake {
            Wake::Changed(_) | Wake::Tick => on_change(),
            Wake::Settled(_) => {}
        },
    )
    .map_err(|e| CoreError::Watch {
        path: e.path,
        message: e.message,
    })?;
    Ok(Watch { _files: files })
}
