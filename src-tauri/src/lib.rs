//! Patchbay's tray app: a thin Tauri shell over patchbay-core. It keeps one `Patchbay`, the
//! runtime `Bridges` over it, one `Authorizer` (writing through those bridges), the `Refresher`
//! and the `Checker`; shows the status as a tray badge and menu; opens the Connectors window on
//! demand and serves it its commands (`commands`); runs the refresher of record on its schedule
//! and the opt-in periodic check; shows a notification when a connector newly needs a human
//! (`notification`); and pushes `status-changed` whenever the catalogs or the vault change
//! (patchbay-core's watcher; a completed authorization writes the vault), a runtime rotates a
//! bridged token (the runtime-store watcher adopts it), a pass renews something, or a token's
//! expiry passes (the 30 s tick). Every surface shows `Bridges::status()`, as the CLI's `status`
//! does. `patchbay://authorize/NAME` links (parsed by `patchbay_core::deeplink`) and the tray's
//! "Authorize …" items open the window at that row and start the same flow as its button.
//! Where no panel shows the tray (no StatusNotifier host), the window opens at start (`tray`).
//!
//! Light all day: a plain launch (the app menu, a second launch) opens the Connectors window;
//! `--background` (the launch at login) starts in the tray only, with no web view at all. The
//! window is created when asked for and destroyed when closed, so WebKit's web process goes with
//! it (`window`). Nothing ticks while nothing changes but the 30 s expiry tick, the schedule's
//! timers and the file watchers, which sleep on their events.

mod commands;
mod error;
mod link_handler;
mod notification;
mod tray;
mod window;

pub use error::IpcError;

use patchbay_core::deeplink::{self, DeepLink, DeepLinkError};
use patchbay_core::tray_model::TrayModel;
use patchbay_core::{
    schedule, watch, Authorizer, AuthorizerOptions, Bridges, Checker, CheckerOptions,
    NeedsHumanTracker, Patchbay, Paths, RefreshPolicy, Refresher, Settings,
};
use patchbay_status::StatusReport;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tauri::{AppHandle, Emitter, Manager, RunEvent, Runtime};

/// The event carrying a fresh `StatusReport` to the Connectors window.
pub const STATUS_EVENT: &str = "status-changed";
/// The event telling the window that checks were recorded (fetch the health board again).
pub const HEALTH_EVENT: &str = "health-changed";
/// The gateway's waiting consents changed; the payload is the list now.
pub const CONSENTS_EVENT: &str = "consents-changed";

/// Push the gateway's waiting consents to the window as they change, and say a new one on the
/// desktop (the client's browser shows it too, but may be behind other windows).
async fn push_consents(app: AppHandle, desk: patchbay_gateway::ConsentDesk) {
    let mut changes = desk.changes();
    let mut notices = patchbay_gateway::ConsentNotices::default();
    while changes.changed().await.is_ok() {
        let requests = desk.requests();
        for notice in notices.new_among(&requests) {
            notification::show(&app, notice);
        }
        if let Err(error) = app.emit(CONSENTS_EVENT, &requests) {
            tracing::warn!("cannot emit {CONSENTS_EVENT}: {error}");
        }
    }
}
/// The command-line flag that starts Patchbay in the tray only (the launch at login passes it);
/// without it a launch opens the Connectors window.
pub use patchbay_core::autostart::BACKGROUND_FLAG;
/// Opens the Connectors window at startup: what a plain launch does anyway (kept for launchers
/// and tests that pass it).
pub const SHOW_FLAG: &str = "--show";
/// How often the status is recomputed even when no file changed (expiry-driven transitions).
const TICK: Duration = Duration::from_secs(30);

/// The app's state: the one core facade, the bridges and the Authorizer over it, and the
/// handles that keep the watchers alive.
pub struct AppState {
    core: Arc<Patchbay>,
    bridges: Arc<Bridges>,
    authorizer: Authorizer,
    app: AppHandle,
    watch: Mutex<Option<watch::Watch>>,
    store_watch: Mutex<Option<patchbay_core::bridges::StoreWatch>>,
    /// The last report pushed to the tray and the window, to skip pushes that change nothing
    /// (rebuilding the tray menu closes it if it is open).
    last: Mutex<Option<StatusReport>>,
    /// The refresher of record, shared by its schedule and the window's commands.
    refresher: Refresher,
    /// Connection checks and the health board (the Test button, the opt-in periodic check).
    checker: Checker,
    /// Which connectors already notified that they need a human.
    notices: Mutex<NeedsHumanTracker>,
    schedule: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
    checks: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
    /// The in-process gateway's waiting consents, once it listens.
    consent_desk: std::sync::OnceLock<patchbay_gateway::ConsentDesk>,
    /// The writes to clients' configs this run can still undo.
    undos: patchbay_gateway::client_entries::UndoLog,
}

impl AppState {
    fn core(&self) -> &Patchbay {
        &self.core
    }

    fn bridges(&self) -> &Bridges {
        &self.bridges
    }

    fn authorizer(&self) -> &Authorizer {
        &self.authorizer
    }

    fn refresher(&self) -> &Refresher {
        &self.refresher
    }

    fn checker(&self) -> &Checker {
        &self.checker
    }

    /// What a new Connectors page starts from: the last status the tray showed and the board.
    fn page_boot(&self) -> Option<patchbay_core::tray_model::PageBoot> {
        let report = self
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let board = self
            .checker()
            .board()
            .inspect_err(|e| tracing::warn!("window: no health board for the new page: {e}"))
            .ok();
        Some(patchbay_core::tray_model::PageBoot { report, board })
    }

    /// Adopt what the runtimes rotated, compute, annotate the bridges: the CLI's `status` too.
    fn status(&self) -> StatusReport {
        self.bridges().status()
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
        let notices = self
            .notices
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .observe(&report);
        for notice in notices {
            notification::show(&self.app, notice);
        }
        report
    }
}

fn setup(app: &mut tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    window::gtk_started();
    patchbay_core::bridges::sweep_left_behind();
    let paths = Paths::resolve(None)?;
    // The clients' configs (Claude Code, Cursor, ...) decide what is in use, with the catalog.
    let mut core = Patchbay::open(paths.clone())?;
    if let Some(clients) = patchbay_core::setup::ClientSetup::from_env() {
        core = core.with_clients(clients);
    }
    let core = Arc::new(core);
    let bridges = Arc::new(Bridges::new(core.clone()));
    let report = bridges.status();
    let handle = app.handle().clone();
    let authorizer = Authorizer::new(core.clone(), AuthorizerOptions::from_env_or_default());
    // An authorization from the window or the tray writes through to the runtimes.
    authorizer.set_bridges(bridges.clone());
    let refresher = Refresher::new(
        core.clone(),
        Some(bridges.clone()),
        RefreshPolicy::default(),
    );
    let checker =
        Checker::new(core.clone(), CheckerOptions::default())?.with_refresher(refresher.clone());
    let mut notices = NeedsHumanTracker::new();
    notices.observe(&report);
    app.manage(AppState {
        refresher: refresher.clone(),
        checker: checker.clone(),
        notices: Mutex::new(notices),
        schedule: Mutex::new(None),
        checks: Mutex::new(None),
        consent_desk: std::sync::OnceLock::new(),
        undos: Default::default(),
        authorizer,
        core,
        bridges: bridges.clone(),
        app: handle.clone(),
        watch: Mutex::new(None),
        store_watch: Mutex::new(None),
        last: Mutex::new(Some(report.clone())),
    });
    // The name a panel shows for the tray item (its StatusNotifierItem Title, which
    // libayatana-appindicator takes from GLib's application name): "Patchbay", not the binary's.
    #[cfg(all(unix, not(target_os = "macos")))]
    glib::set_application_name("Patchbay");
    // Never invisible: a tray that cannot be created, or that no panel shows, opens the window.
    match tray::create(&handle, &report) {
        Ok(_) => tray::ensure_visible(&handle),
        Err(error) => tray::no_tray(
            &handle,
            &format!("the tray icon cannot be created ({error})"),
        ),
    }
    // Someone who starts Patchbay from the app menu wants to see it: a plain launch opens the
    // window; the launch at login passes --background and stays in the tray. A link opens the
    // window at its row (Linux, Windows: the link is an argument; a second launch forwards its
    // arguments through the single-instance plugin, see `run`).
    if let Some(link) = deeplink::from_args(std::env::args()) {
        open_link(&handle, link);
    } else if !in_background(std::env::args()) {
        window::show_connectors(&handle, None);
    }
    #[cfg(target_os = "linux")]
    {
        // Registers patchbay:// with the desktop (a .desktop handler and xdg-mime), so that a
        // link works without an installed package (a package's desktop entry does it there).
        if let Err(error) = link_handler::register_unless_packaged(app) {
            tracing::warn!("cannot register the patchbay:// link handler: {error}");
        }
    }
    #[cfg(target_os = "macos")]
    {
        // macOS delivers links as events, not arguments.
        use tauri_plugin_deep_link::DeepLinkExt;
        let on_link = handle.clone();
        app.deep_link().on_open_url(move |event| {
            for url in event.urls() {
                open_link(&on_link, deeplink::parse(url.as_str()));
            }
        });
    }

    let on_change = handle.clone();
    let watcher = watch::watch(&paths, TICK, move || {
        let state = on_change.state::<AppState>();
        // A refresh Claude Code logged as rejected retires the credential (at most one tick,
        // 30 s, after Claude Code wrote it).
        state.refresher().scan_runtime_logs();
        state.refresh();
    });
    match watcher {
        Ok(w) => *app.state::<AppState>().watch.lock().unwrap() = Some(w),
        // The tray still works without live updates; the 30 s tick is part of the watcher, so
        // say so loudly.
        Err(error) => tracing::error!("live updates are off: {error}"),
    }
    // A token a runtime rotated (Claude Code refreshing by itself) is adopted within a second and
    // shown; the adoption's vault write also wakes the watcher above, whose status then adopts
    // nothing more.
    let on_adopted = handle.clone();
    match bridges.watch(move |adopted| {
        if !adopted.is_empty() {
            on_adopted.state::<AppState>().refresh();
        }
    }) {
        Ok(w) => *app.state::<AppState>().store_watch.lock().unwrap() = Some(w),
        Err(error) => tracing::warn!("runtime rotations are not watched: {error}"),
    }
    // The MCP gateway (/mcp/NAME on 127.0.0.1:3119 and [::1]) for clients Patchbay cannot
    // write tokens for; a taken port is logged, not fatal.
    // A step-up or a moved authorization server asks for consent from the app, in the browser.
    let upstreams = patchbay_gateway::Upstreams::new(
        app.state::<AppState>().core.clone(),
        Some(app.state::<AppState>().refresher().clone()),
    )
    .with_authorizer(app.state::<AppState>().authorizer().clone());
    // Its consents wait in the window too: offered on the desk, and pushed as they change.
    let on_consents = handle.clone();
    tauri::async_runtime::spawn(async move {
        match patchbay_gateway::Gateway::bind(upstreams, Default::default()).await {
            Ok(gateway) => {
                let desk = gateway.consent_desk();
                let _ = on_consents
                    .state::<AppState>()
                    .consent_desk
                    .set(desk.clone());
                tauri::async_runtime::spawn(push_consents(on_consents, desk));
                gateway.serve(std::future::pending()).await
            }
            Err(error) => tracing::warn!("the MCP gateway is off: {error}"),
        }
    });
    // Tokens the user already holds (Claude Code, Codex, mcp-remote) are adopted with their
    // client, once at start, on a task: it talks to the issuers for their token endpoints.
    let on_imported = handle.clone();
    let import_core = app.state::<AppState>().core.clone();
    tauri::async_runtime::spawn(async move {
        match patchbay_core::import::import_from_this_machine(&import_core).await {
            Ok(report) if !report.adopted.is_empty() => {
                tracing::info!(
                    adopted = report.adopted.len(),
                    "adopted tokens already held"
                );
                on_imported.state::<AppState>().refresh();
            }
            Ok(_) => {}
            Err(error) => tracing::warn!("cannot adopt the tokens already held: {error}"),
        }
    });
    // The refresher of record: a pass now, every interval, on resume from sleep, and when a
    // credential's renewal time comes.
    let settings = Settings::load(&paths.config_dir).unwrap_or_else(|error| {
        tracing::warn!("{error}; using the default settings");
        Settings::default()
    });
    let on_pass = handle.clone();
    let task = tauri::async_runtime::spawn(schedule::run(
        refresher,
        app.state::<AppState>().core.clone(),
        settings.refresh_interval,
        move |_reason, _report| {
            on_pass.state::<AppState>().refresh();
        },
    ));
    *app.state::<AppState>().schedule.lock().unwrap() = Some(task);
    // The periodic connection check is opt-in (`checkIntervalMinutes` in settings.json).
    if let Some(interval) = settings.check_interval {
        let on_checked = handle.clone();
        let task =
            tauri::async_runtime::spawn(schedule::run_checks(checker, interval, move |_checks| {
                let _ = on_checked.emit(HEALTH_EVENT, ());
                on_checked.state::<AppState>().refresh();
            }));
        *app.state::<AppState>().checks.lock().unwrap() = Some(task);
    }
    Ok(())
}

/// Act on a `patchbay://` link: open the window at the row and ask whether to authorize it (any
/// program or page can open a link, so a link never starts consent by itself). A link that does
/// not parse is logged (never echoed) and only shows the window.
fn open_link<R: Runtime>(app: &AppHandle<R>, link: Result<DeepLink, DeepLinkError>) {
    match link {
        Ok(DeepLink::Authorize { connector }) => {
            // A checked name (deeplink::parse); scripts/ci/package.sh waits for this line.
            tracing::info!(connector = %connector, "a patchbay://authorize link arrived");
            window::ask_to_authorize(app, &connector)
        }
        Err(error) => {
            tracing::warn!("ignoring a patchbay:// link: {error}");
            window::show_connectors(app, None);
        }
    }
}

/// Whether a launch with these arguments stays in the tray (`--background`, and not `--show`).
fn in_background<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> bool {
    let (mut background, mut show) = (false, false);
    for arg in args.into_iter().skip(1) {
        background |= arg.as_ref() == BACKGROUND_FLAG;
        show |= arg.as_ref() == SHOW_FLAG;
    }
    background && !show
}

/// What `patchbay-app --help` or `--version` prints instead of starting the app (`None`: start
/// it). Any other argument is the app's own (a link, `--background`, `--show`).
pub fn answer_without_starting<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> Option<String> {
    let version = format!("patchbay-app {}", env!("CARGO_PKG_VERSION"));
    args.into_iter()
        .skip(1)
        .find_map(|arg| match arg.as_ref() {
            "--version" | "-V" => Some(version.clone()),
            "--help" | "-h" => Some(format!(
                "{version}: Patchbay in the tray, and its Connectors window.\n\n\
                 Usage: patchbay-app [--background | --show | patchbay://LINK]\n\n\
                 \x20 {BACKGROUND_FLAG}    start in the tray only (the launch at login)\n\
                 \x20 {SHOW_FLAG}          open the Connectors window (a running app shows its own)\n\
                 \x20 patchbay://LINK  open a patchbay:// link (patchbay://authorize/NAME)\n\
                 \x20 -h, --help      print this help\n\
                 \x20 -V, --version   print the version\n\n\
                 Everything the window does, the `patchbay` command does too: `patchbay --help`."
            )),
            _ => None,
        })
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
    // The tray draws no OpenGL: GTK is not to load a renderer for it (window.rs says why).
    window::skip_gl_at_start();

    let built = tauri::Builder::default()
        // First, so that a second launch only shows the running one's window (a second
        // --background launch, e.g. at login, changes nothing), or hands it the link it was
        // started with.
        .plugin(tauri_plugin_single_instance::init(
            |app, argv, _cwd| match deeplink::from_args(&argv) {
                Some(link) => open_link(app, link),
                None if in_background(&argv) => {}
                None => window::show_connectors(app, None),
            },
        ))
        .plugin(tauri_plugin_deep_link::init())
        .invoke_handler(tauri::generate_handler![
            commands::get_status,
            commands::delete_unclaimed_credential,
            commands::start_authorization,
            commands::enter_client,
            commands::cancel_authorization,
            commands::reopen_authorization,
            commands::set_connector_key,
            commands::add_custom_connector,
            commands::probe_remote_url,
            commands::clear_connector_key,
            commands::complete_authorization,
            commands::add_to_runtime,
            commands::refresh_connector,
            commands::disconnect_connector,
            commands::check_connector,
            commands::get_health_board,
            commands::write_back_transport,
            commands::enable_connector,
            commands::disable_connector,
            commands::manage_connector,
            commands::client_targets,
            commands::add_to_client,
            commands::switch_client_entry,
            commands::switch_candidates,
            commands::preview_add_to_client,
            commands::preview_switch_client_entry,
            commands::undo_client_write,
            commands::gateway_clients,
            commands::revoke_gateway_client,
            commands::consent_requests,
            commands::answer_consent,
            commands::get_launch_at_login,
            commands::set_launch_at_login,
            commands::page_listening,
        ])
        .setup(setup)
        .build(tauri::generate_context!());
    let app = match built {
        Ok(app) => app,
        Err(error) => {
            eprintln!("Patchbay could not start: {error}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| match event {
        // Closing the Connectors window must not quit a tray app; "Quit" calls exit(0), which
        // carries a code.
        RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        // Stop the loopback receiver if a flow is still pending.
        RunEvent::Exit => {
            if let Some(state) = app.try_state::<AppState>() {
                for task in [&state.schedule, &state.checks] {
                    if let Some(task) = task.lock().unwrap_or_else(|p| p.into_inner()).take() {
                        task.abort();
                    }
                }
                tauri::async_runtime::block_on(state.authorizer.shutdown());
            }
        }
        _ => {}
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_and_version_answer_without_starting_the_app() {
        let version = answer_without_starting(["patchbay-app", "--version"]).unwrap();
        assert_eq!(
            version,
            format!("patchbay-app {}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(
            answer_without_starting(["patchbay-app", "-V"]),
            Some(version)
        );
        let help = answer_without_starting(["patchbay-app", "--help"]).unwrap();
        assert!(
            help.contains("--background") && help.contains("patchbay://LINK"),
            "{help}"
        );
        assert_eq!(answer_without_starting(["patchbay-app", "-h"]), Some(help));
        // The app's own arguments start it; so does a link that merely mentions a flag.
        for args in [
            vec!["patchbay-app"],
            vec!["patchbay-app", "--background"],
            vec!["patchbay-app", "--show"],
            vec!["patchbay-app", "patchbay://authorize/notion?x=--help"],
        ] {
            assert_eq!(answer_without_starting(&args), None, "{args:?}");
        }
    }
}
