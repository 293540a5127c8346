//! Reads this crate's tauri.conf.json, as any Tauri app does.

fn main() {
    tauri_build::build();
}
