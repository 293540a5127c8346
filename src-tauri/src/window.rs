//! The Connectors window, created on demand (the tray needs no web view) and shown, unminimized
//! and focused when it already exists. Closing it hides it for [`KEEP_AFTER_CLOSE`] (one minute;
//! `PATCHBAY_WINDOW_KEEP_SECS` overrides it, 0 destroys at once), so that opening it again within
//! that time only shows it, rows already drawn and kept current by the status events. A window
//! still hidden when the time is up is destroyed, web view and all (the app keeps running, see
//! `run`), so WebKit's web process exits with it; the next request creates it again.
//!
//! WebKitGTK keeps its network process after the last web view closes (Tauri keeps the web context
//! for reuse on Linux, tauri-apps/tauri#14626), about as large as the app itself. The window
//! stores nothing (no cookies, no web storage), so once the window is gone and its web process has
//! exited, that process is ended too ([`end_network_process`]); WebKit starts a new one for the
//! next window.
//!
//! GTK 3 on X11 sets up OpenGL when it opens the display (to pick its visuals), which loads Mesa
//! and, without a GPU driver, its LLVM-based software renderer: about 20 MB that the tray never
//! uses. [`skip_gl_at_start`] turns that off (GDK_GL=disable, unless the user set GDK_GL) before
//! GTK starts, and [`gtk_started`] takes the variable out of the environment again so that
//! nothing Patchbay starts (a browser, a server) inherits it. The window then draws without
//! WebKit's hardware acceleration ("Disabled hardware acceleration because GTK failed to
//! initialize GL" in the log), which a list of connectors does not need.
//!
//! A new page is created with the status the tray shows and the health board
//! ([`patchbay_core::tray_model::PageBoot`], an initialization script), so it draws its rows
//! without waiting for its first commands (the listeners, then the status: several IPC round
//! trips); it asks for both again once it listens.
//!
//! Each window says in the log how long its rows took to appear: "window: rows drawn N ms after
//! it was asked for (cold | again | again, kept)" (tests/bench/footprint.sh reads it). A new page
//! marks the first frame after its first render ([`DRAWN_PROBE`], an initialization script: the
//! page's root loses `aria-busy` once the rows are in); a kept page marks its first frame once
//! visible again ([`SHOWN_PROBE`]). The app reads that mark back. Both ends are wall clock times
//! on this machine, in ms.
//!
//! A row request (focus, authorize, ask) for a window whose page has not registered its
//! listeners yet would be lost as an event: from the window's creation until the page calls
//! `page_listening` ([`page_listening`]), requests are kept in [`PAGE_REQUESTS`] and handed to
//! the page by that call (patchbay_core::tray_model::PageRequests).

use patchbay_core::tray_model::{PageRequests, QueuedRowRequest, RowRequest};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tauri::webview::PageLoadEvent;
use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

pub const LABEL: &str = "connectors";
pub const TITLE: &str = "Patchbay — Connectors";
/// The event that asks the window to scroll to and highlight one connector; payload: its name.
pub const FOCUS_EVENT: &str = "focus-connector";
/// The event that asks the window to start authorizing one connector, exactly as its
/// Authorize button does (the tray's "Authorize …" items, `patchbay://authorize/NAME`);
/// payload: its name.
pub const AUTHORIZE_EVENT: &str = "authorize-connector";
/// The event that asks the window to show one connector and ask the user before authorizing it
/// (`patchbay://authorize/NAME`: a link never starts consent by itself); payload: its name.
pub const ASK_AUTHORIZE_EVENT: &str = "ask-authorize-connector";

/// Records, in the page, when the first frame after the rows were rendered was drawn
/// (`window.__patchbayDrawnAt`, ms since the Unix epoch).
const DRAWN_PROBE: &str = r#"(function () {
  function check() {
    var root = document.getElementById("app");
    if (root && !root.hasAttribute("aria-busy")) {
      window.__patchbayDrawnAt = performance.timeOrigin + performance.now();
      return;
    }
    requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
})();"#;
/// Marks the first frame a kept page draws once it is visible again (`window.__patchbayDrawnAt`).
const SHOWN_PROBE: &str = r#"(function () {
  delete window.__patchbayDrawnAt;
  function mark() {
    if (document.visibilityState !== "visible") {
      document.addEventListener("visibilitychange", mark, { once: true });
      return;
    }
    requestAnimationFrame(function () {
      window.__patchbayDrawnAt = performance.timeOrigin + performance.now();
    });
  }
  mark();
})();"#;
/// Reads the page's marks back (null until drawn): when it was drawn, when its navigation
/// started, when its DOM was loaded, when it rendered its rows from its boot and when the first
/// status reached it (ui/src/app.ts marks `patchbay:rows` and `patchbay:status`), all in ms since
/// the Unix epoch.
const MILESTONES: &str = r#"(function () {
  if (window.__patchbayDrawnAt === undefined) return null;
  var origin = performance.timeOrigin;
  var nav = performance.getEntriesByType("navigation")[0];
  var status = performance.getEntriesByName("patchbay:status")[0];
  var rows = performance.getEntriesByName("patchbay:rows")[0];
  return {
    drawn: window.__patchbayDrawnAt,
    started: origin,
    loaded: nav && nav.domContentLoadedEventEnd ? origin + nav.domContentLoadedEventEnd : null,
    rendered: rows ? origin + rows.startTime : null,
    status: status ? origin + status.startTime : null
  };
})()"#;

/// What [`MILESTONES`] answers.
#[derive(serde::Deserialize)]
struct Milestones {
    drawn: f64,
    started: f64,
    loaded: Option<f64>,
    /// The rows rendered (in the DOM) from the page's boot.
    rendered: Option<f64>,
    status: Option<f64>,
}

/// How often, and how long, the app looks for that mark once the page has loaded.
const DRAWN_POLL: Duration = Duration::from_millis(20);
const DRAWN_GIVE_UP: Duration = Duration::from_secs(20);

/// How long a closed window is kept, hidden, before it is destroyed: long enough that looking
/// again soon after closing it is instant, short enough that a tray app idle all day holds no web
/// view (WebKit's two processes cost about 140 MB).
const KEEP_AFTER_CLOSE: Duration = Duration::from_secs(60);
/// Overrides [`KEEP_AFTER_CLOSE`], in whole seconds (benchmarks and tests; 0: destroy on close).
const KEEP_AFTER_CLOSE_ENV: &str = "PATCHBAY_WINDOW_KEEP_SECS";

/// When the window being shown was asked for, and how.
struct Request {
    at: SystemTime,
    /// The 1-based count of windows created, this one included.
    opening: u32,
    /// Shown again after it was closed and kept, rather than created.
    kept: bool,
}

impl Request {
    fn kind(&self) -> &'static str {
        match (self.kept, self.opening) {
            (true, _) => "again, kept",
            (false, 1) => "cold",
            (false, _) => "again",
        }
    }
}

static REQUEST: Mutex<Option<Request>> = Mutex::new(None);
static OPENINGS: Mutex<u32> = Mutex::new(0);
/// Counts closes and shows, so that a release timer knows whether the window was shown (or
/// closed again) after the close that started it.
static VISIBILITY_CHANGES: AtomicU64 = AtomicU64::new(0);
/// Whether the window's page listens for row requests, and those kept until it does.
static PAGE_REQUESTS: Mutex<PageRequests> = Mutex::new(PageRequests::new());

/// The page has registered its listeners (the `page_listening` command): row requests are sent
/// as events from now on; answers those kept meanwhile, in order.
pub fn page_listening() -> Vec<QueuedRowRequest> {
    let queued = page_requests().listening();
    tracing::info!(queued = queued.len(), "window: the page listens");
    queued
}

fn page_requests() -> std::sync::MutexGuard<'static, PageRequests> {
    PAGE_REQUESTS.lock().unwrap_or_else(|p| p.into_inner())
}

fn keep_after_close() -> Duration {
    match std::env::var(KEEP_AFTER_CLOSE_ENV) {
        Ok(secs) => match secs.trim().parse::<u64>() {
            Ok(secs) => Duration::from_secs(secs),
            Err(_) => {
                tracing::warn!(
                    "{KEEP_AFTER_CLOSE_ENV}={secs:?} is not a whole number of seconds; keeping a closed window {KEEP_AFTER_CLOSE:?}"
                );
                KEEP_AFTER_CLOSE
            }
        },
        Err(_) => KEEP_AFTER_CLOSE,
    }
}

#[cfg(target_os = "linux")]
const GDK_GL: &str = "GDK_GL";
#[cfg(target_os = "linux")]
static GL_SKIPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// WebKit's UI-process memory-pressure poller wakes every few seconds for the rest of the process's
/// life once a first web view existed; the window's web process, the only one it would help, goes
/// when the window closes.
#[cfg(target_os = "linux")]
const WEBKIT_NO_PRESSURE_MONITOR: &str = "WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR";

/// Before GTK starts (first thing in `run`, on the only thread): tell it not to set up OpenGL, and
/// WebKit not to poll for memory pressure (unless the user set either variable).
pub fn skip_gl_at_start() {
    #[cfg(target_os = "linux")]
    {
        if std::env::var_os(GDK_GL).is_none() {
            std::env::set_var(GDK_GL, "disable");
            GL_SKIPPED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if std::env::var_os(WEBKIT_NO_PRESSURE_MONITOR).is_none() {
            std::env::set_var(WEBKIT_NO_PRESSURE_MONITOR, "1");
        }
    }
}

/// Once GTK has read it (in `setup`): the variable leaves the environment children inherit.
pub fn gtk_started() {
    #[cfg(target_os = "linux")]
    if GL_SKIPPED.load(std::sync::atomic::Ordering::SeqCst) {
        std::env::remove_var(GDK_GL);
    }
}

/// Show the Connectors window, optionally focused on one connector. A window created for a
/// connector also gets it as `?focus=<name>` in its URL, since it cannot have listened yet.
pub fn show_connectors<R: Runtime>(app: &AppHandle<R>, focus: Option<&str>) {
    open(app, focus.map(|name| (name, RowRequest::Focus)));
}

/// Show the Connectors window at `name`'s row and have it start authorizing that connector; the
/// window shows how to finish (in the browser, or by pasting). `name` is checked against the
/// catalog by the Authorizer the window calls.
pub fn authorize<R: Runtime>(app: &AppHandle<R>, name: &str) {
    open(app, Some((name, RowRequest::Authorize)));
}

/// Show the Connectors window at `name`'s row and ask the user whether to authorize it: what a
/// `patchbay://authorize/NAME` link does, since any program or web page can open one.
pub fn ask_to_authorize<R: Runtime>(app: &AppHandle<R>, name: &str) {
    open(app, Some((name, RowRequest::AskToAuthorize)));
}

fn open<R: Runtime>(app: &AppHandle<R>, row: Option<(&str, RowRequest)>) {
    if let Some(window) = app.get_webview_window(LABEL) {
        let kept = !window.is_visible().unwrap_or(true);
        VISIBILITY_CHANGES.fetch_add(1, Ordering::SeqCst);
        let request = kept.then(|| Request {
            at: SystemTime::now(),
            opening: *OPENINGS.lock().unwrap_or_else(|p| p.into_inner()),
            kept: true,
        });
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
        if let Some(request) = request {
            tracing::info!("window: asked for, showing the kept one");
            // After show: the probe runs once the page is visible again.
            if window.eval(SHOWN_PROBE).is_ok() {
                report_when_drawn(window.clone(), request);
            }
        }
        // Decided under the lock the page's `page_listening` takes: a request either reaches its
        // listeners or is in what that call answers.
        let send = row.and_then(|(name, request)| page_requests().request(name, request));
        if let Some(QueuedRowRequest { name, request }) = send {
            let name = name.as_str();
            let _ = app.emit_to(LABEL, FOCUS_EVENT, name);
            match request {
                RowRequest::Focus => {}
                RowRequest::Authorize => {
                    let _ = app.emit_to(LABEL, AUTHORIZE_EVENT, name);
                }
                RowRequest::AskToAuthorize => {
                    let _ = app.emit_to(LABEL, ASK_AUTHORIZE_EVENT, name);
                }
            }
        } else if row.is_some() {
            tracing::info!("window: its page does not listen yet; the row request is kept for it");
        }
        return;
    }
    // Held until the window exists, so that the network process is not ended under it.
    let mut openings = OPENINGS.lock().unwrap_or_else(|p| p.into_inner());
    *openings += 1;
    let opening = *openings;
    *REQUEST.lock().unwrap_or_else(|p| p.into_inner()) = Some(Request {
        at: SystemTime::now(),
        opening,
        kept: false,
    });
    tracing::info!(opening, "window: asked for, creating it");
    // The new page gets `row` in its URL, and later requests once it listens.
    let page = page_requests().page_created();
    let url = patchbay_core::tray_model::connectors_page(row);
    let mut builder = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App(url.into()))
        .title(TITLE)
        .inner_size(900.0, 640.0)
        .min_inner_size(560.0, 400.0)
        .focused(true)
        .initialization_script(DRAWN_PROBE);
    // The status the tray shows, so the page draws its rows before its first command answers.
    let boot = app
        .try_state::<crate::AppState>()
        .and_then(|state| state.page_boot());
    match boot.as_ref().map(|boot| boot.script()) {
        Some(Ok(script)) => builder = builder.initialization_script(&script),
        Some(Err(e)) => tracing::warn!("window: the new page starts without a status: {e}"),
        None => {}
    }
    let building = Instant::now();
    let built = builder
        .on_page_load(|window, payload| {
            if payload.event() == PageLoadEvent::Finished {
                let request = REQUEST.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(request) = request {
                    report_when_drawn(window, request);
                }
            }
        })
        .build();
    drop(openings);
    match built {
        Ok(window) => {
            // On the main thread; the first also sets up GTK's and WebKit's one-time state.
            tracing::info!(
                opening,
                "window: created in {} ms",
                building.elapsed().as_millis()
            );
            let keep = keep_after_close();
            let handle = window.clone();
            window.on_window_event(move |event| match event {
                tauri::WindowEvent::CloseRequested { api, .. } if !keep.is_zero() => {
                    api.prevent_close();
                    let _ = handle.hide();
                    keep_hidden(handle.clone(), keep);
                }
                tauri::WindowEvent::Destroyed => {
                    page_requests().page_gone(page);
                    #[cfg(target_os = "linux")]
                    end_network_process();
                }
                _ => {}
            });
        }
        Err(error) => {
            page_requests().page_gone(page);
            tracing::error!("cannot open the Connectors window: {error}");
        }
    }
}

/// A closed window stays hidden for `keep`, then is destroyed unless it was shown (or closed
/// again, which starts its own timer) meanwhile.
fn keep_hidden<R: Runtime>(window: tauri::WebviewWindow<R>, keep: Duration) {
    let closed = VISIBILITY_CHANGES.fetch_add(1, Ordering::SeqCst) + 1;
    tracing::info!("window: closed; kept hidden for {keep:?}");
    let spawned = std::thread::Builder::new()
        .name("window-release".into())
        .spawn(move || {
            std::thread::sleep(keep);
            if VISIBILITY_CHANGES.load(Ordering::SeqCst) != closed {
                return;
            }
            tracing::info!("window: hidden for {keep:?}; releasing its web view");
            if let Err(error) = window.destroy() {
                tracing::warn!("cannot release the hidden Connectors window: {error}");
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot time the hidden Connectors window: {error}");
    }
}

/// Once no WebKit web process is left (the window's exits with it), end WebKit's network process:
/// nothing else would (see the module doc). Runs after a close only, on a thread of its own, for
/// at most [`WEB_PROCESS_GRACE`]; a window opened meanwhile keeps it.
#[cfg(target_os = "linux")]
fn end_network_process() {
    let spawned = std::thread::Builder::new()
        .name("webkit-reaper".into())
        .spawn(|| {
            let started = Instant::now();
            loop {
                let children = webkit_children();
                if children.iter().any(|(_, name)| name.starts_with("WebKitWebProces")) {
                    if started.elapsed() > WEB_PROCESS_GRACE {
                        tracing::info!("window: a WebKit web process is still running; keeping the network process");
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                // Not while a new window is being created (`open` holds it then).
                let _creating = OPENINGS.lock().unwrap_or_else(|p| p.into_inner());
                for (pid, name) in children {
                    if !name.starts_with("WebKitNetworkP") {
                        continue;
                    }
                    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
                        continue;
                    };
                    match rustix::process::kill_process(pid, rustix::process::Signal::TERM) {
                        Ok(()) => tracing::info!("window: closed; WebKit's network process ended"),
                        Err(error) => tracing::warn!("cannot end WebKit's network process: {error}"),
                    }
                }
                return;
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot end WebKit's network process: {error}");
    }
}

#[cfg(target_os = "linux")]
const WEB_PROCESS_GRACE: Duration = Duration::from_secs(10);

/// This process's WebKit children (pid, name), from /proc.
#[cfg(target_os = "linux")]
fn webkit_children() -> Vec<(i32, String)> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (name) state ppid ...": the name may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        if ppid == Some(me.as_str()) && name.starts_with("WebKit") {
            children.push((pid, name.to_owned()));
        }
    }
    children
}

/// Read the page's drawn mark (off the main thread, which draws it) and log how long after the
/// request it came.
fn report_when_drawn<R: Runtime>(window: tauri::WebviewWindow<R>, request: Request) {
    let spawned = std::thread::Builder::new()
        .name("window-drawn".into())
        .spawn(move || {
            let started = Instant::now();
            while started.elapsed() < DRAWN_GIVE_UP {
                let (tx, rx) = std::sync::mpsc::channel();
                let asked = window.eval_with_callback(MILESTONES, move |value| {
                    let _ = tx.send(value);
                });
                if asked.is_err() {
                    return; // The window is gone.
                }
                let milestones = rx
                    .recv_timeout(Duration::from_secs(2))
                    .ok()
                    .and_then(|v| serde_json::from_str::<Option<Milestones>>(&v).ok())
                    .flatten();
                if let Some(milestones) = milestones {
                    let asked_at = request
                        .at
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_secs_f64()
                        * 1000.0;
                    let after = |at: f64| (at - asked_at).max(0.0).round() as u64;
                    let ms = after(milestones.drawn);
                    let kind = request.kind();
                    // Where a new page's time went: the web view and its process, the page's
                    // load (the status's answer comes after the rows when the page drew them from
                    // its boot).
                    let mut steps = String::new();
                    if !request.kept {
                        steps = format!("; page started +{}", after(milestones.started));
                        if let Some(loaded) = milestones.loaded {
                            steps.push_str(&format!(", loaded +{}", after(loaded)));
                        }
                        if let Some(rendered) = milestones.rendered {
                            steps.push_str(&format!(", rows rendered +{}", after(rendered)));
                        }
                        if let Some(status) = milestones.status {
                            steps.push_str(&format!(", status +{}", after(status)));
                        }
                        steps.push_str(" ms");
                    }
                    tracing::info!(
                        opening = request.opening,
                        "window: rows drawn {ms} ms after it was asked for ({kind}){steps}"
                    );
                    return;
                }
                std::thread::sleep(DRAWN_POLL);
            }
            tracing::warn!("window: no rows drawn {DRAWN_GIVE_UP:?} after the page loaded");
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot time the window: {error}");
    }
}
