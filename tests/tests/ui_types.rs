//! The Connectors window's TypeScript types come from the Rust types the backend serializes
//! (ts-rs, behind each crate's `ts` feature): everything the window receives over IPC (the
//! status report, a check and the health board, a started authorization, the client and gateway
//! views, the error payload). This test renders them and fails when the committed
//! ui/src/generated/ipc.ts differs, so a Rust change that the UI was not regenerated for fails CI.
//!
//! To update: `UPDATE_UI_TYPES=1 cargo test -p patchbay-e2e --locked --test ui_types`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use ts_rs::{Config, TypeVisitor, TS};

const UPDATE_HINT: &str =
    "run `UPDATE_UI_TYPES=1 cargo test -p patchbay-e2e --locked --test ui_types` to update it";

/// Collects the declaration of every named type reachable from the roots, by TypeScript name.
struct Declarations<'a> {
    cfg: &'a Config,
    found: BTreeMap<String, String>,
}

impl TypeVisitor for Declarations<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_some() {
            let name = T::ident(self.cfg);
            if self.found.contains_key(&name) {
                return;
            }
            self.found.insert(name, T::decl(self.cfg));
        }
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

/// The generated module: a header, then `export type` per declaration, sorted by name.
fn render() -> String {
    // JSON numbers: every integer the backend sends fits a double (milliseconds, counts).
    let cfg = Config::new().with_large_int("number");
    let mut decls = Declarations {
        cfg: &cfg,
        found: BTreeMap::new(),
    };
    // What the window receives: get_status and the status-changed event, check_connector,
    // get_health_board, start_authorization, client_targets, switch_candidates, add_to_client
    // and switch_client_entry, gateway_clients, the gateway's consents, and every command's
    // error.
    decls.visit::<patchbay_status::StatusReport>();
    decls.visit::<patchbay_core::ConnectorCheck>();
    decls.visit::<patchbay_core::HealthBoard>();
    decls.visit::<patchbay_core::Started>();
    decls.visit::<patchbay_core::client_config::ClientTarget>();
    decls.visit::<patchbay_core::client_config::SwitchCandidate>();
    decls.visit::<patchbay_gateway::client_entries::ClientWrite>();
    decls.visit::<patchbay_gateway::client_entries::GatewayClients>();
    // preview_add_to_client, preview_switch_client_entry and undo_client_write.
    decls.visit::<patchbay_gateway::client_entries::WritePreview>();
    decls.visit::<patchbay_gateway::client_entries::WriteUndone>();
    // consent_requests, answer_consent and the consents-changed event.
    decls.visit::<patchbay_gateway::ConsentRequest>();
    decls.visit::<patchbay_core::IpcError>();
    decls.visit::<patchbay_core::custom::CustomConnector>();
    decls.visit::<patchbay_core::custom::RemoteAuth>();
    // page_listening: the row requests kept until the page listened.
    decls.visit::<patchbay_core::tray_model::QueuedRowRequest>();
    // window.__patchbayBoot: what a new page is created with.
    decls.visit::<patchbay_core::tray_model::PageBoot>();

    let mut out = String::from(
        "// Generated from the Rust types by tests/tests/ui_types.rs (ts-rs): do not edit.\n",
    );
    out.push_str(&format!("// {UPDATE_HINT}.\n"));
    for decl in decls.found.values() {
        out.push('\n');
        out.push_str("export ");
        out.push_str(decl.trim_end());
        if !decl.trim_end().ends_with(';') {
            out.push(';');
        }
        out.push('\n');
    }
    out
}

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/generated/ipc.ts")
}

#[test]
fn the_committed_ui_types_are_the_generated_ones() {
    let generated = render();
    let path = committed_path();
    if std::env::var_os("UPDATE_UI_TYPES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    // Also written to a temporary file, so a failure can be diffed by hand.
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("ipc.ts");
    std::fs::write(&fresh, &generated).unwrap();
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("cannot read {}: {e}; {UPDATE_HINT}", path.display());
    });
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        let line = |text: &str| {
            text.lines()
                .nth(first)
                .unwrap_or("<end of file>")
                .to_owned()
        };
        let _kept = dir.keep();
        panic!(
            "{} is not what the Rust types generate (first difference at line {}:\n  committed: {}\n  generated: {}\n); {UPDATE_HINT}",
            path.display(),
            first + 1,
            line(&committed),
            line(&generated),
        );
    }
}

#[test]
fn the_generated_types_cover_what_the_window_branches_on() {
    let generated = render();
    // Enums at the edge, not strings: the window switches on these.
    for needle in [
        "export type ConnectorState = \"ready\"",
        "export type RefreshAttemptOutcome = \"refreshed\"",
        "export type ErrorKind = ",
        "\"conflict\"",
        "export type Transition = ",
        "export type IpcError = { kind: ErrorKind",
    ] {
        assert!(
            generated.contains(needle),
            "{needle:?} missing from the generated types:\n{generated}"
        );
    }
}
