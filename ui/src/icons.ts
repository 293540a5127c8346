// Per-state glyphs (16×16, stroke-based), built with createElementNS: no HTML strings, CSP-safe.
// Each state has its own shape so the badge never relies on colour alone.

import type { ConnectorStateId } from "./types";

const NS = "http://www.w3.org/2000/svg";

type Shape = [tag: string, attrs: Record<string, string>];

const circle = (r = "6.25"): Shape => ["circle", { cx: "8", cy: "8", r }];

const SHAPES: Record<
  ConnectorStateId | "oneshot" | "warning" | "info" | "close" | "refresh" | "chevron" | "pulse" | "swap" | "degraded" | "test" | "client" | "plus" | "search" | "back",
  Shape[]
> = {
  // check in a circle
  ready: [circle(), ["path", { d: "M5.2 8.2l1.9 1.9 3.7-4" }]],
  // key
  needs_authorization: [
    ["circle", { cx: "5.3", cy: "10.7", r: "3.1" }],
    ["path", { d: "M7.5 8.5l5.9-5.9M11.4 4.6l1.9 1.9M9.7 6.3l1.5 1.5" }],
  ],
  // clock
  token_expired: [circle(), ["path", { d: "M8 4.8V8l2.3 1.5" }]],
  // circular arrow
  needs_reauth: [["path", { d: "M12.8 8a4.8 4.8 0 1 1-1.4-3.4" }], ["path", { d: "M12 2.6v2.6H9.4" }]],
  // slot with a missing piece: dashed box with a plus
  missing_configuration: [
    ["rect", { x: "2.2", y: "2.2", width: "11.6", height: "11.6", rx: "2.5", "stroke-dasharray": "2.2 1.8" }],
    ["path", { d: "M8 5.3v5.4M5.3 8h5.4" }],
  ],
  // no-entry: circle with a slash
  unavailable: [circle(), ["path", { d: "M3.6 12.4l8.8-8.8" }]],
  // lock with an x
  secret_store_unreachable: [
    ["rect", { x: "3", y: "7", width: "10", height: "7", rx: "1.6" }],
    ["path", { d: "M5.2 7V5.2a2.8 2.8 0 0 1 5.6 0V7" }],
    ["path", { d: "M6.6 9.2l2.8 2.8M9.4 9.2l-2.8 2.8" }],
  ],
  // open circle with a dash
  no_credential_required: [circle(), ["path", { d: "M5.3 8h5.4" }]],
  // warning triangle
  probe_failed: [
    ["path", { d: "M8 2.4l6 10.6H2z", "stroke-linejoin": "round" }],
    ["path", { d: "M8 6.6v3" }],
    ["circle", { cx: "8", cy: "11.3", r: "0.35" }],
  ],
  // "one shot": an info-like circle with a mark
  oneshot: [circle(), ["path", { d: "M8 4.6v4" }], ["circle", { cx: "8", cy: "11", r: "0.35" }]],
  warning: [
    ["path", { d: "M8 2.4l6 10.6H2z", "stroke-linejoin": "round" }],
    ["path", { d: "M8 6.6v3" }],
    ["circle", { cx: "8", cy: "11.3", r: "0.35" }],
  ],
  info: [circle(), ["path", { d: "M8 7.2v4" }], ["circle", { cx: "8", cy: "5", r: "0.35" }]],
  close: [["path", { d: "M4.5 4.5l7 7M11.5 4.5l-7 7" }]],
  // the refresh line: circular arrow (the drawer's toggle: a chevron pointing right)
  refresh: [["path", { d: "M12.8 8a4.8 4.8 0 1 1-1.4-3.4" }], ["path", { d: "M12 2.6v2.6H9.4" }]],
  chevron: [["path", { d: "M6.2 3.8L10.4 8l-4.2 4.2" }]],
  // the health line: a pulse
  pulse: [["path", { d: "M1.8 8.4h2.6l1.5-3.6 2.6 7 1.7-4.8 1 1.4h2.9" }]],
  // a transport that answered after the configured one was rejected: two opposed arrows
  swap: [["path", { d: "M2.8 5.6h9.4M9.8 3.2l2.4 2.4-2.4 2.4M13.2 10.4H3.8M6.2 8l-2.4 2.4 2.4 2.4" }]],
  // degraded: a plug pulled apart
  degraded: [
    ["path", { d: "M2.2 13.8l2.3-2.3M13.8 2.2l-2.3 2.3" }],
    ["path", { d: "M4.5 7.2l4.3 4.3-1 1a3 3 0 0 1-4.3-4.3z" }],
    ["path", { d: "M11.5 8.8L7.2 4.5l1-1a3 3 0 0 1 4.3 4.3z" }],
  ],
  // the test result that answered: a check mark in a circle
  test: [circle(), ["path", { d: "M5.2 8.2l1.9 1.9 3.7-4" }]],
  // found in a client's config: an app window
  client: [
    ["rect", { x: "2", y: "3", width: "12", height: "10", rx: "1.6" }],
    ["path", { d: "M2 6h12M4.2 4.6h.01M5.8 4.6h.01" }],
  ],
  // add a connector
  plus: [["path", { d: "M8 3.2v9.6M3.2 8h9.6" }]],
  // the gallery's search field
  search: [["circle", { cx: "7", cy: "7", r: "4.2" }], ["path", { d: "M10.1 10.1l3.4 3.4" }]],
  // back to the list
  back: [["path", { d: "M9.8 3.8L5.6 8l4.2 4.2" }]],
};

export type IconName = keyof typeof SHAPES;

export function icon(name: IconName, className = "icon"): SVGSVGElement {
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", className);
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  for (const [tag, attrs] of SHAPES[name] ?? SHAPES.probe_failed) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    svg.append(node);
  }
  return svg;
}
