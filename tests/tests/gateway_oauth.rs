//! The gateway as an MCP-OAuth protected resource, signed in to by real clients given only its
//! URL: the MCP Python SDK 2.3.0's `OAuthClientProvider` (tests/python/gateway_oauth_client.py)
//! and mcp-remote 0.15.1 (tests/node). Each meets the gateway's 401, discovers its metadata,
//! registers, and opens Patchbay's consent page in a real browser engine (headless chromium,
//! tests/node/consent-browser.mjs), which answers it: Allow, Deny or "only these". Then the
//! client lists and calls tools through the aggregate. Also: a second client, `--only`,
//! revocation (the CLI's and RFC 7009's), and the page's gates (Host, Origin, Sec-Fetch-Site,
//! no framing); a client identified by a metadata document; and the same request answered in
//! the Connectors window (its desk, in process), which the page follows.
//!
//! The connectors are the SDK's plain example server twice (no upstream OAuth), so no keychain
//! is needed: what is under test is the gateway's own authorization.

use patchbay_e2e::peers::{
    path_with_support, raw_form, raw_http, tests_dir, wait_for, Serving, STEP,
};
use patchbay_e2e::sdk_servers::{free_port, SdkServer};
use patchbay_e2e::Sandbox;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two plain SDK servers as `alpha` and `beta`, and the gateway in front of them.
struct Front {
    _alpha: SdkServer,
    _beta: SdkServer,
    sandbox: Sandbox,
    gateway: Serving,
    consent_log: PathBuf,
}

impl Front {
    fn start() -> Front {
        Front::start_with(&[])
    }

    /// With the gateway's environment holding `env` too.
    fn start_with(env: &[(&str, &Path)]) -> Front {
        let alpha = SdkServer::streamable_http();
        let beta = SdkServer::streamable_http();
        let sandbox = Sandbox::new(false);
        let catalog = sandbox.write(
            "catalog.json",
            &json!({ "mcpServers": {
                "alpha": { "type": "http", "url": alpha.url() },
                "beta": { "type": "http", "url": beta.url() },
            } })
            .to_string(),
        );
        let gateway = Serving::start_with_env(&sandbox, &catalog, env);
        let consent_log = sandbox.path().join("consent.log");
        Front {
            _alpha: alpha,
            _beta: beta,
            sandbox,
            gateway,
            consent_log,
        }
    }

    /// The Python SDK's OAuth client on `url` with its store `store` (in the sandbox), the
    /// browser answering `consent`; optionally calling `tool` with `{"name": "Ada"}`.
    fn python(&self, url: &str, store: &str, consent: &str, tool: Option<&str>) -> Value {
        self.python_with(url, store, consent, tool, &[])
    }

    /// As [`Front::python`], the client's environment holding `env` too.
    fn python_with(
        &self,
        url: &str,
        store: &str,
        consent: &str,
        tool: Option<&str>,
        env: &[(&str, &Path)],
    ) -> Value {
        let store = self.sandbox.path().join(store);
        let out = python_client(url, &store, consent, &self.consent_log, tool, env)
            .output()
            .expect("run the Python SDK client");
        client_answer(&out, &self.gateway.output())
    }

    /// What the browser saw on each consent page so far, in order.
    fn consents(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.consent_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `gateway client list --json`: the labels.
    fn client_labels(&self) -> Vec<String> {
        let out = self
            .sandbox
            .command()
            .args(["gateway", "client", "list", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = listed
            .as_array()
            .or_else(|| listed["clients"].as_array())
            .unwrap_or_else(|| panic!("{listed}"));
        rows.iter()
            .map(|c| c["label"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The stored tokens of a Python client's store.
    fn stored(&self, store: &str) -> Value {
        let text = std::fs::read_to_string(self.sandbox.path().join(store)).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["tokens"].clone()
    }

    /// One `initialize` at `path` with `token` as the bearer: the status.
    fn initialize_with(&self, path: &str, token: &str) -> u16 {
        let bearer = format!("Bearer {token}");
        raw_http(
            self.gateway.port,
            "POST",
            path,
            &[("Authorization", &bearer)],
            patchbay_e2e::peers::INITIALIZE,
        )
        .0
    }
}

/// The Python SDK's OAuth client (tests/python/gateway_oauth_client.py) on `url` with its store
/// at `store`, the browser answering `consent` and logging what it saw to `consent_log`;
/// optionally calling `tool` with `{"name": "Ada"}`; `env` added to its environment.
fn python_client(
    url: &str,
    store: &Path,
    consent: &str,
    consent_log: &Path,
    tool: Option<&str>,
    env: &[(&str, &Path)],
) -> Command {
    let python = tests_dir().join("python/.venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh",
        python.display()
    );
    let mut cmd = Command::new(python);
    cmd.arg(tests_dir().join("python/gateway_oauth_client.py"))
        .arg(url)
        .arg(store);
    if let Some(tool) = tool {
        cmd.arg(tool).arg(r#"{"name": "Ada"}"#);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.env("PATCHBAY_CONSENT", consent)
        .env("PATCHBAY_CONSENT_LOG", consent_log);
    cmd
}

/// The one JSON line the Python client printed last (`gateway`: the gateway's log, for the
/// panic when there is none).
fn client_answer(out: &std::process::Output, gateway: &str) -> Value {
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "no JSON from the Python client: {line}\n{}\n--- gateway:\n{gateway}",
            String::from_utf8_lossy(&out.stderr),
        )
    })
}

fn tools(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = answer["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_python_sdk_signs_in_with_one_allow_and_a_second_client_only_to_what_it_was_given() {
    let front = Front::start();
    let aggregate = front.gateway.aggregate_url();

    // Given only the URL: 401, metadata, registration, the consent page, Allow.
    let first = front.python(&aggregate, "first.json", "allow", Some("alpha__greet"));
    assert_eq!(first["ok"], true, "{first}\n{}", front.gateway.output());
    assert_eq!(first["browser_runs"], 1, "{first}");
    let names = tools(&first);
    assert!(
        names.contains(&"alpha__greet".to_owned()) && names.contains(&"beta__greet".to_owned()),
        "every connector in use: {names:?}"
    );
    assert!(first["called"].as_str().unwrap().contains("Ada"), "{first}");
    let shown = &front.consents()[0];
    assert_eq!(shown["heading"], "Allow Python SDK e2e?", "{shown}");
    assert_eq!(shown["connectors"], json!(["alpha", "beta"]), "{shown}");
    assert_eq!(shown["csp_violations"], json!([]), "{shown}");
    assert!(
        shown["landed"].as_str().unwrap().contains(&format!(
            "iss=http%3A%2F%2F127.0.0.1%3A{}%2Foauth",
            front.gateway.port
        )),
        "the redirect names the issuer (RFC 9207): {shown}"
    );
    // The grant is a gateway client like any other, in the same list.
    assert_eq!(front.client_labels(), ["python-sdk-e2e"]);

    // Again with its stored tokens: no browser.
    let again = front.python(&aggregate, "first.json", "deny", Some("beta__greet"));
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(again["browser_runs"], 0, "signed in already: {again}");

    // A second client, given only beta on the consent page.
    let second = front.python(&aggregate, "second.json", "only:beta", None);
    assert_eq!(second["ok"], true, "{second}\n{}", front.gateway.output());
    let names = tools(&second);
    assert!(
        names.contains(&"beta__greet".to_owned()) && names.iter().all(|n| n.starts_with("beta__")),
        "only beta: {names:?}"
    );
    let refused = front.python(&aggregate, "second.json", "allow", Some("alpha__greet"));
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("may not use the connector alpha")),
        "alpha is not the second client's: {refused}"
    );
    let mut labels = front.client_labels();
    labels.sort();
    assert_eq!(labels.len(), 2, "two clients, one record each: {labels:?}");

    // The first one still works, and only it can see alpha.
    let first_again = front.python(&aggregate, "first.json", "deny", Some("alpha__greet"));
    assert_eq!(first_again["ok"], true, "{first_again}");
    assert_eq!(first_again["is_error"], false, "{first_again}");
}

/// A client identified by a Client ID Metadata Document (the Python SDK's `client_metadata_url`,
/// the document served by the client itself over https on 127.0.0.1, its CA trusted by the
/// gateway through SSL_CERT_FILE): nothing registered, one Allow on a consent page naming the
/// document's client with the host vouching for it, then tools listed and called; the gateway
/// client it became is the document's URL, renewed with its refresh token like any other.
#[test]
fn a_client_metadata_document_stands_in_for_registration() {
    let trust = tempfile::tempdir().unwrap();
    let ca = trust.path().join("client-ca.pem");
    let front = Front::start_with(&[("SSL_CERT_FILE", &ca)]);
    let aggregate = front.gateway.aggregate_url();
    let (_, answer) = raw_http(
        front.gateway.port,
        "GET",
        "/.well-known/oauth-authorization-server/oauth",
        &[],
        "",
    );
    let metadata: Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap();
    assert_eq!(metadata["client_id_metadata_document_supported"], true);

    let env = [("CLIENT_DOCUMENT_CA", ca.as_path())];
    let signed_in = front.python_with(&aggregate, "cimd.json", "allow", Some("alpha__greet"), &env);
    assert_eq!(
        signed_in["ok"],
        true,
        "{signed_in}\n{}",
        front.gateway.output()
    );
    let client_id = signed_in["client_id"].as_str().unwrap();
    assert!(
        client_id.starts_with("https://127.0.0.1:") && client_id.ends_with("/oauth/client.json"),
        "the document's URL is the client id: {signed_in}"
    );
    assert!(
        signed_in["called"].as_str().unwrap().contains("Ada"),
        "{signed_in}"
    );
    let shown = &front.consents()[0];
    assert_eq!(
        shown["heading"], "Allow Python SDK e2e (CIMD) (127.0.0.1)?",
        "{shown}"
    );
    let registrations = front.sandbox.path().join("gateway-oauth-clients.json");
    assert!(
        !std::fs::read_to_string(&registrations)
            .unwrap_or_default()
            .contains(client_id),
        "a document's client is not registered"
    );
    assert_eq!(front.client_labels().len(), 1);

    // Renewed with its refresh token under the document's URL (the client id it holds), and
    // the new access token is let in; the old one and another client id are not.
    let tokens = front.stored("cimd.json");
    let refresh = tokens["refresh_token"].as_str().unwrap();
    // Neither holds a character a form value must escape (`:` and `/` may stand as they are).
    let form =
        |id: &str| format!("grant_type=refresh_token&client_id={id}&refresh_token={refresh}");
    let (status, answer) = raw_form(
        front.gateway.port,
        "/oauth/token",
        &[],
        &form("https://127.0.0.1:1/oauth/client.json"),
    );
    assert_eq!(status, 400, "another client id: {answer}");
    let (status, answer) = raw_form(front.gateway.port, "/oauth/token", &[], &form(client_id));
    assert_eq!(status, 200, "{answer}");
    let renewed: Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap();
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(front.initialize_with("/mcp", access), 200);
    assert_eq!(
        front.initialize_with("/mcp", tokens["access_token"].as_str().unwrap()),
        401,
        "the access token it replaced"
    );
}

/// The consent waits in the Connectors window too: the app runs the gateway in its process, as
/// this test does (a memory vault; the connector needs no credential). While the browser
/// (headless chromium, told to click nothing) shows the page, the window's desk lists the
/// Python SDK client's request; Allow there sends the page on to the client by itself, which then
/// lists and calls tools; the request is gone from both sides. Deny there reaches a second
/// client as `access_denied`, and nothing is granted to it.
#[test]
fn a_consent_answered_in_the_window_is_followed_by_its_page() {
    let alpha = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": { "alpha": { "type": "http", "url": alpha.url() } } }).to_string(),
    );
    let paths = patchbay_core::Paths::resolve(Some(sandbox.path().to_path_buf()))
        .unwrap()
        .with_catalog_override(Some(catalog))
        .unwrap();
    let store = std::sync::Arc::new(patchbay_vault::MemoryStore::new());
    let core = std::sync::Arc::new(patchbay_core::Patchbay::with_store(paths, store).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (desk, port) = runtime.block_on(async {
        let options = patchbay_gateway::GatewayOptions {
            port: 0,
            ..Default::default()
        };
        let upstreams = patchbay_gateway::Upstreams::new(core, None);
        let gateway = patchbay_gateway::Gateway::bind(upstreams, options)
            .await
            .unwrap();
        let (desk, port) = (gateway.consent_desk(), gateway.port());
        tokio::spawn(gateway.serve(std::future::pending()));
        (desk, port)
    });
    let aggregate = format!("http://127.0.0.1:{port}/mcp");
    let consent_log = sandbox.path().join("consent.log");
    let mut changes = desk.changes();
    let waiting = || {
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(request) = desk.requests().into_iter().next() {
                return request;
            }
            assert!(Instant::now() < deadline, "no consent waited in the window");
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    let store = sandbox.path().join("window.json");
    let client = python_client(
        &aggregate,
        &store,
        "window",
        &consent_log,
        Some("alpha__greet"),
        &[],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let request = waiting();
    assert_eq!(request.client_name, "Python SDK e2e");
    assert_eq!(request.connector, None, "the aggregate: every connector");
    assert!(changes.has_changed().unwrap(), "the window is told");
    changes.mark_unchanged();
    desk.answer(&request.id, true).unwrap();
    let answer = client_answer(&client.wait_with_output().unwrap(), "(in this process)");
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(
        answer["called"].as_str().unwrap().contains("Ada"),
        "{answer}"
    );
    let shown = &std::fs::read_to_string(&consent_log).unwrap();
    let shown: Value = serde_json::from_str(shown.lines().next().unwrap()).unwrap();
    assert!(
        shown["landed"]
            .as_str()
            .unwrap_or_default()
            .contains("code="),
        "the page followed the window's Allow to the client: {shown}"
    );
    assert_eq!(shown["csp_violations"], json!([]), "{shown}");
    assert!(desk.requests().is_empty());
    assert!(matches!(
        desk.answer(&request.id, true),
        Err(patchbay_gateway::ConsentDeskError::Gone)
    ));
    assert!(changes.has_changed().unwrap());

    let store = sandbox.path().join("denied.json");
    let client = python_client(&aggregate, &store, "window", &consent_log, None, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let request = waiting();
    desk.answer(&request.id, false).unwrap();
    let answer = client_answer(&client.wait_with_output().unwrap(), "(in this process)");
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("access_denied"),
        "{answer}"
    );
    let clients = patchbay_gateway::Clients::new(sandbox.path())
        .list()
        .unwrap();
    assert_eq!(clients.len(), 1, "only the allowed client: {clients:?}");
}

#[test]
fn deny_grants_nothing_and_revocation_ends_a_client_until_it_asks_again() {
    let front = Front::start();
    let aggregate = front.gateway.aggregate_url();

    let denied = front.python(&aggregate, "denied.json", "deny", None);
    assert_eq!(denied["ok"], false, "{denied}");
    assert!(
        denied["error"].as_str().unwrap().contains("access_denied"),
        "the client is told it was denied: {denied}"
    );
    assert!(front.client_labels().is_empty(), "Deny made no client");

    // One connector's own URL: the page names it, the grant is for it alone.
    let one = front.python(
        &front.gateway.url("beta"),
        "one.json",
        "allow",
        Some("greet"),
    );
    assert_eq!(one["ok"], true, "{one}\n{}", front.gateway.output());
    let shown = front.consents().pop().unwrap();
    assert!(
        shown["text"]
            .as_str()
            .unwrap()
            .contains("wants to use beta"),
        "{shown}"
    );
    assert_eq!(shown["connectors"], json!([]), "no choice for one: {shown}");
    let token = front.stored("one.json")["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(front.initialize_with("/mcp/beta", &token), 200);
    assert_eq!(
        front.initialize_with("/mcp/alpha", &token),
        403,
        "beta alone"
    );

    // `patchbay gateway client revoke`: the token is dead at once.
    let label = front.client_labels().pop().unwrap();
    let out = front
        .sandbox
        .command()
        .args(["gateway", "client", "revoke", &label])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (status, answer) = raw_http(
        front.gateway.port,
        "POST",
        "/mcp/beta",
        &[("Authorization", &format!("Bearer {token}"))],
        patchbay_e2e::peers::INITIALIZE,
    );
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("error=\"invalid_token\""), "{answer}");
    // Its refresh token is dead too: the client must ask the user again.
    let asked_again = front.python(&front.gateway.url("beta"), "one.json", "deny", None);
    assert_eq!(asked_again["ok"], false, "{asked_again}");
    assert_eq!(front.consents().len(), 3, "a consent page again, denied");

    // RFC 7009: the client revokes its own refresh token.
    let kept = front.python(&aggregate, "kept.json", "allow", None);
    assert_eq!(kept["ok"], true, "{kept}");
    let tokens = front.stored("kept.json");
    let body = format!(
        "token={}&token_type_hint=refresh_token",
        tokens["refresh_token"].as_str().unwrap()
    );
    let (revoked, answer) = raw_form(front.gateway.port, "/oauth/revoke", &[], &body);
    assert_eq!(revoked, 200, "{answer}");
    assert_eq!(
        front.initialize_with("/mcp", tokens["access_token"].as_str().unwrap()),
        401
    );
    assert!(front.client_labels().is_empty());
}

#[test]
fn the_consent_page_answers_only_itself_and_cannot_be_framed_or_reached_cross_origin() {
    let front = Front::start();
    let port = front.gateway.port;
    let (status, registered) = raw_http(
        port,
        "POST",
        "/oauth/register",
        &[],
        r#"{"client_name":"Gate test","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}"#,
    );
    assert_eq!(status, 201, "{registered}");
    let body = registered.split("\r\n\r\n").nth(1).unwrap();
    let client_id = serde_json::from_str::<Value>(body).unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page_path = format!(
        "/oauth/authorize?response_type=code&client_id={client_id}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s1&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGkSFU5kL8&code_challenge_method=S256"
    );
    let open_page = || {
        let (status, page) = raw_http(port, "GET", &page_path, &[], "");
        assert_eq!(status, 200, "{page}");
        let id = page
            .split("name=\"request\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no request id in {page}"))
            .to_owned();
        (page, id)
    };
    let (page, request) = open_page();
    let head = page.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
    assert!(head.contains("frame-ancestors 'none'"), "{head}");
    assert!(head.contains("x-frame-options: deny"), "{head}");
    assert!(head.contains("cache-control: no-store"), "{head}");

    // Another Host (DNS rebinding) or a foreign page: refused before anything is read.
    let (status, _) = raw_http(port, "GET", &page_path, &[("Host", "evil.example:80")], "");
    assert_eq!(status, 403);
    let allow = format!("request={request}&decision=allow");
    let own = format!("http://127.0.0.1:{port}");
    for headers in [
        vec![("Origin", "https://evil.example")],
        // Another loopback page (another port) is another origin.
        vec![("Origin", "http://127.0.0.1:9")],
        vec![("Origin", "null")],
        vec![],
        vec![("Origin", own.as_str()), ("Sec-Fetch-Site", "cross-site")],
    ] {
        let (status, answer) = raw_form(port, "/oauth/authorize", &headers, &allow);
        assert_eq!(status, 403, "{headers:?}: {answer}");
        assert!(!answer.contains("code="), "{answer}");
    }
    // The right Origin, from another local user's program (any user can reach loopback):
    // refused on Linux by the connection's owner. Tried where this test may become another
    // user (root, as CI runs it).
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    if root && Path::new("/usr/bin/setpriv").exists() {
        let out = Command::new("/usr/bin/setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "curl",
                "-sS",
            ])
            .args(["-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20"])
            .args(["-H", &format!("Origin: {own}"), "--data", &allow])
            .arg(format!("http://127.0.0.1:{port}/oauth/authorize"))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "403",
            "another user's Allow: {out:?}\n{}",
            front.gateway.output()
        );
        assert!(front.gateway.output().contains("another user's program"));
    } else {
        eprintln!("not root here: another local user's Allow is not tried");
    }

    // The page's own answer goes through once, and only once.
    let same = [("Origin", own.as_str()), ("Sec-Fetch-Site", "same-origin")];
    let (status, answer) = raw_form(port, "/oauth/authorize", &same, &allow);
    assert_eq!(status, 303, "{answer}");
    assert!(
        answer.contains("location: http://127.0.0.1:9/cb?code=pbgwc_")
            || answer.contains("Location: http://127.0.0.1:9/cb?code=pbgwc_"),
        "{answer}"
    );
    let (status, answer) = raw_form(port, "/oauth/authorize", &same, &allow);
    assert_eq!(status, 400, "answered already: {answer}");
}

/// mcp-remote 0.15.1 as Cursor or Claude Desktop run it (`npx mcp-remote URL`), given only the
/// aggregate URL, in a throwaway HOME; its "browser" the consent answerer.
#[test]
fn mcp_remote_signs_in_with_one_allow_and_lists_and_calls_tools() {
    let front = Front::start();
    let bin = tests_dir().join("node/node_modules/.bin/mcp-remote");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh",
        bin.display()
    );
    let home = front.sandbox.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let logs = front.sandbox.path().join("mcp-remote.stderr");
    let mut child = Command::new(&bin)
        .arg(front.gateway.aggregate_url())
        .arg(free_port().to_string())
        .env("HOME", &home)
        .env_remove("MCP_REMOTE_CONFIG_DIR")
        .env("BROWSER", tests_dir().join("support/consent-browser.sh"))
        .env("PATCHBAY_CONSENT", "allow")
        .env("PATCHBAY_CONSENT_LOG", &front.consent_log)
        // Without a display xdg-open (which mcp-remote's `open` runs) goes to $BROWSER.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("PATH", path_with_support())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&logs).unwrap())
        .spawn()
        .expect("start mcp-remote");
    let mut stdin = child.stdin.take().unwrap();
    let (lines, answers) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let output = || {
        format!(
            "{}\n--- gateway:\n{}",
            std::fs::read_to_string(&logs).unwrap_or_default(),
            front.gateway.output()
        )
    };
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        if method.starts_with("notifications/") {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
            return Value::Null;
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = answers
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}:\n{}", output()));
            let answer: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if answer["id"] == id {
                return answer;
            }
        }
    };
    let initialized = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}),
    );
    assert!(
        initialized["result"].is_object(),
        "{initialized}\n{}",
        output()
    );
    ask(0, "notifications/initialized", Value::Null);
    let listed = ask(2, "tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}\n{}", output()))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"alpha__greet") && names.contains(&"beta__greet"),
        "{names:?}"
    );
    let called = ask(
        3,
        "tools/call",
        json!({"name": "beta__greet", "arguments": {"name": "Grace"}}),
    );
    assert!(called.to_string().contains("Grace"), "{called}");
    let consents = front.consents();
    assert_eq!(consents.len(), 1, "one Allow: {consents:?}");
    assert!(
        consents[0]["landed"].as_str().is_some(),
        "{:?}",
        consents[0]
    );
    wait_for(
        STEP,
        "mcp-remote's grant in the client list",
        || front.client_labels().len() == 1,
        || format!("{:?}", front.client_labels()),
    );
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}
