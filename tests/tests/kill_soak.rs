//! SIGKILL at random moments of the CLI's writes beside other programs' files (issue 23): a
//! `bridge sync` writing Claude Code's credential file, an `add-to cursor` writing Cursor's
//! config and its one-time backup. After every kill: the file is whole, a backup is absent or a
//! whole copy of the original, a temp file of ours is readable by its owner alone; every few
//! kills a run to the end must succeed (a lock left behind would make it fail as busy); and once
//! Patchbay has started again nothing of ours is left at all.
//!
//! 1,000 kills by default (`PATCHBAY_KILLS` sets another number, split between the two); the
//! delays are uniform over one whole run's duration, measured first, from a seed that is printed
//! (`PATCHBAY_KILL_SEED` replays it).

use chrono::{Duration as ChronoDuration, Utc};
use patchbay_e2e::{require_keychain, Sandbox};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The reference's worked example: `fx`, `{"type":"http","url":"http://localhost:3100/mcp"}`.
const KEY: &str = "fx|528e1818a7ba21cf";
/// A run to the end every this many kills.
const CHECK_EVERY: usize = 25;

fn kills_each() -> usize {
    std::env::var("PATCHBAY_KILLS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1_000)
        / 2
}

/// xorshift64*, seeded from the clock unless `PATCHBAY_KILL_SEED` says.
struct Rng(u64);

impl Rng {
    fn new(what: &str) -> Rng {
        let seed = std::env::var("PATCHBAY_KILL_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        println!("{what}: seed {seed} (replay: PATCHBAY_KILL_SEED={seed})");
        Rng(seed)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1)
    }
}

/// Runs `command` and kills it (SIGKILL) after `delay`; whether it was still running then.
fn kill_after(mut command: Command, delay: Duration) -> bool {
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// How long `command` takes to the end (it must succeed).
fn timed_run(mut command: Command) -> Duration {
    let started = Instant::now();
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// Files in `dir` named like ours (temp files, lock files, lock notes, staging directories).
fn ours_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            // `.patchbay.` (temps, lock files), `.patchbay-owner` (lock notes), `.patchbay-new.`
            // (a lock being made); not the one-time backup, which is the user's to keep.
            name.contains(".patchbay") && !name.ends_with(".patchbay-backup")
        })
        .collect()
}

/// Every temp file of ours in `dir` is readable by no more people than `file` itself (a copy
/// of a credential store, 0600, is its owner's alone); returns how many there are.
fn temps_no_wider_than(dir: &Path, file: &Path) -> usize {
    let allowed = std::fs::metadata(file).unwrap().permissions().mode() & 0o077;
    let temps: Vec<_> = ours_in(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    for temp in &temps {
        // Gone between the listing and now: a run may have just removed it.
        let Ok(meta) = std::fs::metadata(temp) else {
            continue;
        };
        assert_eq!(
            meta.permissions().mode() & 0o077 & !allowed,
            0,
            "{} is readable by more than {} is",
            temp.display(),
            file.display()
        );
    }
    temps.len()
}

#[test]
fn killed_bridge_syncs_leave_no_secret_copy_and_no_lock_that_blocks_the_next() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("bridge.json");
    let claude = sandbox.path().join("claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join(".claude.json"),
        json!({ "mcpServers": { "fx": { "type": "http", "url": "http://localhost:3100/mcp" } } })
            .to_string(),
    )
    .unwrap();
    // Claude Code's own account beside ours, padded so a write takes long enough to be cut.
    let original = json!({
        "claudeAiOauth": { "accessToken": "sk-ant-user", "refreshToken": "user-refresh",
                           "expiresAt": 1_900_000_000_000_i64, "scopes": ["user:inference"] },
        "x-padding": "p".repeat(256 * 1024),
    })
    .to_string();
    let credentials = claude.join(".credentials.json");
    let reset = || {
        // As Claude Code writes: a temp file, then a rename (never in place).
        let tmp = claude.join(".credentials.json.tmp.test");
        std::fs::write(&tmp, &original).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&tmp, &credentials).unwrap();
    };
    reset();
    sandbox.store_fx_credential(
        &catalog,
        KEY,
        "at-kill-soak",
        Some("rt-kill-soak"),
        Utc::now() + ChronoDuration::hours(24),
    );
    let sync = || {
        let mut command = sandbox.command();
        command.args(["bridge", "sync", "--catalog"]).arg(&catalog);
        command
    };
    let whole = timed_run(sync());
    let written: Value = serde_json::from_slice(&std::fs::read(&credentials).unwrap()).unwrap();
    assert_eq!(written["mcpOAuth"][KEY]["accessToken"], "at-kill-soak");

    let mut rng = Rng::new("bridge sync kills");
    let (mut killed_running, mut temps_seen, mut locks_seen) = (0, 0, 0);
    let started = Instant::now();
    for i in 0..kills_each() {
        reset();
        let delay = Duration::from_micros(rng.below(whole.as_micros() as u64));
        killed_running += usize::from(kill_after(sync(), delay));
        // Whatever the moment, the file is whole: Claude Code's account is there.
        let now: Value = serde_json::from_slice(&std::fs::read(&credentials).unwrap())
            .unwrap_or_else(|e| panic!("kill {i} after {delay:?} left a broken file: {e}"));
        assert_eq!(now["claudeAiOauth"]["accessToken"], "sk-ant-user");
        temps_seen += temps_no_wider_than(&claude, &credentials);
        locks_seen += usize::from(claude.join(".storage-write.lock").exists());
        if i % CHECK_EVERY == CHECK_EVERY - 1 {
            reset();
            // A lock a killed run left must not make this one wait out its timeout and fail.
            timed_run(sync());
        }
    }
    println!(
        "bridge sync: {} kills in {:?} ({killed_running} while running; one run takes {whole:?}); left behind at some point: {temps_seen} temp files, {locks_seen} Claude Code locks",
        kills_each(),
        started.elapsed()
    );

    // The next start removes what is left; then nothing of ours remains beside the file.
    sandbox.run(&["status"]);
    assert_eq!(ours_in(&claude), Vec::<PathBuf>::new());
    assert!(!claude.join(".storage-write.lock").exists());
}

#[test]
fn killed_add_to_leaves_whole_configs_and_whole_or_no_backups() {
    let sandbox = Sandbox::new(false);
    let home = sandbox.path().join("home");
    let cursor = home.join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    let config = cursor.join("mcp.json");
    let original = serde_json::to_string_pretty(&json!({
        "mcpServers": { "other": { "command": "npx", "args": ["-y", "other-server"] } },
        "x-padding": "p".repeat(256 * 1024),
    }))
    .unwrap();
    let backup = patchbay_runtimes::clients::write::backup_path(&config);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "linear": { "type": "http", "url": "https://mcp.linear.app/mcp" } } })
            .to_string(),
    );
    let reset = || {
        let tmp = cursor.join("mcp.json.test-tmp");
        std::fs::write(&tmp, &original).unwrap();
        std::fs::rename(&tmp, &config).unwrap();
        let _ = std::fs::remove_file(&backup);
    };
    reset();
    let add = || {
        let mut command = sandbox.command();
        command
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .current_dir(&home)
            .args(["add-to", "cursor", "linear", "--catalog"])
            .arg(&catalog);
        command
    };
    let whole = timed_run(add());
    assert!(std::fs::read_to_string(&config).unwrap().contains("linear"));
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);

    let mut rng = Rng::new("add-to kills");
    let (mut killed_running, mut temps_seen, mut backups_seen) = (0, 0, 0);
    let started = Instant::now();
    for i in 0..kills_each() {
        reset();
        let delay = Duration::from_micros(rng.below(whole.as_micros() as u64));
        killed_running += usize::from(kill_after(add(), delay));
        let text = std::fs::read_to_string(&config).unwrap();
        let now: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("kill {i} after {delay:?} left a broken config: {e}"));
        assert!(
            now["mcpServers"]["other"].is_object(),
            "the user's entry is kept"
        );
        match std::fs::read_to_string(&backup) {
            Ok(copy) => {
                assert_eq!(copy, original, "kill {i} after {delay:?}: a partial backup");
                backups_seen += 1;
            }
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        }
        temps_seen += temps_no_wider_than(&cursor, &config);
        if i % CHECK_EVERY == CHECK_EVERY - 1 {
            reset();
            timed_run(add());
        }
    }
    println!(
        "add-to cursor: {} kills in {:?} ({killed_running} while running; one run takes {whole:?}); whole backups after a kill: {backups_seen}; temp files left at some point: {temps_seen}",
        kills_each(),
        started.elapsed()
    );

    // `status` exits 1 here (no keychain: "needs attention"); it started, which is what counts.
    sandbox
        .command()
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(ours_in(&cursor), Vec::<PathBuf>::new());
}
