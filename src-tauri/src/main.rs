//! The tray app's entry point; everything lives in the library.

// No console window next to the tray on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    patchbay_app_lib::run();
}
