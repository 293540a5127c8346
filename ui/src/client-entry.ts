// "Enter a client": the spec's last resort when a provider offers no way to register Patchbay
// (no client metadata documents, no dynamic registration). `start_authorization` fails with kind
// `client_needed` and says where to create a client and with which redirect URI; the row then
// shows this form, and `enter_client` keeps what is typed in the vault and starts authorizing
// with it. The secret is read from its field when sent and never kept in the window's state.

import { buildErrorNotice, buildLinkLine, el } from "./format";
import type { BackendError, Connector, ConnectorStateId, IpcError } from "./types";

/** A row asking for a client made at the provider. */
export interface ClientEntry {
  issuer: string;
  redirectUri: string;
  /** The client id typed so far (kept across re-renders of the row; the secret is not). */
  draft: string;
  error: BackendError | null;
  busy: boolean;
  /** The row's state when it was asked; a state change closes the form. */
  forState: ConnectorStateId;
}

/** The form for a `client_needed` refusal, or null for any other error. */
export function clientEntryFor(err: BackendError, forState: ConnectorStateId): ClientEntry | null {
  if (err.kind !== "client_needed") return null;
  const needed = (err as IpcError).needs_client;
  if (!needed) return null;
  return { issuer: needed.issuer, redirectUri: needed.redirect_uri, draft: "", error: null, busy: false, forState };
}

/** The form: where to create the client, its id and (optional) secret, Save and Cancel. */
export function buildClientEntry(c: Connector, f: ClientEntry, id: string): HTMLElement {
  const box = el("section", "flow");
  box.id = `${id}-client`;
  box.dataset.flow = "client_entry";
  box.setAttribute("aria-label", `Enter an OAuth client for ${c.title || c.name}`);
  box.append(el("p", "flow__why", `${f.issuer} offers no way to register Patchbay by itself.`));
  box.append(el("p", "flow__step", "1. Create an OAuth client there (a public client if it offers one) with this redirect URI:"));
  box.append(buildLinkLine(f.redirectUri, `${id}-client-redirect`, "Copy the redirect URI"));
  const form = el("form", "flow__form");
  form.dataset.control = "client-form";
  form.noValidate = true;
  form.append(el("p", "flow__step", "2. Enter what the provider gave you. Patchbay keeps it in the system keychain."));
  const field = (name: "client-id" | "client-secret", labelText: string): HTMLInputElement => {
    const label = el("label", "flow__label", labelText);
    label.htmlFor = `${id}-${name}`;
    const input = el("input", "flow__input");
    input.id = `${id}-${name}`;
    input.name = name;
    input.autocomplete = "off";
    input.spellcheck = false;
    input.dataset.control = name;
    const row = el("div", "flow__line");
    row.append(input);
    form.append(label, row);
    return input;
  };
  const idInput = field("client-id", "Client id");
  idInput.type = "text";
  idInput.value = f.draft;
  idInput.required = true;
  const secret = field("client-secret", "Client secret (leave empty for a public client)");
  secret.type = "password";
  if (f.error) {
    idInput.setAttribute("aria-invalid", "true");
    idInput.setAttribute("aria-describedby", `${id}-client-error`);
  }
  const buttons = el("div", "flow__line");
  const save = el("button", "btn btn--primary", f.busy ? "Saving…" : "Save and authorize");
  save.type = "submit";
  save.dataset.control = "save-client";
  if (f.busy) save.setAttribute("aria-disabled", "true");
  const cancel = el("button", "btn", "Cancel");
  cancel.type = "button";
  cancel.dataset.control = "cancel";
  buttons.append(save, cancel);
  form.append(buttons);
  if (f.error) form.append(buildErrorNotice(f.error, `${id}-client-error`, "flow__error"));
  box.append(form);
  return box;
}
