// Small text helpers: relative times and inline `code` spans, all built as DOM (never HTML).
import { icon } from "./icons";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** "42 min", "3 h", "5 days"; null when the span is under a minute. */
export function spanText(ms: number): string | null {
  const a = Math.abs(ms);
  if (a < MIN) return null;
  if (a < HOUR) return `${Math.round(a / MIN)} min`;
  if (a < 48 * HOUR) return `${Math.round(a / HOUR)} h`;
  const days = Math.round(a / DAY);
  return `${days} days`;
}

export function parseTime(iso: string | null | undefined): number | null {
  if (!iso) return null;
  // Milliseconds at most: `degraded.since` can come with nanoseconds (chrono's default), which
  // not every engine's Date.parse takes.
  const t = Date.parse(iso.replace(/(\.\d{3})\d+/, "$1"));
  return Number.isNaN(t) ? null : t;
}

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function absoluteText(t: number): string {
  return absolute.format(new Date(t));
}

/** "expires in 42 min" / "expired 3 h ago" (capitalised by CSS where it starts a sentence). */
export function expiryText(expiresAt: number, nowMs: number): string {
  const diff = expiresAt - nowMs;
  const span = spanText(diff);
  if (diff > 0) return span ? `expires in ${span}` : "expires in less than a minute";
  return span ? `expired ${span} ago` : "expired just now";
}

/** "updated 3 h ago" style: a past moment relative to now. */
export function agoText(t: number, nowMs: number): string {
  const diff = nowMs - t;
  const span = spanText(diff);
  if (diff < 0) return span ? `in ${span}` : "just now";
  return span ? `${span} ago` : "just now";
}

/** "in 3 min" / "in under a minute": a future moment relative to now ("due" when it has passed). */
export function untilText(t: number, nowMs: number): string {
  const diff = t - nowMs;
  if (diff <= 0) return "due now";
  const span = spanText(diff);
  return span ? `in ${span}` : "in under a minute";
}

/** Appends `text`, turning `backtick` spans into <code>. Unbalanced backticks stay literal. */
export function appendRich(parent: HTMLElement, text: string): void {
  const parts = text.split("`");
  if (parts.length % 2 === 0) {
    parent.append(document.createTextNode(text));
    return;
  }
  parts.forEach((part, i) => {
    if (part === "") return;
    if (i % 2 === 1) {
      const code = document.createElement("code");
      code.textContent = part;
      parent.append(code);
    } else {
      parent.append(document.createTextNode(part));
    }
  });
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** An address as selectable text with a Copy button (the window cannot open URLs itself). */
export function buildLinkLine(url: string, id: string, copyLabel = "Copy the authorization address"): HTMLDivElement {
  const line = el("div", "linkline");
  const code = el("code", "linkline__url", url);
  code.id = id;
  const copy = el("button", "btn linkline__copy", "Copy");
  copy.type = "button";
  copy.dataset.control = "copy-link";
  copy.dataset.copy = url;
  copy.setAttribute("aria-label", copyLabel);
  copy.setAttribute("aria-describedby", id);
  line.append(code, copy);
  return line;
}

/** One sentence per kind, for a message too technical to lead with. Kinds whose messages are
 * written for people (invalid input, refused, unknown connector, ...) have none. */
const KIND_SENTENCE: Partial<Record<string, string>> = {
  secret_store: "The system keychain did not answer.",
  io: "Patchbay could not read or write one of its files.",
  catalog_write: "Patchbay could not save your catalog.",
  client_config: "Patchbay could not change that app's settings.",
  runtime_store: "Patchbay could not update the agent's credential file.",
  oauth: "Signing in with the server did not work.",
  timed_out: "The server took too long to answer.",
  health_store: "Patchbay could not read its health records.",
  gateway_clients: "Patchbay could not update the gateway's clients.",
  launch_at_login: "Patchbay could not change the login item.",
  watch: "Patchbay could not watch a file for changes.",
  internal: "Something went wrong inside Patchbay.",
};

/** What reads as machine text: a file path, an OS or resolver error, a transport's words. */
const TECHNICAL = /os error|error sending request|failed to lookup|tcp connect|connection refused|dns error|(^|\s)\/[\w.-]+\/|[A-Z]:\\/i;

/** An error as the window says it: the message itself when it is short and plain, else the
 * kind's one sentence with the message as its detail (under a "Details" disclosure). */
export function humanError(kind: string, message: string): { sentence: string; detail: string | null } {
  const sentence = KIND_SENTENCE[kind];
  if (sentence && (message.length > 140 || TECHNICAL.test(message))) return { sentence, detail: message };
  return { sentence: message, detail: null };
}

/** The detail under a closed disclosure, selectable. */
export function buildErrorDetail(detail: string): HTMLDetailsElement {
  const more = el("details", "notice__more");
  more.append(el("summary", "notice__more-summary", "Details"), el("p", "notice__detail", detail));
  return more;
}

/** An error said in a form (the paste-back, a client, a key): one sentence as an alert (the
 * detail under a disclosure, see humanError), its kind on the text for tests and styles. */
export function buildErrorNotice(error: { kind: string; message: string }, id: string, className: string): HTMLDivElement {
  const box = el("div", `notice notice--error ${className}`);
  box.id = id;
  box.setAttribute("role", "alert");
  const { sentence, detail } = humanError(error.kind, error.message);
  const text = el("p", "notice__text", sentence);
  text.dataset.kind = error.kind;
  const body = el("div", "notice__body");
  body.append(text);
  if (detail) body.append(buildErrorDetail(detail));
  box.append(icon("warning", "icon notice__icon"), body);
  return box;
}
