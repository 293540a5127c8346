//! The tray icon: the badge image from patchbay-core, a tooltip with the headline, and a menu
//! listing what needs attention ("Authorize Notion…" starts that connector's authorization in the
//! Connectors window; the other lines open the window at their row), then "Open Connectors" and
//! "Quit". Left-click opens the window on Windows and macOS; on Linux (AppIndicator) every click
//! shows the menu.

use crate::window;
use patchbay_core::badge;
use patchbay_core::tray_model::{TrayItem, TrayModel};
use patchbay_status::StatusReport;
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Runtime};

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

fn menu<R: Runtime>(app: &AppHandle<R>, model: &TrayModel) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(app)?;
    // AppIndicator trays show no tooltip: the headline heads the menu instead.
    menu.append(&MenuItem::with_id(
        app,
        "headline",
        &model.headline,
        false,
        None::<&str>,
    )?)?;
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    for item in &model.items {
        menu.append(&MenuItem::with_id(
            app,
            item.id(),
            &item.label,
            true,
            None::<&str>,
        )?)?;
    }
    if !model.items.is_empty() {
        menu.append(&PredefinedMenuItem::separator(app)?)?;
    }
    menu.append(&MenuItem::with_id(
        app,
        OPEN,
        "Open Connectors",
        true,
        None::<&str>,
    )?)?;
    menu.append(&MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?)?;
    Ok(menu)
}

/// Create the tray icon for the first report.
pub fn create<R: Runtime>(app: &AppHandle<R>, report: &StatusReport) -> tauri::Result<TrayIcon<R>> {
    let model = TrayModel::of(report);
    let mut builder = TrayIconBuilder::with_id(TRAY_ID)
        .tooltip(&model.tooltip)
        .menu(&menu(app, &model)?)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| {
            let id = event.id().as_ref();
            match id {
                OPEN => window::show_connectors(app, None),
                QUIT => app.exit(0),
                _ => match TrayItem::parse_id(id) {
                    Some((name, true)) => window::authorize(app, name),
                    Some((name, false)) => window::show_connectors(app, Some(name)),
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
    builder.build(app)
}

/// Bring the tray up to date with a new report.
pub fn update<R: Runtime>(app: &AppHandle<R>, report: &StatusReport) {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return;
    };
    let model = TrayModel::of(report);
    let result = (|| -> tauri::Result<()> {
        tray.set_icon(icon(app, report))?;
        tray.set_tooltip(Some(&model.tooltip))?;
        tray.set_menu(Some(menu(app, &model)?))?;
        Ok(())
    })();
    if let Err(error) = result {
        tracing::warn!("cannot update the tray icon: {error}");
    }
}
