//! The tray icon: the badge image from patchbay-core, a tooltip with the headline, and a menu
//! listing what needs attention ("Authorize Notion…" starts that connector's authorization in the
//! Connectors window; the other lines open the window at their row), then "Open Connectors" and
//! "Quit". Left-click opens the window on Windows and macOS; on Linux (AppIndicator) every click
//! shows the menu.
//!
//! Never invisible: on Linux the icon reaches the panel over D-Bus (a StatusNotifierItem
//! registered with org.kde.StatusNotifierWatcher, its menu over com.canonical.dbusmenu). When no
//! StatusNotifier host is on the session bus (stock GNOME without the AppIndicator extension), or
//! the tray cannot be created at all, [`ensure_visible`] / [`no_tray`] say so once (a log line and
//! a desktop notification) and open the Connectors window; the needs-a-human notifications never
//! depend on the tray. macOS (menu bar) and Windows (notification area) always have a tray.

use crate::window;
use patchbay_core::badge;
use patchbay_core::tray_model::{TrayItem, TrayModel};
use patchbay_status::StatusReport;
use std::sync::Mutex;
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};

pub const TRAY_ID: &str = "patchbay";
const OPEN: &str = "open";
const QUIT: &str = "quit";
/// Rendered at 64 px; the OS scales it to the tray's size.
const ICON_SIZE: u32 = 64;

/// The badge for this report; the app's icon if the image cannot be used.
pub fn icon<R: Runtime>(app: &AppHandle<R>, report: &StatusReport) -> Option<Image<'static>> {
    // Counts degraded connectors, and tints red when any is (the core decides both).
    let img = badge::render_report(report, ICON_SIZE);
    if img.rgba.len() == (img.width * img.height * 4) as usize {
        Some(Image::new_owned(img.rgba, img.width, img.height))
    } else {
        app.default_window_icon().map(|i| i.clone().to_owned())
    }
}

/// The tray's menu, kept so that an update edits it in place: a panel then gets dbusmenu's own
/// change signals (ItemsPropertiesUpdated for a new label, LayoutUpdated for lines added or
/// removed) and a menu the user has open stays open. Replacing the whole menu instead makes
/// libayatana-appindicator export a new one and register the item with the panel again.
struct LiveMenu<R: Runtime> {
    menu: Menu<R>,
    headline: MenuItem<R>,
    /// One line per connector needing attention (from position [`FIRST_ROW`]), then the
    /// separator after them when there is any.
    rows: Vec<MenuItem<R>>,
    rows_end: Option<PredefinedMenuItem<R>>,
}

/// The headline and its separator come first.
const FIRST_ROW: usize = 2;

/// The app's one [`LiveMenu`], in Tauri's state.
struct TrayMenu<R: Runtime>(Mutex<Option<LiveMenu<R>>>);

impl<R: Runtime> LiveMenu<R> {
    fn build(app: &AppHandle<R>, model: &TrayModel) -> tauri::Result<LiveMenu<R>> {
        let menu = Menu::new(app)?;
        // AppIndicator trays show no tooltip: the headline heads the menu instead.
        let headline = MenuItem::with_id(app, "headline", &model.headline, false, None::<&str>)?;
        menu.append(&headline)?;
        menu.append(&PredefinedMenuItem::separator(app)?)?;
        menu.append(&MenuItem::with_id(
            app,
            OPEN,
            "Open Connectors",
            true,
            None::<&str>,
        )?)?;
        menu.append(&MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?)?;
        let mut live = LiveMenu {
            menu,
            headline,
            rows: Vec::new(),
            rows_end: None,
        };
        live.set_rows(app, model)?;
        Ok(live)
    }

    /// Bring the menu up to `model`, changing only what changed.
    fn edit(&mut self, app: &AppHandle<R>, model: &TrayModel) -> tauri::Result<()> {
        if self.headline.text()? != model.headline {
            self.headline.set_text(&model.headline)?;
        }
        let same_lines = self.rows.len() == model.items.len()
            && self
                .rows
                .iter()
                .zip(&model.items)
                .all(|(row, item)| row.id().as_ref() == item.id());
        if !same_lines {
            return self.set_rows(app, model);
        }
        for (row, item) in self.rows.iter().zip(&model.items) {
            if row.text()? != item.label {
                row.set_text(&item.label)?;
            }
        }
        Ok(())
    }

    /// Replace the connector lines (and the separator after them) with `model`'s.
    fn set_rows(&mut self, app: &AppHandle<R>, model: &TrayModel) -> tauri::Result<()> {
        for row in self.rows.drain(..) {
            self.menu.remove(&row)?;
        }
        if let Some(separator) = self.rows_end.take() {
            self.menu.remove(&separator)?;
        }
        for (i, item) in model.items.iter().enumerate() {
            let row = MenuItem::with_id(app, item.id(), &item.label, true, None::<&str>)?;
            self.menu.insert(&row, FIRST_ROW + i)?;
            self.rows.push(row);
        }
        if !model.items.is_empty() {
            let separator = PredefinedMenuItem::separator(app)?;
            self.menu
                .insert(&separator, FIRST_ROW + model.items.len())?;
            self.rows_end = Some(separator);
        }
        Ok(())
    }
}

/// Create the tray icon for the first report.
pub fn create<R: Runtime>(app: &AppHandle<R>, report: &StatusReport) -> tauri::Result<TrayIcon<R>> {
    let model = TrayModel::of(report);
    let live = LiveMenu::build(app, &model)?;
    let mut builder = TrayIconBuilder::with_id(TRAY_ID)
        .tooltip(&model.tooltip)
        .menu(&live.menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| {
            let id = event.id().as_ref();
            // Said in the log, so a click is traceable (the tray end-to-end test reads it).
            match id {
                OPEN => {
                    tracing::info!("tray menu: open the Connectors window");
                    window::show_connectors(app, None)
                }
                QUIT => {
                    tracing::info!("tray menu: quit");
                    app.exit(0)
                }
                _ => match TrayItem::parse_id(id) {
                    Some((name, true)) => {
                        tracing::info!(connector = name, "tray menu: authorize at the row");
                        window::authorize(app, name)
                    }
                    Some((name, false)) => {
                        tracing::info!(connector = name, "tray menu: open the window at the row");
                        window::show_connectors(app, Some(name))
                    }
                    None => {}
                },
            }
        })
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                window::show_connectors(tray.app_handle(), None);
            }
        });
    if let Some(icon) = icon(app, report) {
        builder = builder.icon(icon);
    }
    let tray = builder.build(app)?;
    app.manage(TrayMenu(Mutex::new(Some(live))));
    Ok(tray)
}

/// Bring the tray up to date with a new report.
pub fn update<R: Runtime>(app: &AppHandle<R>, report: &StatusReport) {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return;
    };
    let model = TrayModel::of(report);
    let state = app.try_state::<TrayMenu<R>>();
    // Held across the icon and the menu, so two updates at once never leave one's icon with the
    // other's menu.
    let mut live = state
        .as_ref()
        .map(|s| s.0.lock().unwrap_or_else(|p| p.into_inner()));
    let result = (|| -> tauri::Result<()> {
        tray.set_icon(icon(app, report))?;
        tray.set_tooltip(Some(&model.tooltip))?;
        let Some(live) = live.as_deref_mut() else {
            return Ok(());
        };
        let edited = match live.as_mut() {
            Some(menu) => menu.edit(app, &model),
            None => Ok(()),
        };
        if let Err(error) = edited {
            // A menu half edited is replaced by a fresh one.
            tracing::warn!("cannot edit the tray menu in place ({error}); replacing it");
            let fresh = LiveMenu::build(app, &model)?;
            tray.set_menu(Some(fresh.menu.clone()))?;
            *live = Some(fresh);
        }
        Ok(())
    })();
    if let Err(error) = result {
        tracing::warn!("cannot update the tray icon: {error}");
    }
}

/// What a missing tray costs the user, said once in the log and in a desktop notification; the
/// window opens instead.
const NO_TRAY_TITLE: &str = "Patchbay has no tray icon here";
const NO_TRAY_BODY: &str = "This desktop shows no tray icons, so the Connectors window is open instead. \
On GNOME, the \"AppIndicator and KStatusNotifierItem Support\" extension shows them. Problems still \
raise notifications; start Patchbay again to bring the window back.";

/// The tray is not shown (`why`): say so once and open the Connectors window.
pub fn no_tray<R: Runtime>(app: &AppHandle<R>, why: &str) {
    tracing::warn!(
        "no tray icon: {why}; opening the Connectors window instead (on GNOME, install the \
         \"AppIndicator and KStatusNotifierItem Support\" extension)"
    );
    window::show_connectors(app, None);
    // Waiting for a notification server must not hold anything up.
    let spawned = std::thread::Builder::new()
        .name("no-tray-notice".into())
        .spawn(|| {
            let shown = notify_rust::Notification::new()
                .appname("Patchbay")
                .summary(NO_TRAY_TITLE)
                .body(NO_TRAY_BODY)
                .show();
            if let Err(error) = shown {
                tracing::warn!("cannot show a notification: {error}");
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot show a notification: {error}");
    }
}

/// Check, off the main thread, that something shows the tray icon; when nothing does, [`no_tray`].
/// A panel starting at login with Patchbay gets [`host::GRACE`] to appear.
pub fn ensure_visible<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let app = app.clone();
        let spawned = std::thread::Builder::new()
            .name("tray-host".into())
            .spawn(move || match host::wait(host::GRACE) {
                Ok(()) => tracing::info!("tray host: a StatusNotifier host shows the tray icon"),
                Err(why) => no_tray(&app, &why),
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot look for a tray host: {error}");
        }
    }
    #[cfg(not(all(unix, not(target_os = "macos"))))]
    let _ = app;
}

/// Whether a StatusNotifier host (a panel that shows AppIndicator / KStatusNotifierItem icons)
/// is on the session bus: org.kde.StatusNotifierWatcher is owned and says a host registered.
#[cfg(all(unix, not(target_os = "macos")))]
mod host {
    use std::time::{Duration, Instant};
    use zbus::blocking::{connection, fdo::DBusProxy, Connection, Proxy};

    const WATCHER: &str = "org.kde.StatusNotifierWatcher";
    const WATCHER_PATH: &str = "/StatusNotifierWatcher";
    /// How long a panel may take to come up after Patchbay (both start at login).
    pub const GRACE: Duration = Duration::from_secs(3);
    const POLL: Duration = Duration::from_millis(200);
    /// Every call on the bus is bounded.
    const CALL_TIMEOUT: Duration = Duration::from_secs(2);

    /// `Ok` as soon as a host is present; after `grace`, why there is none.
    pub fn wait(grace: Duration) -> Result<(), String> {
        let connection = connection::Builder::session()
            .map(|b| b.method_timeout(CALL_TIMEOUT))
            .and_then(|b| b.build())
            .map_err(|e| format!("no D-Bus session bus ({e})"))?;
        let deadline = Instant::now() + grace;
        loop {
            let why = match present(&connection) {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                return Err(why);
            }
            std::thread::sleep(POLL);
        }
    }

    fn present(connection: &Connection) -> Result<(), String> {
        let bus = DBusProxy::new(connection).map_err(|e| e.to_string())?;
        let name = WATCHER
            .try_into()
            .map_err(|e: zbus::names::Error| e.to_string())?;
        if !bus.name_has_owner(name).map_err(|e| e.to_string())? {
            return Err(format!(
                "no StatusNotifier host on the session bus ({WATCHER} has no owner)"
            ));
        }
        let watcher =
            Proxy::new(connection, WATCHER, WATCHER_PATH, WATCHER).map_err(|e| e.to_string())?;
        match watcher.get_property::<bool>("IsStatusNotifierHostRegistered") {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!(
                "no StatusNotifier host on the session bus ({WATCHER} has no host registered)"
            )),
            Err(error) => Err(format!("{WATCHER} did not answer ({error})")),
        }
    }
}
