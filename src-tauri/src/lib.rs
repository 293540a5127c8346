//! Patchbay's tray app: a thin Tauri shell over patchbay-core. It keeps one `Patchbay`, shows
//! the status as a tray badge and menu, opens the Connectors window on demand, serves that
//! window three commands (`commands`), and pushes `status-changed` whenever the catalogs or the
//! vault change (patchbay-core's watcher) or a token's expiry passes (its 30 s tick).

mod commands;
mod error;
mod tray;
mod window;

pub use error::IpcError;

use patchbay_core::tray_model::TrayModel;
use patchbay_core::{watch, Patchbay, Paths};
use patchbay_status::StatusReport;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tauri::{AppHandle, Emitter, Manager, RunEvent};

/// The event carrying a fresh `StatusReport` to the Connectors window.
pub const STATUS_EVENT: &str = "status-changed";
/// The command-line flag that opens the Connectors window at startup.
pub const SHOW_FLAG: &str = "--show";
/// How often the status is recomputed even when no file changed (expiry-driven transitions).
const TICK: Duration = Duration::from_secs(30);

/// The app's state: the one core facade, and the handle that keeps the watcher alive.
pub struct AppState {
    core: Mutex<Patchbay>,
    app: AppHandle,
    watch: Mutex<Option<watch::Watch>>,
    /// The last report pushed to the tray and the window, to skip pushes that change nothing
    /// (rebuilding the tray menu closes it if it is open).
    last: Mutex<Option<StatusReport>>,
}

impl AppState {
    fn core(&self) -> MutexGuard<'_, Patchbay> {
        self.core
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn status(&self) -> StatusReport {
        self.core().status()
    }

    /// Recompute the status and, when it changed, update the tray and tell the window; returns
    /// the new report. No lock is held while the tray updates: that runs on the main thread.
    fn refresh(&self) -> StatusReport {
        let report = self.status();
        let previous = {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if last.as_ref().is_some_and(|l| l.same_as(&report)) {
                return report;
            }
            last.replace(report.clone())
        };
        tracing::debug!(need_attention = report.need_attention, "status changed");
        if previous
            .as_ref()
            .is_none_or(|l| TrayModel::of(l) != TrayModel::of(&report))
        {
            tray::update(&self.app, &report);
        }
        if let Err(error) = self.app.emit(STATUS_EVENT, &report) {
            tracing::warn!("cannot emit {STATUS_EVENT}: {error}");
        }
        report
    }
}

fn setup(app: &mut tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    let paths = Paths::resolve(None)?;
    let core = Patchbay::open(paths.clone())?;
    let report = core.status();
    let handle = app.handle().clone();
    app.manage(AppState {
        core: Mutex::new(core),
        app: handle.clone(),
        watch: Mutex::new(None),
        last: Mutex::new(Some(report.clone())),
    });
    tray::create(&handle, &report)?;
    // A tray app opens no window at startup, unless asked (a launcher entry, end-to-end tests).
    if std::env::args().skip(1).any(|a| a == SHOW_FLAG) {
        window::show_connectors(&handle, None);
    }

    let on_change = handle.clone();
    let watcher = watch::watch(&paths, TICK, move || {
        on_change.state::<AppState>().refresh();
    });
    match watcher {
        Ok(w) => *app.state::<AppState>().watch.lock().unwrap() = Some(w),
        // The tray still works without live updates; the 30 s tick is part of the watcher, so
        // say so loudly.
        Err(error) => tracing::error!("live updates are off: {error}"),
    }
    Ok(())
}

/// Run the tray app until "Quit".
pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();

    let built = tauri::Builder::default()
        // First, so that a second launch only focuses the running one's window.
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            window::show_connectors(app, None);
        }))
        .invoke_handler(tauri::generate_handler![
            commands::get_status,
            commands::delete_unclaimed_credential,
            commands::start_authorization,
        ])
        .setup(setup)
        .build(tauri::generate_context!("../tauri.conf.json"));
    let app = match built {
        Ok(app) => app,
        Err(error) => {
            eprintln!("Patchbay could not start: {error}");
            std::process::exit(1);
        }
    };
    app.run(|_app, event| {
        // Closing the Connectors window must not quit a tray app; "Quit" calls exit(0), which
        // carries a code.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
}
