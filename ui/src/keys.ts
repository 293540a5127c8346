// A connector's keys (issue 21): every `${VAR}` its catalog entry uses, where its value comes
// from (the keychain, the environment, a default, nowhere), and a masked field to set, replace
// or clear it in the same vault `patchbay secret set` writes (set_connector_key,
// clear_connector_key: only a variable this connector uses). A value is never shown back: the
// report carries the source, not the value, and what is typed is read from its field when sent
// and never kept in the window's state. Clearing asks first. The CLI's command stays one Copy
// away for a terminal user.

import type { Backend } from "./backend";
import { toBackendError } from "./backend";
import { buildErrorNotice, el } from "./format";
import type { BackendError, Connector, StatusReport } from "./types";
import type { VariableSource, VariableStatus } from "./generated/ipc";

/** The row's Keys part as the window keeps it across re-renders. */
export interface KeysUi {
  /** The stored (or environment) variable whose Replace field is open. */
  editing?: string | null;
  /** The stored variable whose Clear waits for its confirmation. */
  clearing?: string | null;
  /** A save or clear under way. */
  busy?: string | null;
  error?: { variable: string; error: BackendError } | null;
}

const SOURCE_TEXT: Record<VariableSource, string> = {
  vault: "Stored in the keychain",
  environment: "From the environment",
  default: "Uses its default",
  missing: "Not set",
  locked: "Stored; the keychain is locked",
};

/** The variables the Keys part lists: every one but those quietly using their default. */
function listed(c: Connector): VariableStatus[] {
  return c.variables.filter((v) => v.source !== "default");
}

/** A DOM-id-safe suffix for a variable (names are `[A-Za-z_][A-Za-z0-9_]*`). */
function keyId(id: string, variable: string): string {
  return `${id}-key-${variable}`;
}

/** The Keys part of a row, or null when its entry uses no variable worth showing. */
export function buildKeys(c: Connector, k: KeysUi | null | undefined, id: string): HTMLElement | null {
  const vars = listed(c);
  if (vars.length === 0) return null;
  const ui = k ?? {};
  const box = el("section", "keys");
  box.id = `${id}-keys`;
  box.setAttribute("aria-label", `Keys for ${c.title || c.name}`);
  const list = el("ul", "keys__list");
  for (const v of vars) list.append(buildKey(v, ui, id));
  box.append(list);
  const missing = vars.filter((v) => v.source === "missing");
  if (missing.length > 0) {
    const command = missing.map((v) => `patchbay secret set ${v.name}`).join(" && ");
    const line = el("p", "keys__cli");
    const code = el("code", "", command);
    code.id = `${id}-keys-cli`;
    const copy = el("button", "btn btn--quiet", "Copy command");
    copy.type = "button";
    copy.dataset.control = "copy-link";
    copy.dataset.copy = command;
    copy.setAttribute("aria-label", "Copy the terminal command instead");
    copy.setAttribute("aria-describedby", code.id);
    line.append("Or in a terminal: ", code, " ", copy);
    box.append(line);
  }
  return box;
}

function buildKey(v: VariableStatus, ui: KeysUi, id: string): HTMLLIElement {
  const item = el("li", "key");
  item.dataset.variable = v.name;
  item.dataset.source = v.source;
  const head = el("p", "key__head");
  head.append(el("code", "key__name", v.name), " ", el("span", "key__state", SOURCE_TEXT[v.source]));
  if (v.field) head.append(" ", el("span", "row__field", `in ${v.field}`));
  item.append(head);
  const busy = ui.busy === v.name;
  const open = v.source === "missing" || ui.editing === v.name;
  if (open) {
    const form = el("form", "key__form");
    form.dataset.control = "key-form";
    form.dataset.variable = v.name;
    form.noValidate = true;
    const input = el("input", "flow__input");
    input.id = keyId(id, v.name);
    input.type = "password";
    input.name = v.name;
    input.autocomplete = "off";
    input.spellcheck = false;
    input.dataset.control = "key-value";
    input.placeholder = v.source === "missing" ? "Paste the key" : "Paste the new value";
    input.setAttribute("aria-label", `Value of ${v.name}`);
    const err = ui.error && ui.error.variable === v.name ? ui.error.error : null;
    if (err) {
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", `${keyId(id, v.name)}-error`);
    }
    const save = el("button", "btn btn--primary", busy ? "Saving…" : "Save");
    save.type = "submit";
    save.dataset.control = "save-key";
    save.setAttribute("aria-label", `Save ${v.name}`);
    if (busy) save.setAttribute("aria-disabled", "true");
    form.append(input, save);
    if (ui.editing === v.name) {
      const cancel = el("button", "btn", "Cancel");
      cancel.type = "button";
      cancel.dataset.control = "cancel-key";
      cancel.dataset.variable = v.name;
      form.append(cancel);
    }
    item.append(form);
    if (err) item.append(buildErrorNotice(err, `${keyId(id, v.name)}-error`, "key__error"));
    return item;
  }
  if (v.source === "vault" || v.source === "environment" || v.source === "locked") {
    const actions = el("div", "key__actions");
    const replace = el("button", "btn", v.source === "environment" ? "Store in Patchbay" : "Replace");
    replace.type = "button";
    replace.dataset.control = "replace-key";
    replace.dataset.variable = v.name;
    replace.setAttribute("aria-label", `${replace.textContent} ${v.name}`);
    actions.append(replace);
    if (v.source !== "environment") {
      const confirming = ui.clearing === v.name;
      const clear = el("button", "btn", busy ? "Clearing…" : confirming ? `Confirm clear` : "Clear");
      clear.type = "button";
      clear.dataset.control = confirming ? "confirm-clear-key" : "clear-key";
      clear.dataset.variable = v.name;
      clear.setAttribute("aria-label", confirming ? `Confirm: clear ${v.name} from the keychain` : `Clear ${v.name}`);
      if (confirming) clear.classList.add("btn--danger-confirm");
      if (busy) clear.setAttribute("aria-disabled", "true");
      actions.append(clear);
      if (confirming) {
        const keep = el("button", "btn", "Keep");
        keep.type = "button";
        keep.dataset.control = "keep-key";
        keep.dataset.variable = v.name;
        actions.append(keep);
      }
    }
    item.append(actions);
    const err = ui.error && ui.error.variable === v.name ? ui.error.error : null;
    if (err) item.append(buildErrorNotice(err, `${keyId(id, v.name)}-error`, "key__error"));
  }
  return item;
}

/** What the Keys part needs of the window. */
export interface KeysHost {
  readonly backend: Backend;
  keys(name: string): KeysUi;
  setKeys(name: string, keys: KeysUi): void;
  render(report: StatusReport): void;
  rowEl(name: string): HTMLElement | undefined;
  announce(text: string): void;
}

/** The Keys part's clicks and submits, for the row `name`. */
export class KeysActions {
  constructor(private readonly host: KeysHost) {}

  /** Handles a click on one of the Keys part's buttons; false for any other control. */
  click(btn: HTMLButtonElement, name: string): boolean {
    const variable = btn.dataset.variable ?? "";
    const k = this.host.keys(name);
    switch (btn.dataset.control) {
      case "replace-key":
        this.host.setKeys(name, { ...k, editing: variable, clearing: null, error: null });
        this.focusField(name, variable);
        return true;
      case "cancel-key":
        this.host.setKeys(name, { ...k, editing: null, error: null });
        this.focusControl(name, variable, "replace-key");
        return true;
      case "clear-key":
        this.host.setKeys(name, { ...k, clearing: variable, error: null });
        this.focusControl(name, variable, "confirm-clear-key");
        return true;
      case "keep-key":
        this.host.setKeys(name, { ...k, clearing: null });
        this.focusControl(name, variable, "clear-key");
        return true;
      case "confirm-clear-key":
        if (btn.getAttribute("aria-disabled") !== "true") void this.clear(name, variable);
        return true;
      default:
        return false;
    }
  }

  /** Handles the submit of a key's form; false for any other form. */
  submit(form: HTMLFormElement, name: string): boolean {
    if (form.dataset.control !== "key-form") return false;
    void this.save(name, form.dataset.variable ?? "", form);
    return true;
  }

  /** Escape in a Replace field or a pending Clear: back to the buttons. False: nothing open. */
  escape(name: string): boolean {
    const k = this.host.keys(name);
    const open = k.editing ?? k.clearing;
    if (!open) return false;
    this.host.setKeys(name, { ...k, editing: null, clearing: null, error: null });
    this.focusControl(name, open, k.editing ? "replace-key" : "clear-key");
    return true;
  }

  private async save(name: string, variable: string, form: HTMLFormElement): Promise<void> {
    const k = this.host.keys(name);
    if (k.busy) return;
    const input = form.querySelector<HTMLInputElement>("[data-control=key-value]");
    const value = input?.value ?? "";
    if (value.trim() === "") {
      this.host.setKeys(name, { ...k, error: { variable, error: { kind: "invalid_input", message: `Paste the value of ${variable} first.` } } });
      this.focusField(name, variable);
      return;
    }
    this.host.setKeys(name, { ...k, busy: variable, error: null });
    try {
      const report = await this.host.backend.setConnectorKey(name, variable, value);
      this.host.setKeys(name, {});
      this.host.render(report);
      const c = report.connectors.find((x) => x.name === name);
      this.host.announce(`${variable} stored in the keychain${c ? `; ${c.title || name} is ${c.label}` : ""}`);
      this.focusNext(name);
    } catch (err) {
      this.host.setKeys(name, { ...this.host.keys(name), busy: null, error: { variable, error: toBackendError(err) } });
      this.focusField(name, variable);
    }
  }

  private async clear(name: string, variable: string): Promise<void> {
    const k = this.host.keys(name);
    if (k.busy) return;
    this.host.setKeys(name, { ...k, busy: variable, error: null });
    try {
      const report = await this.host.backend.clearConnectorKey(name, variable);
      this.host.setKeys(name, {});
      this.host.render(report);
      this.host.announce(`${variable} cleared from the keychain`);
      this.focusNext(name);
    } catch (err) {
      this.host.setKeys(name, { ...this.host.keys(name), busy: null, clearing: null, error: { variable, error: toBackendError(err) } });
      this.focusControl(name, variable, "clear-key");
    }
  }

  /** After a save or clear: the next field still waiting, else the row. */
  private focusNext(name: string): void {
    const row = this.host.rowEl(name);
    (row?.querySelector<HTMLElement>("[data-control=key-value]") ?? row)?.focus({ preventScroll: true });
  }

  private focusField(name: string, variable: string): void {
    this.focusControl(name, variable, "key-value");
  }

  private focusControl(name: string, variable: string, control: string): void {
    this.host
      .rowEl(name)
      ?.querySelector<HTMLElement>(`li[data-variable="${CSS.escape(variable)}"] [data-control="${control}"]`)
      ?.focus();
  }
}

/** A rebuilt row keeps what was typed into its masked fields (the window's state never holds
 * it): each password field's value moves to the field of the same id. */
export function carryTypedSecrets(from: HTMLElement | undefined, to: HTMLElement): void {
  if (!from) return;
  for (const old of from.querySelectorAll<HTMLInputElement>("input[type=password]")) {
    if (old.value === "" || !old.id) continue;
    const fresh = to.querySelector<HTMLInputElement>(`input[type=password]#${CSS.escape(old.id)}`);
    if (fresh) fresh.value = old.value;
  }
}
