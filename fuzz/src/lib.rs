//! Helpers shared by Patchbay's fuzz targets: splitting one input into several parts, a
//! per-process scratch directory for the parsers that read files, and a fuzzed MCP server on
//! loopback for the gateway's targets ([`upstream`]).

pub mod upstream;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The input as text (lossy: the parsers under test take `&str`).
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The first byte (a selector) and the rest; `None` for an empty input.
pub fn split_selector(data: &[u8]) -> Option<(u8, &[u8])> {
    data.split_first().map(|(first, rest)| (*first, rest))
}

/// The input before its first NUL and after it (all of it and nothing without one): two fields,
/// the second of which may hold anything.
pub fn split_at_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The input cut at NUL bytes: several independent fields from one input.
pub fn fields(data: &[u8]) -> Vec<String> {
    data.split(|b| *b == 0).map(text).collect()
}

/// A scratch directory for this fuzzing process (removed by nobody: it lives under the OS temp
/// dir and holds only the last input), unique per process so parallel jobs do not collide.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("patchbay-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the scratch directory");
        dir
    })
}

/// Writes `data` to `name` in the scratch directory and returns its path.
pub fn scratch_file(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch_dir().join(name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the scratch subdirectory");
    }
    std::fs::write(&path, data).expect("write the scratch file");
    path
}
