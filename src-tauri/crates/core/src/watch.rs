//! Live watching: the catalog files and the vault database, debounced, so a change made by an
//! editor or by `patchbay secret set` in another process shows up without a restart.
//!
//! Directories are watched, not files: editors and runtimes replace files by rename, which blinds
//! a watch on the old inode.

use crate::{CoreError, Paths};
use notify::RecursiveMode;
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a burst of file events must settle before one recompute.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// Keeps the watch alive; dropping it stops watching and the ticker.
pub struct Watch {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        if let Ok(mut stopped) = lock.lock() {
            *stopped = true;
        }
        wake.notify_all();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
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

/// Call `on_change` (from a background thread) after any change to the watched files settles,
/// and every `tick` so that expiry-driven transitions (Ready → Token expired) show up too.
pub fn watch(
    paths: &Paths,
    tick: Duration,
    on_change: impl Fn() + Send + Sync + 'static,
) -> Result<Watch, CoreError> {
    let on_change: Arc<dyn Fn() + Send + Sync> = Arc::new(on_change);
    let targets = targets(paths);
    let names: BTreeSet<(PathBuf, OsString)> = targets
        .iter()
        .flat_map(|(dir, names)| names.iter().map(move |n| (dir.clone(), n.clone())))
        .collect();

    let callback = on_change.clone();
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let relevant = events.iter().any(|event| {
            // Reading a file (as every status does) is an access event; reacting to it would
            // recompute forever.
            !event.kind.is_access()
                && event
                    .paths
                    .iter()
                    .any(|p| match (p.parent(), p.file_name()) {
                        (Some(dir), Some(name)) => {
                            names.contains(&(dir.to_path_buf(), name.to_os_string()))
                        }
                        _ => false,
                    })
        });
        if relevant {
            callback();
        }
    })
    .map_err(|e| CoreError::Watch {
        path: PathBuf::new(),
        message: e.to_string(),
    })?;

    for dir in targets.keys() {
        // The user catalog's directory may not exist yet; create it so a first catalog is seen.
        std::fs::create_dir_all(dir).map_err(|e| CoreError::Watch {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        debouncer
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| CoreError::Watch {
                path: dir.clone(),
                message: e.to_string(),
            })?;
    }

    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let ticker_stop = stop.clone();
    let ticker = std::thread::Builder::new()
        .name("patchbay-status-tick".into())
        .spawn(move || {
            let (lock, wake) = &*ticker_stop;
            let Ok(mut stopped) = lock.lock() else { return };
            loop {
                let (guard, timeout) = match wake.wait_timeout(stopped, tick) {
                    Ok(r) => r,
                    Err(_) => return,
                };
                stopped = guard;
                if *stopped {
                    return;
                }
                if timeout.timed_out() {
                    on_change();
                }
            }
        })
        .map_err(|e| CoreError::Watch {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;

    Ok(Watch {
        _debouncer: debouncer,
        stop,
        ticker: Some(ticker),
    })
}
