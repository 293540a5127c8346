//! The tray app's entry point; everything lives in the library.

// No console window next to the tray on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // `--help` and `--version` answer and exit: they must not start (or show) the app.
    match patchbay_app_lib::answer_without_starting(std::env::args()) {
        Some(text) => println!("{text}"),
        None => patchbay_app_lib::run(),
    }
}
