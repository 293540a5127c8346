//! The framework's floor: the smallest Tauri v2 tray app, an icon with a one-line menu ("Quit")
//! and no window, built in the same run and with the same tauri features as Patchbay's app.
//! tests/bench/footprint.sh measures its idle memory and wakeups beside Patchbay's.

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::RunEvent;

fn main() {
    let app = tauri::Builder::default()
        .setup(|app| {
            let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
            let menu = Menu::with_items(app, &[&quit])?;
            let mut tray = TrayIconBuilder::with_id("floor")
                .tooltip("Tauri tray floor")
                .menu(&menu)
                .on_menu_event(|app, event| {
                    if event.id().as_ref() == "quit" {
                        app.exit(0);
                    }
                });
            if let Some(icon) = app.default_window_icon() {
                tray = tray.icon(icon.clone());
            }
            tray.build(app)?;
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(error) => {
            eprintln!("the floor app could not start: {error}");
            std::process::exit(1);
        }
    };
    // A tray app keeps running with no window.
    app.run(|_, event| {
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
}
