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

/** An error said in a form (the paste-back, a client, a key): its message as an alert, its kind
 * on the text for tests and styles. */
export function buildErrorNotice(error: { kind: string; message: string }, id: string, className: string): HTMLDivElement {
  const box = el("div", `notice notice--error ${className}`);
  box.id = id;
  box.setAttribute("role", "alert");
  const text = el("p", "notice__text", error.message);
  text.dataset.kind = error.kind;
  box.append(icon("warning", "icon notice__icon"), text);
  return box;
}
