//! The real app's window driven through WebDriver: tauri-driver (crates.io, `cargo install
//! tauri-driver --version '^2' --locked`, scripts/setup.sh) in front of Debian's WebKitWebDriver
//! (webkit2gtk-driver), on free loopback ports, with plain W3C WebDriver calls over HTTP (std's TcpStream: the driver is on loopback).
//!
//! tauri-driver runs in a process group of its own with the session's environment; WebKitWebDriver
//! and the app it launches are in that group, so stopping it ([`Drop`]) ends the session, then
//! signals the whole group by its id and waits for every process in it to be gone: no test leaves
//! a driver, a WebKitWebDriver or an app behind.

use crate::desktop::{poll, DesktopSession};
use crate::peers::two_free_ports;
use serde_json::{json, Value};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// One WebDriver call (a new session starts the app: WebKitGTK, the keychain, on 2 loaded cores).
const CALL: Duration = Duration::from_secs(60);

/// Where a program is: on PATH, else in the given places.
fn find_program(name: &str, also: &[PathBuf]) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(name))
        .chain(also.iter().cloned())
        .find(|p| p.is_file())
}

/// tauri-driver: on PATH, or where `cargo install` puts it.
pub fn tauri_driver_bin() -> Option<PathBuf> {
    let mut cargo_bins = Vec::new();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        cargo_bins.push(PathBuf::from(home).join("bin/tauri-driver"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        cargo_bins.push(PathBuf::from(home).join(".cargo/bin/tauri-driver"));
    }
    find_program("tauri-driver", &cargo_bins)
}

/// Debian's WebKitWebDriver (apt: webkit2gtk-driver).
pub fn webkit_webdriver_bin() -> Option<PathBuf> {
    find_program(
        "WebKitWebDriver",
        &[PathBuf::from("/usr/bin/WebKitWebDriver")],
    )
}

/// What is missing to drive the real window here, if anything.
pub fn missing_for_webdriver() -> Option<String> {
    let mut missing = Vec::new();
    if tauri_driver_bin().is_none() {
        missing.push("tauri-driver (scripts/setup.sh: cargo install tauri-driver --version 2.1.0)");
    }
    if webkit_webdriver_bin().is_none() {
        missing.push("WebKitWebDriver (apt: webkit2gtk-driver)");
    }
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        missing.push("an X display (scripts/test.sh runs the tests under xvfb-run)");
    }
    for (program, what) in [
        ("dbus-daemon", "dbus-daemon (apt: dbus)"),
        (
            "gnome-keyring-daemon",
            "gnome-keyring-daemon (apt: gnome-keyring)",
        ),
    ] {
        if find_program(program, &[]).is_none() {
            missing.push(what);
        }
    }
    (!missing.is_empty()).then(|| format!("needs {}", missing.join(", ")))
}

/// A running tauri-driver and, once [`open`](TauriDriver::open) is called, its session: the app
/// with its window.
pub struct TauriDriver {
    child: Child,
    port: u16,
    log: PathBuf,
    session: Option<String>,
}

impl TauriDriver {
    /// tauri-driver on free ports, in `session`'s environment, its output in `log`.
    pub fn start(session: &DesktopSession, log: &Path) -> TauriDriver {
        let driver = tauri_driver_bin()
            .unwrap_or_else(|| panic!("{}", missing_for_webdriver().unwrap_or_default()));
        let native = webkit_webdriver_bin().expect("WebKitWebDriver (apt: webkit2gtk-driver)");
        let (port, native_port) = two_free_ports();
        let file = std::fs::File::create(log).expect("driver log");
        let mut cmd = Command::new(driver);
        session.environment(&mut cmd);
        use std::os::unix::process::CommandExt;
        cmd.args(["--port", &port.to_string()])
            .args(["--native-port", &native_port.to_string()])
            .arg("--native-driver")
            .arg(native)
            // Its own group: stopping it stops WebKitWebDriver and the app too.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log"))
            .stderr(file);
        let child = cmd.spawn().expect("tauri-driver");
        let mut driver = TauriDriver {
            child,
            port,
            log: log.to_owned(),
            session: None,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        // Both: tauri-driver answers a session request it cannot hand to WebKitWebDriver yet
        // with a closed connection.
        while !(crate::peers::listening(port) && crate::peers::listening(native_port)) {
            if let Ok(Some(status)) = driver.child.try_wait() {
                panic!("tauri-driver exited ({status}):\n{}", driver.log());
            }
            assert!(
                Instant::now() < deadline,
                "tauri-driver and WebKitWebDriver did not listen:\n{}",
                driver.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }

    /// What tauri-driver, WebKitWebDriver and the app printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The process group of tauri-driver, WebKitWebDriver and the app.
    pub fn process_group(&self) -> u32 {
        self.child.id()
    }

    /// One WebDriver command; its `value`, or a failure naming the WebDriver error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match http(self.port, method, path, body.as_ref(), CALL) {
            Ok((status, body)) if status < 400 => body["value"].clone(),
            Ok((status, body)) => panic!(
                "WebDriver {method} {path}: {status} {} ({})",
                body["value"]["error"], body["value"]["message"]
            ),
            Err(error) => panic!("WebDriver {method} {path}: {error}\n{}", self.log()),
        }
    }

    fn session_path(&self, rest: &str) -> String {
        let id = self.session.as_deref().expect("a WebDriver session");
        format!("/session/{id}{rest}")
    }

    /// A session: tauri-driver has WebKitWebDriver start `app` with `args`, and attaches to its
    /// web view. Returns how long that took.
    pub fn open(&mut self, app: &Path, args: &[&str]) -> Duration {
        let started = Instant::now();
        let capabilities = json!({
            "capabilities": { "alwaysMatch": { "tauri:options": {
                "application": app, "args": args,
            } } }
        });
        let value = self.call("POST", "/session", Some(capabilities));
        let id = value["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {value}"))
            .to_owned();
        self.session = Some(id);
        started.elapsed()
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the window; its return value.
    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Polls `script` until it returns something other than null or false, within `limit`.
    pub fn wait_for(&self, limit: Duration, what: &str, script: &str, args: Value) -> Value {
        let mut last = Value::Null;
        let deadline = Instant::now() + limit;
        loop {
            last = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.execute(script, args.clone())
            })) {
                Ok(value) => value,
                // A page still loading answers with an error; keep polling.
                Err(_) => last,
            };
            if !(last.is_null() || last == Value::Bool(false)) {
                return last;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {limit:?} (last answer {last})"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The element `css` matches (the first), as a WebDriver reference.
    pub fn find(&self, css: &str) -> String {
        let value = self.call(
            "POST",
            &self.session_path("/element"),
            Some(json!({ "using": "css selector", "value": css })),
        );
        value[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element reference for {css}: {value}"))
            .to_owned()
    }

    /// Clicks the element `css` matches as a user does (WebKit synthesizes the mouse events).
    /// A row re-rendered between the find and the click (a status change replaces its buttons)
    /// answers "stale element reference": the button is found again, as a user's pointer would
    /// land on the new one; a few times at most.
    /// Waits (up to `limit`) for an element matching `css`, `what` it is, then clicks it: for a
    /// control the page adds after an answer (a dialog's button, a notice's Undo).
    pub fn click_when_shown(&self, limit: Duration, what: &str, css: &str) {
        self.wait_for(
            limit,
            what,
            "return document.querySelector(arguments[0]) ? true : null;",
            serde_json::json!([css]),
        );
        self.click(css);
    }

    pub fn click(&self, css: &str) {
        for _ in 0..5 {
            let element = self.find(css);
            let path = self.session_path(&format!("/element/{element}/click"));
            match http(self.port, "POST", &path, Some(&json!({})), CALL) {
                Ok((status, _)) if status < 400 => return,
                Ok((404, body)) if body["value"]["error"] == "stale element reference" => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok((status, body)) => panic!(
                    "WebDriver POST {path}: {status} {} ({})",
                    body["value"]["error"], body["value"]["message"]
                ),
                Err(error) => panic!("WebDriver POST {path}: {error}\n{}", self.log()),
            }
        }
        panic!("{css}: still replaced after 5 clicks (the page re-renders it without end?)");
    }

    /// Types `text` into the element `css` matches as a user does (WebDriver's Element Send
    /// Keys: it is focused, then each character is a key event).
    pub fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.call(
            "POST",
            &self.session_path(&format!("/element/{element}/value")),
            Some(json!({ "text": text })),
        );
    }

    /// The session's windows (WebDriver handles).
    pub fn window_handles(&self) -> Vec<Value> {
        self.call("GET", &self.session_path("/window/handles"), None)
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// A PNG of the window once what it shows has settled: after two animation frames, the
    /// same picture twice in a row (WebKit answers with the last frame it painted, which may
    /// predate the DOM a moment ago), within 10 s.
    pub fn settled_screenshot(&self) -> Vec<u8> {
        self.call(
            "POST",
            &self.session_path("/execute/async"),
            Some(json!({
                "script": "const done = arguments[arguments.length - 1];
                           requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
                "args": [],
            })),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = self.screenshot();
        loop {
            std::thread::sleep(Duration::from_millis(250));
            let next = self.screenshot();
            if next == last || Instant::now() > deadline {
                return next;
            }
            last = next;
        }
    }

    /// A PNG of the window (the web view's viewport), as WebKit last painted it.
    pub fn screenshot(&self) -> Vec<u8> {
        let encoded = self.call("GET", &self.session_path("/screenshot"), None);
        let encoded = encoded.as_str().expect("a base64 PNG");
        // coreutils' base64 decodes it: no crate for one call.
        let mut decode = Command::new("base64")
            .arg("-d")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("base64 (coreutils)");
        let mut input = decode.stdin.take().expect("stdin");
        let owned = encoded.to_owned();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            input.write_all(owned.as_bytes())
        });
        let output = decode.wait_with_output().expect("base64 -d");
        writer.join().expect("writer").expect("write to base64 -d");
        assert!(output.status.success(), "base64 -d: {}", output.status);
        assert!(output.stdout.starts_with(b"\x89PNG"), "not a PNG");
        output.stdout
    }

    /// The processes still alive (not zombies) in the driver's process group.
    pub fn live_processes(&self) -> Vec<String> {
        live_in_group(self.process_group())
    }
}

/// One HTTP request to the driver on 127.0.0.1:`port`: HTTP/1.0, so the answer comes whole
/// (no chunks) and ends with the connection; its status and JSON body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
    limit: Duration,
) -> std::io::Result<(u16, Value)> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), limit)?;
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let invalid = |what: &str| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what}: {answer}"))
    };
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid("no HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("no status"))?;
    let json = serde_json::from_str(body).map_err(|_| invalid("not JSON"))?;
    Ok((status, json))
}

/// Live processes (pid and name) whose process group is `group`, from /proc.
fn live_in_group(group: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
            let (head, rest) = stat.rsplit_once(')')?;
            let comm = head.split_once('(')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let (state, pgrp) = (fields.first()?, fields.get(2)?.parse::<u32>().ok()?);
            (pgrp == group && *state != "Z").then(|| format!("{pid} {comm}"))
        })
        .collect()
}

fn signal_group(group: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, "--", &format!("-{group}")])
        .stderr(Stdio::null())
        .status();
}

impl Drop for TauriDriver {
    fn drop(&mut self) {
        let group = self.process_group();
        // Ending the session closes the app; bounded, since a test may be failing because the
        // driver hangs.
        if let Some(id) = self.session.take() {
            let _ = http(
                self.port,
                "DELETE",
                &format!("/session/{id}"),
                None,
                Duration::from_secs(10),
            );
        }
        signal_group(group, "-TERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !live_in_group(group).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(group, "-KILL");
        let _ = self.child.wait();
        if !std::thread::panicking() {
            poll(
                Duration::from_secs(5),
                "the driver's processes to be gone",
                || live_in_group(group).is_empty().then_some(()),
            );
        }
    }
}
