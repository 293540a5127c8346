// "Add custom connector" (issue 21): a server the catalog lacks, from a URL (remote) or a command
// with arguments and environment (stdio). Its values are typed into rows (name, value, and whether
// the value is a secret: masked, and kept in the vault under a `${VAR}` the entry holds); the
// form's Check asks the server, with one request, whether it wants OAuth (probe_remote_url). Add
// sends it to add_custom_connector, whose refusal names the field ("url: use https://…"): the
// message is shown at that field. The rules (names, https, taken names) are the backend's alone;
// the form only refuses an empty required field without a call. The form owns its DOM and is
// never rebuilt by a status change, so what is typed survives, and secret values are read from
// their fields when sent, never kept in the window's state.

import type { BackendError } from "./types";
import type { CustomConnector, CustomValue, RemoteAuth } from "./generated/ipc";
import { buildErrorNotice, el } from "./format";

export interface CustomFormActions {
  /** Adds the connector; rejects with a BackendError. */
  add(spec: CustomConnector): Promise<void>;
  /** The OAuth probe for `url`; rejects with a BackendError. */
  probe(url: string): Promise<RemoteAuth>;
}

type Kind = "remote" | "stdio";

const PROBE_TEXT: Record<RemoteAuth["kind"], string> = {
  oauth: "It asks for OAuth: once added, Authorize it.",
  open: "It answered without asking for a credential.",
  unknown: "Could not tell whether it wants OAuth",
};

function labelled(label: string, input: HTMLElement, hint?: string): HTMLDivElement {
  const box = el("div", "custom__field");
  const l = el("label", "custom__label", label);
  l.htmlFor = input.id;
  box.append(l, input);
  if (hint) {
    const h = el("p", "custom__hint", hint);
    h.id = `${input.id}-hint`;
    input.setAttribute("aria-describedby", h.id);
    box.append(h);
  }
  return box;
}

function textInput(id: string, control: string, placeholder: string): HTMLInputElement {
  const input = el("input", "flow__input");
  input.id = id;
  input.type = "text";
  input.autocomplete = "off";
  input.spellcheck = false;
  input.dataset.control = control;
  input.placeholder = placeholder;
  return input;
}

export class CustomConnectorForm {
  readonly element = el("form", "custom");
  private readonly name = textInput("custom-name", "custom-name", "e.g. postgres");
  private readonly url = textInput("custom-url", "custom-url", "https://mcp.example.com/mcp");
  private readonly command = textInput("custom-command", "custom-command", "e.g. npx");
  private readonly args = el("textarea", "flow__input custom__args");
  private readonly values = el("ul", "custom__values");
  private readonly probeLine = el("p", "custom__probe");
  private readonly checkButton = el("button", "btn", "Check");
  private readonly submit = el("button", "btn btn--primary", "Add connector");
  private readonly errorBox = el("div", "custom__error");
  private readonly remotePart = el("div", "custom__part");
  private readonly stdioPart = el("div", "custom__part");
  private readonly valuesLabel = el("p", "custom__label");
  private kind: Kind = "remote";
  private rows = 0;
  private busy = false;

  constructor(private readonly actions: CustomFormActions) {
    const f = this.element;
    f.id = "custom-form";
    f.noValidate = true;
    f.setAttribute("aria-labelledby", "custom-title");
    const title = el("h3", "custom__title", "Add a custom connector");
    title.id = "custom-title";
    f.append(title, labelled("Name", this.name, "Letters, digits, - and _. It names the connector everywhere."));

    const kinds = el("fieldset", "custom__kinds");
    kinds.append(el("legend", "custom__label", "How it is reached"));
    for (const [kind, text] of [
      ["remote", "A URL (remote server)"],
      ["stdio", "A command (local server)"],
    ] as [Kind, string][]) {
      const label = el("label", "custom__kind");
      const radio = el("input");
      radio.type = "radio";
      radio.name = "custom-kind";
      radio.value = kind;
      radio.checked = kind === this.kind;
      radio.dataset.control = "custom-kind";
      radio.addEventListener("change", () => this.setKind(kind));
      label.append(radio, " ", text);
      kinds.append(label);
    }
    f.append(kinds);

    const urlRow = el("div", "custom__inline");
    this.checkButton.type = "button";
    this.checkButton.dataset.control = "custom-check";
    this.checkButton.setAttribute("aria-label", "Check whether it wants OAuth");
    this.checkButton.addEventListener("click", () => void this.check());
    urlRow.append(this.url, this.checkButton);
    const urlField = labelled("URL", urlRow);
    urlField.querySelector("label")!.htmlFor = this.url.id;
    this.probeLine.id = "custom-probe";
    this.probeLine.setAttribute("role", "status");
    this.url.setAttribute("aria-describedby", this.probeLine.id);
    this.remotePart.append(urlField, this.probeLine);

    this.args.id = "custom-args";
    this.args.rows = 2;
    this.args.spellcheck = false;
    this.args.dataset.control = "custom-args";
    this.args.placeholder = "-y\n@modelcontextprotocol/server-postgres";
    this.stdioPart.append(
      labelled("Command", this.command),
      labelled("Arguments", this.args, "One per line, in order."),
    );
    this.stdioPart.hidden = true;
    f.append(this.remotePart, this.stdioPart);

    this.valuesLabel.id = "custom-values-label";
    this.values.setAttribute("aria-labelledby", this.valuesLabel.id);
    const more = el("button", "btn btn--quiet", "Add a value");
    more.type = "button";
    more.dataset.control = "custom-add-value";
    more.addEventListener("click", () => this.addRow(true)?.focus());
    f.append(this.valuesLabel, this.values, more);

    this.errorBox.id = "custom-error";
    this.submit.type = "submit";
    this.submit.dataset.control = "custom-submit";
    const foot = el("div", "custom__foot");
    foot.append(this.submit);
    f.append(this.errorBox, foot);
    f.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.send();
    });
    this.setKind("remote");
  }

  /** Empties the form for a new connector. */
  reset(): void {
    this.element.reset();
    this.values.replaceChildren();
    this.probeLine.textContent = "";
    this.clearErrors();
    this.setKind("remote");
  }

  focus(): void {
    this.name.focus();
  }

  private setKind(kind: Kind): void {
    this.kind = kind;
    for (const r of this.element.querySelectorAll<HTMLInputElement>("input[name=custom-kind]")) r.checked = r.value === kind;
    this.remotePart.hidden = kind !== "remote";
    this.stdioPart.hidden = kind !== "stdio";
    this.valuesLabel.textContent = kind === "remote" ? "Headers (an API key, say)" : "Environment";
    this.clearErrors();
  }

  /** A name/value row; the value is masked while "Secret" is ticked. */
  private addRow(secret: boolean): HTMLInputElement {
    const i = this.rows++;
    const row = el("li", "custom__value");
    row.dataset.row = String(i);
    const name = textInput(`custom-value-${i}-name`, "custom-value-name", this.kind === "remote" ? "Authorization" : "API_KEY");
    name.setAttribute("aria-label", `Name of value ${i + 1}`);
    const value = el("input", "flow__input");
    value.id = `custom-value-${i}-value`;
    value.type = secret ? "password" : "text";
    value.autocomplete = "off";
    value.spellcheck = false;
    value.dataset.control = "custom-value-value";
    value.setAttribute("aria-label", `Value ${i + 1}`);
    const mark = el("label", "custom__secret");
    const box = el("input");
    box.type = "checkbox";
    box.checked = secret;
    box.dataset.control = "custom-value-secret";
    box.addEventListener("change", () => (value.type = box.checked ? "password" : "text"));
    mark.append(box, " Secret");
    const drop = el("button", "btn btn--quiet", "Remove");
    drop.type = "button";
    drop.setAttribute("aria-label", `Remove value ${i + 1}`);
    drop.addEventListener("click", () => {
      row.remove();
      this.name.focus();
    });
    row.append(name, value, mark, drop);
    this.values.append(row);
    return name;
  }

  /** The rows as sent, in order; `index` is each row's position among those sent. */
  private readValues(): CustomValue[] {
    return [...this.values.querySelectorAll<HTMLLIElement>("li.custom__value")]
      .map((row) => ({
        name: row.querySelector<HTMLInputElement>("[data-control=custom-value-name]")!.value.trim(),
        value: row.querySelector<HTMLInputElement>("[data-control=custom-value-value]")!.value,
        secret: row.querySelector<HTMLInputElement>("[data-control=custom-value-secret]")!.checked,
      }))
      .filter((v) => v.name !== "" || v.value !== "");
  }

  private spec(): CustomConnector {
    const values = this.readValues();
    const server: CustomConnector["server"] =
      this.kind === "remote"
        ? { kind: "remote", url: this.url.value.trim(), headers: values }
        : {
            kind: "stdio",
            command: this.command.value.trim(),
            args: this.args.value.split("\n").map((a) => a.trim()).filter((a) => a !== ""),
            env: values,
          };
    return { name: this.name.value.trim(), title: null, server };
  }

  private clearErrors(): void {
    this.errorBox.replaceChildren();
    for (const i of this.element.querySelectorAll("[aria-invalid]")) {
      i.removeAttribute("aria-invalid");
      i.removeAttribute("aria-errormessage");
    }
  }

  /** Shows `message` at `field` (or under the form) and puts the focus there. */
  private showError(error: BackendError): void {
    this.clearErrors();
    const field = "field" in error ? (error.field ?? null) : null;
    const target = this.fieldInput(field);
    this.errorBox.append(buildErrorNotice(error, "custom-error-text", "custom__notice"));
    if (target) {
      target.setAttribute("aria-invalid", "true");
      target.setAttribute("aria-errormessage", "custom-error-text");
      target.focus();
    }
  }

  private fieldInput(field: string | null): HTMLElement | null {
    if (field === "name") return this.name;
    if (field === "url") return this.url;
    if (field === "command") return this.command;
    const m = field ? /^(?:headers|env)\[(\d+)\]\.name$/.exec(field) : null;
    if (m) {
      const sent = [...this.values.querySelectorAll<HTMLLIElement>("li.custom__value")].filter((row) => {
        const n = row.querySelector<HTMLInputElement>("[data-control=custom-value-name]")!.value.trim();
        const v = row.querySelector<HTMLInputElement>("[data-control=custom-value-value]")!.value;
        return n !== "" || v !== "";
      });
      return sent[Number(m[1])]?.querySelector<HTMLInputElement>("[data-control=custom-value-name]") ?? null;
    }
    return null;
  }

  private async check(): Promise<void> {
    const url = this.url.value.trim();
    if (url === "") {
      this.showError({ kind: "invalid_input", field: "url", message: "give the server's URL first" });
      return;
    }
    this.clearErrors();
    this.probeLine.textContent = "Asking the server…";
    this.checkButton.setAttribute("aria-disabled", "true");
    try {
      const found = await this.actions.probe(url);
      this.probeLine.dataset.found = found.kind;
      this.probeLine.textContent = found.kind === "unknown" ? `${PROBE_TEXT.unknown}: ${found.detail}.` : PROBE_TEXT[found.kind];
    } catch (err) {
      this.probeLine.textContent = "";
      this.showError(err as BackendError);
    } finally {
      this.checkButton.removeAttribute("aria-disabled");
    }
  }

  private async send(): Promise<void> {
    if (this.busy) return;
    const spec = this.spec();
    const empty: [string, string] | null =
      spec.name === ""
        ? ["name", "give the connector a name"]
        : spec.server.kind === "remote" && spec.server.url === ""
          ? ["url", "give the server's URL"]
          : spec.server.kind === "stdio" && spec.server.command === ""
            ? ["command", "give the command that starts the server"]
            : null;
    if (empty) {
      this.showError({ kind: "invalid_input", field: empty[0], message: empty[1] });
      return;
    }
    this.busy = true;
    this.clearErrors();
    this.submit.textContent = "Adding…";
    this.submit.setAttribute("aria-disabled", "true");
    try {
      await this.actions.add(spec);
      this.reset();
    } catch (err) {
      this.showError(err as BackendError);
    } finally {
      this.busy = false;
      this.submit.textContent = "Add connector";
      this.submit.removeAttribute("aria-disabled");
    }
  }
}
