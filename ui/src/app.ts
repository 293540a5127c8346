// The Connectors window: owns the DOM, renders reports in place, handles input.

import type { Backend } from "./backend";
import { takePageBoot, toBackendError } from "./backend";
import { clientEntryFor } from "./client-entry";
import { CustomConnectorForm } from "./custom-connector";
import { confirmWrite, type WriteKind } from "./write-confirm";
import { carryTypedSecrets, KeysActions, type KeysUi } from "./keys";
import { now } from "./clock";
import { el } from "./format";
import { icon } from "./icons";
import type {
  BackendError,
  ClientTarget,
  ClientWrite,
  Connector,
  ConnectorCheck,
  ConnectorStateId,
  GalleryEntry,
  HealthBoard,
  HealthRow,
  GatewayClients,
  StartedFlow,
  StatusReport,
  SwitchCandidate,
} from "./types";
import type { WritePreview } from "./generated/ipc";
import {
  buildBanners,
  buildGalleryEntry,
  buildGatewayRow,
  buildRow,
  buildSources,
  buildUnclaimedRow,
  galleryMatches,
  outcomeTone,
  refreshTimes,
  runtimeName,
  setDeleteButton,
  setRevokeButton,
  writtenText,
  summaryText,
  transportLabel,
  type GalleryUi,
  type PasteFlow,
  type RowClients,
  type RowUi,
} from "./view";

const RECEIVER_TEXT = "Finish in your browser. This row updates by itself once Patchbay has the credential.";
const NO_ROW: RowUi = { notice: null, pending: false, flow: null };

const CONFIRM_MS = 4000;
const HIGHLIGHT_MS = 2400;
const TICK_MS = 30_000;

/** The clients whose configs Patchbay reads, as the first-run view names them. */
const CLIENT_NAMES = "Claude Code, Codex, Claude Desktop, Cursor, VS Code, Windsurf and Gemini CLI";

type FocusDesc =
  /** `sel`: a selector for the focused control when several share its data-control. */
  | { kind: "row"; name: string; control: string | null; index: number; sel?: string | null }
  | { kind: "unclaimed"; key: string; control: string | null; index: number };

/** The drawers a row keeps open across re-renders, and the RowUi flag each one is kept in. */
const DRAWERS = { refresh: "historyOpen", health: "healthOpen", tools: "toolsOpen", clients: "clientsOpen" } as const;
type DrawerName = keyof typeof DRAWERS;

function isDrawer(name: string | undefined): name is DrawerName {
  return name !== undefined && Object.hasOwn(DRAWERS, name);
}

/** An authorize offered by the row itself or by its last Test. */
function authorizeAction(a: string | null | undefined): boolean {
  return a === "authorize" || a === "reauthorize";
}

export class ConnectorsWindow {
  private report: StatusReport | null = null;
  /** The health board's rows by connector (empty until the first board arrives). */
  private health = new Map<string, HealthRow>();
  /** Only the newest board request's answer is applied. */
  private boardSeq = 0;
  private readonly rowUi = new Map<string, RowUi>();
  private readonly rows = new Map<string, { el: HTMLLIElement; sig: string }>();
  private readonly confirmTimers = new Map<string, number>();
  private activeName: string | null = null;
  // A tray item that opens the window for the first time passes its row as ?focus=NAME,
  // since an event sent before the page listens is lost.
  private pendingFocus: string | null = new URLSearchParams(window.location.search).get("focus");
  // ... and the tray's "Authorize …" items and patchbay://authorize/NAME links add &authorize=1.
  // "1": start authorizing (the tray); "ask": ask first (a patchbay:// link).
  private pendingAuthorize: "start" | "ask" | null = (() => {
    const v = new URLSearchParams(window.location.search).get("authorize");
    return v === "1" ? "start" : v === "ask" ? "ask" : null;
  })();
  private highlightTimer = 0;
  /** The page has registered its listeners and said so (page_listening): from then on a row
   * request that came before the rows is applied with them. */
  private listening = false;
  /** A request to authorize a connector the catalog does not have (a stale tray item or link). */
  private requestError: string | null = null;

  private readonly header = el("header", "header");
  private readonly summary = el("p", "summary");
  /** The catalog files, under a closed disclosure: where entries come from is not the first
   * thing a user needs (a file that cannot be read still raises a banner). */
  private readonly sources = el("details", "sources");
  private readonly banners = el("div", "banners");
  private readonly scroller = el("main", "scroller");
  private readonly list = el("ul", "group list");
  /** The pointer is over the list: a new report keeps the rows where they are. */
  private pointerOverList = false;
  /** A report came while the pointer was over the list: sort once it leaves. */
  private resortDeferred = false;
  private readonly empty = el("div", "empty");
  private readonly unclaimed = el("section", "unclaimed");
  private readonly unclaimedList = el("ul", "group ulist");
  private readonly unclaimedCount = el("span", "section-count");
  private readonly errorView = el("section", "error-view");
  private readonly connectorsSection = el("section", "connectors");
  private readonly addButton = el("button", "btn header__add");

  // ---- the gallery ("Add connector") ----
  private galleryOpen = false;
  /** Where the focus goes back to when the gallery closes. */
  private galleryOpener: HTMLElement | null = null;
  private readonly galleryUi = new Map<string, GalleryUi>();
  private readonly galleryRows = new Map<string, { el: HTMLLIElement; sig: string }>();
  private readonly gallery = el("section", "gallery");
  private readonly gallerySearch = el("input", "gallery__input");
  private readonly galleryCount = el("p", "gallery__count");
  private readonly galleryList = el("ul", "group gallery__list");
  private readonly galleryNone = el("p", "gallery__none");
  private readonly customToggle = el("button", "btn gallery__custom");
  private readonly customForm = new CustomConnectorForm({
    add: async (spec) => {
      let report: StatusReport;
      try {
        report = await this.backend.addCustomConnector(spec);
      } catch (err) {
        throw toBackendError(err);
      }
      this.customForm.element.hidden = true;
      this.customToggle.setAttribute("aria-expanded", "false");
      this.landed(spec.name, report, null);
    },
    probe: (url) =>
      this.backend.probeRemoteUrl(url).catch((err: unknown) => {
        throw toBackendError(err);
      }),
  });

  // Other MCP clients and the gateway (issue 12).
  /** The clients found on this machine that "Add to" writes. */
  private targets: ClientTarget[] = [];
  /** The mcp-remote entries "Switch to Patchbay" can rewrite. */
  private candidates: SwitchCandidate[] = [];
  private gatewayInfo: GatewayClients | null = null;
  private gatewayError: string | null = null;
  /** Gateway clients whose Revoke waits for its confirmation, or is under way. */
  private readonly revokePhase = new Map<string, { phase: "confirm" | "busy"; timer: number }>();
  private revokeError: { label: string; message: string } | null = null;
  private readonly gatewaySection = el("section", "gateway");
  private readonly gatewayList = el("ul", "group ulist gateway__list");
  private readonly gatewayCount = el("span", "section-count");
  private readonly gatewayNote = el("p", "section-note");
  private readonly gatewayProblem = el("div", "gateway__problem");
  /** The rows' Keys parts: set, replace and clear a connector's variables. */
  private readonly keyActions: KeysActions;

  constructor(
    private readonly root: HTMLElement,
    private readonly backend: Backend,
    private readonly announcer: HTMLElement | null,
  ) {
    this.keyActions = new KeysActions({
      backend,
      keys: (name) => this.rowUi.get(name)?.keys ?? {},
      setKeys: (name, keys: KeysUi) => this.updateRowUi(name, { keys }),
      render: (report) => this.render(report),
      rowEl: (name) => this.rows.get(name)?.el,
      announce: (text) => this.announce(text),
    });
    this.buildSkeleton();
  }

  async start(): Promise<void> {
    // The status and board the page was created with: rows drawn now, before the round trips
    // below. A row request (from the URL) waits for the page to listen, as it always did.
    const boot = takePageBoot();
    if (boot) {
      if (boot.board) this.setBoard(boot.board);
      this.render(boot.report);
      this.root.removeAttribute("aria-busy");
      performance.mark("patchbay:rows"); // read back like patchbay:status
    }
    await Promise.all([
      this.backend.onStatusChanged((r) => this.render(r)),
      this.backend.onHealthChanged(() => void this.loadBoard()),
      this.backend.onFocusConnector((name) => this.focusConnector(name)),
      this.backend.onAuthorizeConnector((name) => this.requestAuthorize(name)),
      this.backend.onAskAuthorizeConnector((name) => this.requestAuthorize(name, true)),
    ]);
    // Requests sent before those listeners existed (to a window created moments ago) were kept
    // for the page: each as its events would have delivered it.
    const queued = await this.backend.pageListening().catch((err: unknown) => {
      console.warn("queued row requests unavailable:", toBackendError(err).message);
      return [];
    });
    this.listening = true;
    // Drawn from the boot, the URL's request waited for the listeners; it came before these.
    if (this.report) this.applyPendingRequest();
    for (const { name, request } of queued) {
      this.focusConnector(name);
      if (request === "authorize") this.requestAuthorize(name);
      else if (request === "ask_to_authorize") this.requestAuthorize(name, true);
    }
    await this.load();
    window.setInterval(() => this.tick(), TICK_MS);
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) this.tick();
    });
  }

  // ---- skeleton -------------------------------------------------------------------------

  private buildSkeleton(): void {
    const titles = el("div", "header__titles");
    titles.append(el("h1", "header__title", "Connectors"), this.summary);
    this.summary.id = "summary";
    this.addButton.type = "button";
    this.addButton.dataset.control = "open-gallery";
    this.addButton.setAttribute("aria-controls", "gallery");
    this.addButton.setAttribute("aria-expanded", "false");
    this.addButton.append(icon("plus", "icon btn__icon"), "Add connector");
    this.addButton.addEventListener("click", () => this.openGallery(this.addButton));
    titles.append(this.addButton);
    this.sources.id = "sources";
    this.header.append(titles, this.sources, this.banners);

    this.list.setAttribute("role", "list");
    this.list.setAttribute("aria-label", "Connectors");
    this.list.setAttribute("aria-describedby", "summary");
    // Rows keep their places under the pointer (a re-sort would move the row about to be
    // clicked); they take the report's order once it leaves the list.
    this.list.addEventListener("pointerenter", () => (this.pointerOverList = true));
    this.list.addEventListener("pointerleave", () => {
      this.pointerOverList = false;
      if (this.resortDeferred && this.report) this.render(this.report);
      this.resortDeferred = false;
    });
    this.list.addEventListener("keydown", (e) => this.onListKey(e));
    this.list.addEventListener("focusin", (e) => this.onListFocus(e));
    this.list.addEventListener("click", (e) => this.onListClick(e));
    this.list.addEventListener("submit", (e) => this.onListSubmit(e));
    this.list.addEventListener("input", (e) => this.onListInput(e));
    this.list.addEventListener("change", (e) => this.onListChange(e));
    // `toggle` does not bubble: listen in the capture phase for every row's history drawer.
    this.list.addEventListener("toggle", (e) => this.onDrawerToggle(e), true);
    // A click anywhere but on the confirm (or its option) cancels a pending disconnect; this
    // runs after the list's own handler, which has already acted on the click.
    document.addEventListener("click", (e) => this.cancelDisconnectsOutside(e.target));

    const connectors = this.connectorsSection;
    connectors.setAttribute("aria-label", "Connectors");
    connectors.append(this.list, this.empty);
    this.empty.hidden = true;
    this.empty.addEventListener("click", (e) => {
      const btn = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-control=open-gallery]");
      if (btn) this.openGallery(btn);
    });
    this.buildGallery();
    document.addEventListener("keydown", (e) => this.onGlobalKey(e));

    const h2 = el("h2", "section-title", "Unclaimed credentials");
    h2.id = "unclaimed-title";
    h2.tabIndex = -1;
    h2.append(this.unclaimedCount);
    this.unclaimed.setAttribute("aria-labelledby", "unclaimed-title");
    this.unclaimed.append(
      h2,
      el(
        "p",
        "section-note",
        "Stored credentials that no catalog entry uses any more. Nothing sends them; delete the ones you no longer need.",
      ),
      this.unclaimedList,
    );
    this.unclaimedList.setAttribute("role", "list");
    this.unclaimedList.setAttribute("aria-labelledby", "unclaimed-title");
    this.unclaimedList.addEventListener("click", (e) => this.onUnclaimedClick(e));
    this.unclaimed.hidden = true;

    const gh2 = el("h2", "section-title", "Gateway clients");
    gh2.id = "gateway-title";
    gh2.tabIndex = -1;
    gh2.append(this.gatewayCount);
    this.gatewaySection.id = "gateway-clients";
    this.gatewaySection.setAttribute("aria-labelledby", "gateway-title");
    this.gatewayNote.id = "gateway-note";
    this.gatewaySection.append(gh2, this.gatewayNote, this.gatewayProblem, this.gatewayList);
    this.gatewayList.setAttribute("role", "list");
    this.gatewayList.setAttribute("aria-labelledby", "gateway-title");
    this.gatewayList.addEventListener("click", (e) => this.onGatewayClick(e));
    this.gatewayList.addEventListener("keydown", (e) => {
      if (e.key !== "Escape") return;
      const li = (e.target as HTMLElement).closest<HTMLLIElement>("li[data-gateway-client]");
      if (li && this.revokePhase.get(li.dataset.gatewayClient!)?.phase === "confirm") {
        e.preventDefault();
        e.stopPropagation();
        this.cancelRevoke(li.dataset.gatewayClient!);
      }
    });
    // A click anywhere but on the confirm cancels a pending revoke.
    document.addEventListener("click", (e) => {
      const own = (e.target as Element | null)?.closest?.("li[data-gateway-client]")?.getAttribute("data-gateway-client");
      for (const [label, p] of this.revokePhase) if (p.phase === "confirm" && label !== own) this.cancelRevoke(label);
    });
    this.gatewaySection.hidden = true;

    this.errorView.hidden = true;
    this.scroller.append(connectors, this.gallery, this.unclaimed, this.gatewaySection, this.errorView);
    this.root.append(this.header, this.scroller);
  }

  // ---- loading / errors -----------------------------------------------------------------

  private async load(): Promise<void> {
    const slow = window.setTimeout(() => this.root.classList.add("is-loading"), 300);
    // The board with the status, so the first render has the health lines; a board that cannot
    // be read leaves them out and nothing else.
    const seq = ++this.boardSeq;
    const board = this.backend.getHealthBoard().then(
      (b) => b,
      (err) => {
        console.warn("health board unavailable:", toBackendError(err).message);
        return null;
      },
    );
    try {
      const r = await this.backend.getStatus();
      // Read back by the app, which logs where a new window's time went (src-tauri/src/window.rs).
      performance.mark("patchbay:status");
      const b = await board;
      if (b && seq === this.boardSeq) this.setBoard(b);
      this.render(r);
      void this.loadClients();
    } catch (err) {
      this.showError(toBackendError(err));
    } finally {
      window.clearTimeout(slow);
      this.root.classList.remove("is-loading");
      this.root.removeAttribute("aria-busy");
    }
  }

  /** Fetches the health board again (on health-changed, after a Test) and re-renders. */
  private async loadBoard(): Promise<void> {
    const seq = ++this.boardSeq;
    let board: HealthBoard;
    try {
      board = await this.backend.getHealthBoard();
    } catch (err) {
      console.warn("health board unavailable:", toBackendError(err).message);
      return;
    }
    if (seq !== this.boardSeq) return;
    this.setBoard(board);
    if (this.report) this.render(this.report);
  }

  private setBoard(board: HealthBoard): void {
    this.health = new Map(board.connectors.map((row) => [row.connector, row]));
  }

  private showError(err: BackendError): void {
    this.root.classList.add("has-error");
    this.errorView.hidden = false;
    this.errorView.replaceChildren();
    const box = el("div", "error-box");
    box.setAttribute("role", "alert");
    box.append(icon("probe_failed", "icon error-box__icon"));
    const body = el("div", "error-box__body");
    body.append(
      el("h2", "error-box__title", "Couldn’t read connector status"),
      el("p", "error-box__message", err.message),
      el("p", "error-box__kind", err.kind),
    );
    const retry = el("button", "btn btn--primary", "Retry");
    retry.type = "button";
    retry.dataset.control = "retry";
    retry.addEventListener("click", async () => {
      if (retry.getAttribute("aria-disabled") === "true") return;
      retry.setAttribute("aria-disabled", "true");
      retry.textContent = "Retrying…";
      await this.load();
      if (!this.errorView.hidden) this.errorView.querySelector<HTMLButtonElement>("[data-control=retry]")?.focus();
    });
    body.append(el("div", "error-box__actions"));
    body.lastElementChild!.append(retry);
    box.append(body);
    this.errorView.append(box);
    this.summary.textContent = "Status unavailable";
    this.summary.className = "summary summary--error";
    retry.focus();
  }

  // ---- rendering ------------------------------------------------------------------------

  render(r: StatusReport): void {
    const previous = this.report;
    this.report = r;
    const focus = this.captureFocus();
    const anchor = this.captureAnchor(focus);
    const t = now();

    this.root.classList.remove("has-error");
    this.errorView.hidden = true;
    this.errorView.replaceChildren();
    this.root.classList.toggle("is-empty", r.connectors.length === 0);

    const s = summaryText(r);
    // No check mark beside "No connectors in use": nothing is fine or wrong yet.
    if (r.connectors.length === 0) this.summary.replaceChildren(s.text);
    else this.summary.replaceChildren(icon(s.ok ? "ready" : "warning", "icon summary__icon"), s.text);
    this.summary.className = `summary ${s.ok ? "summary--ok" : "summary--attention"}`;
    const list = el("span", "sources__list");
    list.append(buildSources(r.catalog.sources));
    this.sources.replaceChildren(el("summary", "sources__summary", "Catalog files"), list);
    this.banners.replaceChildren(...buildBanners(r), ...this.requestBanner());

    this.renderRows(r, t);
    this.renderEmpty(r);
    this.renderUnclaimed(r, t);
    this.renderGateway(r, t);
    if (this.galleryOpen) this.renderGallery(r);
    this.connectorsSection.hidden = this.galleryOpen;
    if (this.galleryOpen) this.unclaimed.hidden = true;
    if (this.galleryOpen) this.gatewaySection.hidden = true;

    this.restoreFocus(focus);
    this.restoreAnchor(anchor);
    if (previous) this.announceChanges(previous, r);

    if (this.listening) this.applyPendingRequest();
  }

  /** The row request that came before the rows (the URL's, or one sent meanwhile), now. */
  private applyPendingRequest(): void {
    if (!this.pendingFocus) return;
    const name = this.pendingFocus;
    this.pendingFocus = null;
    if (this.pendingAuthorize) this.requestAuthorize(name, this.pendingAuthorize === "ask");
    else this.focusConnector(name);
    this.pendingAuthorize = null;
  }

  private renderRows(r: StatusReport, t: number): void {
    const seen = new Set<string>();
    const ordered: HTMLLIElement[] = [];
    for (const c of r.connectors) {
      seen.add(c.name);
      this.drawersFromDom(c.name);
      let ui = this.rowUi.get(c.name);
      if (ui?.notice && ui.notice.forState !== c.state) ui = { ...ui, notice: null };
      if (ui?.flow && ui.flow.forState !== c.state) ui = { ...ui, flow: null };
      // A Test that asked for authorizing is outdated once authorized: a new credential, or
      // another state.
      const check = ui?.check;
      if (
        ui &&
        check &&
        !check.result.ok &&
        authorizeAction(check.result.action) &&
        (check.credentialAt !== (c.credential?.updated_at ?? null) || check.forState !== c.state)
      ) {
        ui = { ...ui, check: null };
      }
      if (ui && !authorizeAction(c.action) && !authorizeAction(ui.check?.result.action)) {
        ui = { ...ui, pending: false, flow: null, clientEntry: null };
      }
      // No credential any more (disconnected, retired elsewhere): nothing to refresh or disconnect.
      if (ui && !c.credential && (ui.refreshing || ui.disconnect)) ui = { ...ui, refreshing: false, disconnect: null };
      if (ui?.historyOpen && !c.refresh_history?.length) ui = { ...ui, historyOpen: false };
      if (ui) this.rowUi.set(c.name, ui);
      const state: RowUi = ui ?? NO_ROW;
      const health = this.health.get(c.name) ?? null;
      const clients: RowClients = {
        targets: this.targets,
        switches: this.candidates.filter((x) => x.connector === c.name),
      };
      // What is typed into the paste field, the drawer opened or closed and the forget option
      // ticked do not rebuild the row: the DOM already shows them (the field keeps its caret).
      const sig = JSON.stringify([
        c,
        {
          ...state,
          historyOpen: null,
          healthOpen: null,
          toolsOpen: null,
          clientsOpen: null,
          flow: state.flow && { ...state.flow, draft: null },
          clientEntry: state.clientEntry && { ...state.clientEntry, draft: null },
          disconnect: state.disconnect && { ...state.disconnect, forget: null },
        },
        health,
        clients,
      ]);
      let entry = this.rows.get(c.name);
      if (!entry || entry.sig !== sig) {
        const fresh = buildRow(c, state, t, health, clients);
        carryTypedSecrets(entry?.el, fresh);
        // A highlight under way (focus-connector, Add) survives a re-render of its row.
        if (entry?.el.classList.contains("row--highlight")) fresh.classList.add("row--highlight");
        if (entry) entry.el.replaceWith(fresh);
        entry = { el: fresh, sig };
        this.rows.set(c.name, entry);
      }
      ordered.push(entry.el);
    }
    placeInOrder(this.list, this.pointerOverList ? this.keptOrder(ordered) : ordered);
    for (const [name, entry] of this.rows) {
      if (!seen.has(name)) {
        entry.el.remove();
        this.rows.delete(name);
        this.rowUi.delete(name);
      }
    }
    this.list.hidden = r.connectors.length === 0;
    this.applyRoving();
  }

  /** The report's rows in the order the list shows them now (new ones last); notes that the
   * report's own order waits for the pointer to leave. */
  private keptOrder(ordered: HTMLLIElement[]): HTMLLIElement[] {
    const shown = new Map<Element, number>([...this.list.children].map((node, i) => [node, i]));
    const kept = ordered.filter((row) => shown.has(row)).sort((a, b) => shown.get(a)! - shown.get(b)!);
    const fresh = ordered.filter((row) => !shown.has(row));
    const result = [...kept, ...fresh];
    if (result.some((row, i) => row !== ordered[i])) this.resortDeferred = true;
    return result;
  }

  /** First run: nothing in use yet. What Patchbay does, the way in (Add connector), and where else connectors come from. */
  private renderEmpty(r: StatusReport): void {
    this.empty.hidden = r.connectors.length > 0;
    if (this.empty.hidden) return;
    // Keep the node (and its button's focus) when nothing it shows changed.
    const user = r.catalog.sources.find((s) => s.kind === "user") ?? null;
    const sig = JSON.stringify([user?.path ?? null, (r.gallery ?? []).length]);
    if (this.empty.dataset.sig === sig) return;
    this.empty.dataset.sig = sig;
    const title = el("h2", "empty__title", "No connectors in use yet");
    title.id = "empty-title";
    const what = el(
      "p",
      "empty__text",
      "Patchbay keeps the MCP servers your agents use signed in and working, with their tokens in your keychain.",
    );
    const add = el("button", "btn btn--primary empty__add");
    add.type = "button";
    add.dataset.control = "open-gallery";
    add.setAttribute("aria-controls", "gallery");
    add.setAttribute("aria-describedby", "empty-title");
    add.append(icon("plus", "icon btn__icon"), "Add connector");
    const actions = el("div", "empty__actions");
    actions.append(add);
    const note = el("p", "empty__note");
    note.id = "empty-note";
    note.append(icon("client", "icon empty__note-icon"));
    const noteText = el("span", "", `Servers configured in ${CLIENT_NAMES} appear here automatically.`);
    if (user) noteText.append(" Or list them in ", el("code", "", user.path), ".");
    note.append(noteText);
    this.empty.setAttribute("aria-labelledby", "empty-title");
    this.empty.replaceChildren(icon("no_credential_required", "icon empty__icon"), title, what, actions, note);
  }

  private renderUnclaimed(r: StatusReport, t: number): void {
    const keys = new Set(r.unclaimed.map((u) => u.credential_key));
    for (const [key, timer] of this.confirmTimers) {
      if (!keys.has(key)) {
        window.clearTimeout(timer);
        this.confirmTimers.delete(key);
      }
    }
    // Keep a row's node when nothing about it changed (its button may hold focus or a confirm).
    const existing = new Map<string, HTMLLIElement>();
    for (const li of this.unclaimedList.querySelectorAll<HTMLLIElement>("li[data-unclaimed]")) {
      existing.set(li.dataset.unclaimed!, li);
    }
    const ordered: HTMLLIElement[] = [];
    for (const u of r.unclaimed) {
      const sig = JSON.stringify(u);
      let li = existing.get(u.credential_key);
      if (!li || li.dataset.sig !== sig) {
        const fresh = buildUnclaimedRow(u, t, this.confirmTimers.has(u.credential_key));
        fresh.dataset.sig = sig;
        if (li) li.replaceWith(fresh);
        li = fresh;
      }
      existing.delete(u.credential_key);
      ordered.push(li);
    }
    placeInOrder(this.unclaimedList, ordered);
    for (const li of existing.values()) li.remove();
    this.unclaimedCount.textContent = r.unclaimed.length > 0 ? String(r.unclaimed.length) : "";
    this.unclaimed.hidden = r.unclaimed.length === 0;
  }

  private tick(): void {
    refreshTimes(this.scroller, now());
  }

  // ---- the gallery ("Add connector") ----------------------------------------------------

  private buildGallery(): void {
    const g = this.gallery;
    g.id = "gallery";
    g.hidden = true;
    g.setAttribute("aria-labelledby", "gallery-title");
    const head = el("div", "gallery__head");
    const back = el("button", "btn gallery__back");
    back.type = "button";
    back.dataset.control = "close-gallery";
    back.setAttribute("aria-label", "Back to your connectors");
    back.title = "Back to your connectors (Esc)";
    back.append(icon("back", "icon btn__icon"), "Back");
    back.addEventListener("click", () => this.closeGallery(true));
    const title = el("h2", "gallery__title", "Add connector");
    title.id = "gallery-title";
    title.tabIndex = -1;
    head.append(back, title);

    const note = el(
      "p",
      "section-note gallery__note",
      "Catalog connectors you do not use yet. Add one to list it with your connectors, then sign in or set its key.",
    );
    const search = el("div", "gallery__search");
    search.append(icon("search", "icon gallery__search-icon"));
    const input = this.gallerySearch;
    input.type = "search";
    input.id = "gallery-search";
    input.dataset.control = "gallery-search";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.placeholder = "Search by name or description";
    input.setAttribute("aria-label", "Search connectors to add");
    input.setAttribute("aria-controls", "gallery-list");
    input.setAttribute("aria-describedby", "gallery-count");
    input.setAttribute("aria-keyshortcuts", "/");
    input.addEventListener("input", () => this.filterGallery());
    const key = el("kbd", "gallery__kbd", "/");
    key.setAttribute("aria-hidden", "true");
    search.append(input, key);

    this.galleryCount.id = "gallery-count";
    this.galleryCount.setAttribute("role", "status");
    this.galleryList.id = "gallery-list";
    this.galleryList.setAttribute("role", "list");
    this.galleryList.setAttribute("aria-label", "Connectors you can add");
    this.galleryList.addEventListener("click", (e) => this.onGalleryClick(e));
    this.galleryNone.hidden = true;
    // A server the catalog lacks: added by hand (issue 21).
    const toggle = this.customToggle;
    toggle.type = "button";
    toggle.dataset.control = "open-custom";
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("aria-controls", "custom-form");
    toggle.textContent = "Add a custom connector…";
    toggle.addEventListener("click", () => {
      const open = this.customForm.element.hidden;
      this.customForm.element.hidden = !open;
      toggle.setAttribute("aria-expanded", String(open));
      if (open) this.customForm.focus();
    });
    this.customForm.element.hidden = true;
    g.append(head, note, search, toggle, this.customForm.element, this.galleryCount, this.galleryList, this.galleryNone);
  }

  private openGallery(opener: HTMLElement | null): void {
    if (!this.report) return;
    this.galleryOpener = opener;
    this.galleryOpen = true;
    this.gallerySearch.value = "";
    this.customForm.reset();
    this.customForm.element.hidden = true;
    this.customToggle.setAttribute("aria-expanded", "false");
    this.gallery.hidden = false;
    this.root.classList.add("is-gallery");
    this.addButton.setAttribute("aria-expanded", "true");
    this.addButton.hidden = true;
    this.scroller.scrollTop = 0;
    this.render(this.report);
    this.gallerySearch.focus();
  }

  /** Closes the gallery; `refocus` puts the focus back on what opened it. */
  private closeGallery(refocus: boolean): void {
    if (!this.galleryOpen) return;
    this.galleryOpen = false;
    this.gallery.hidden = true;
    this.root.classList.remove("is-gallery");
    this.addButton.setAttribute("aria-expanded", "false");
    this.addButton.hidden = false;
    for (const [name, ui] of this.galleryUi) if (!ui.busy) this.galleryUi.delete(name);
    if (this.report) this.render(this.report);
    if (!refocus) return;
    const opener = this.galleryOpener;
    this.galleryOpener = null;
    if (opener?.isConnected && !opener.closest("[hidden]")) opener.focus();
    else (this.activeRow() ?? this.empty.querySelector<HTMLElement>("[data-control=open-gallery]") ?? this.addButton).focus();
  }

  private renderGallery(r: StatusReport): void {
    const entries = r.gallery ?? [];
    const a = document.activeElement as HTMLElement | null;
    const focused = a && this.galleryList.contains(a) ? a.closest<HTMLLIElement>("li[data-gallery]")?.dataset.gallery : null;
    const seen = new Set<string>();
    const ordered: HTMLLIElement[] = [];
    for (const g of entries) {
      seen.add(g.name);
      const ui = this.galleryUi.get(g.name) ?? null;
      const sig = JSON.stringify([g, ui]);
      let entry = this.galleryRows.get(g.name);
      if (!entry || entry.sig !== sig) {
        const fresh = buildGalleryEntry(g, ui);
        if (entry) entry.el.replaceWith(fresh);
        entry = { el: fresh, sig };
        this.galleryRows.set(g.name, entry);
      }
      ordered.push(entry.el);
    }
    placeInOrder(this.galleryList, ordered);
    for (const [name, entry] of this.galleryRows) {
      if (!seen.has(name)) {
        entry.el.remove();
        this.galleryRows.delete(name);
      }
    }
    if (focused && (document.activeElement === document.body || document.activeElement === null)) {
      this.galleryRows.get(focused)?.el.querySelector<HTMLElement>("[data-control=enable]")?.focus({ preventScroll: true });
    }
    this.filterGallery();
  }

  /** Shows the entries matching the search (name, title, description; case-insensitive). */
  private filterGallery(): void {
    const entries = this.report?.gallery ?? [];
    const query = this.gallerySearch.value;
    let shown = 0;
    for (const g of entries) {
      const row = this.galleryRows.get(g.name)?.el;
      if (!row) continue;
      const match = galleryMatches(g, query);
      row.hidden = !match;
      if (match) shown += 1;
    }
    const total = entries.length;
    const n = (k: number) => `${k} ${k === 1 ? "connector" : "connectors"}`;
    this.galleryCount.textContent =
      total === 0 ? "" : query.trim() === "" ? `${n(total)} to add` : `${shown} of ${n(total)} match`;
    this.galleryList.hidden = shown === 0;
    this.galleryNone.hidden = shown > 0;
    if (total === 0) {
      this.galleryNone.textContent = "Every connector in the catalog is already in use.";
    } else if (shown === 0) {
      this.galleryNone.textContent = `No connector matches “${query.trim()}”. Add it as a custom connector (above), with its URL or command. Servers configured in your other clients appear in your list by themselves.`;
    }
  }

  private onGalleryClick(e: MouseEvent): void {
    const btn = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-control=enable]");
    const name = btn?.closest<HTMLLIElement>("li[data-gallery]")?.dataset.gallery;
    if (!btn || !name || btn.getAttribute("aria-disabled") === "true") return;
    void this.enable(name);
  }

  /** "Add": puts the entry in use, then walks it to Ready: its row, highlighted, with its next step in focus. */
  private async enable(name: string): Promise<void> {
    const entry = this.report?.gallery?.find((g) => g.name === name) ?? null;
    this.galleryUi.set(name, { busy: true, error: null });
    if (this.report) this.render(this.report);
    let report: StatusReport;
    try {
      report = await this.backend.enableConnector(name);
    } catch (err) {
      this.galleryUi.set(name, { busy: false, error: toBackendError(err) });
      if (this.report) this.render(this.report);
      this.galleryRows.get(name)?.el.querySelector<HTMLElement>("[data-control=enable]")?.focus();
      return;
    }
    this.galleryUi.delete(name);
    this.landed(name, report, entry);
  }

  /** After Add (a gallery entry or a custom connector): the gallery closes and the new row,
   * highlighted, has its next step in focus. */
  private landed(name: string, report: StatusReport, entry: GalleryEntry | null): void {
    const c = report.connectors.find((x) => x.name === name);
    const title = c?.title || entry?.title || name;
    if (c) this.updateRowUiQuietly(name, { notice: addedNotice(c, entry) });
    this.galleryOpener = null;
    this.closeGallery(false);
    this.render(report);
    if (!c) {
      this.announce(`${title} was added`);
      return;
    }
    this.focusConnector(name);
    const row = this.rows.get(name)?.el;
    const next = row?.querySelector<HTMLElement>("[data-control=primary]");
    const key = row?.querySelector<HTMLInputElement>(".keys [data-control=key-value]");
    (next ?? key)?.focus({ preventScroll: true });
    this.announce(
      next
        ? `${title} added. Next: ${next.textContent}`
        : key
          ? `${title} added. Next: enter ${key.getAttribute("aria-label")?.replace(/^Value of /, "") ?? "its key"}`
          : `${title} added: ${c.label}`,
    );
  }

  /** "Remove from my connectors": back to the gallery (the user catalog says `enabled: false`). */
  private async remove(name: string, state: ConnectorStateId): Promise<void> {
    const title = this.report?.connectors.find((x) => x.name === name)?.title || name;
    this.updateRowUi(name, { removing: true, notice: null });
    let report: StatusReport;
    try {
      report = await this.backend.disableConnector(name);
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { removing: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=remove]")?.focus();
      return;
    }
    this.render(report);
    const gone = !report.connectors.some((x) => x.name === name);
    if (!gone) this.updateRowUi(name, { removing: false });
    this.announce(gone ? `${title} removed from your connectors; Add connector lists it` : `${title} is still in use`);
    const a = document.activeElement;
    if (!a || a === document.body) {
      (this.activeRow() ?? this.empty.querySelector<HTMLElement>("[data-control=open-gallery]"))?.focus();
    }
  }

  /** "Manage with Patchbay": the client's entry is copied into the user catalog. */
  private async manage(name: string, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { managing: true, notice: null });
    let report: StatusReport;
    try {
      report = await this.backend.manageConnector(name);
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { managing: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=manage]")?.focus();
      return;
    }
    const c = report.connectors.find((x) => x.name === name);
    const title = c?.title || name;
    this.updateRowUiQuietly(name, {
      managing: false,
      notice: c
        ? {
            tone: "info",
            text: c.source
              ? `Patchbay manages ${title} now: it is in \`${c.source}\`, any secret from the client's config in your keychain.`
              : `Patchbay manages ${title} now.`,
            forState: c.state,
          }
        : null,
    });
    this.render(report);
    this.announce(`Patchbay manages ${title} now`);
    this.rows.get(name)?.el.focus({ preventScroll: true });
  }

  private onGlobalKey(e: KeyboardEvent): void {
    if (!this.galleryOpen || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "Escape") {
      e.preventDefault();
      this.closeGallery(true);
      return;
    }
    const t = e.target as HTMLElement | null;
    const typing = t instanceof Element && t.closest("input, textarea, select, [contenteditable]") !== null;
    if (e.key === "/" && !typing) {
      e.preventDefault();
      this.gallerySearch.focus();
      this.gallerySearch.select();
    }
  }

  // ---- focus & scroll preservation ------------------------------------------------------

  private captureFocus(): FocusDesc | null {
    const a = document.activeElement as HTMLElement | null;
    if (!a || !this.root.contains(a)) return null;
    const control = a.dataset.control ?? null;
    const row = a.closest<HTMLLIElement>("li[data-connector]");
    if (row) {
      const index = [...this.list.children].indexOf(row);
      let sel: string | null = null;
      if (a !== row && control && a.dataset.client) {
        sel = `[data-control="${control}"][data-client="${CSS.escape(a.dataset.client)}"]${a.dataset.entry ? `[data-entry="${CSS.escape(a.dataset.entry)}"]` : ""}`;
      } else if (a !== row && control === "via" && a instanceof HTMLInputElement) {
        sel = `[data-control="via"][value="${CSS.escape(a.value)}"]`;
      }
      return { kind: "row", name: row.dataset.connector!, control: a === row ? null : control, index, sel };
    }
    const urow = a.closest<HTMLLIElement>("li[data-unclaimed]");
    if (urow) {
      const index = [...this.unclaimedList.children].indexOf(urow);
      return { kind: "unclaimed", key: urow.dataset.unclaimed!, control, index };
    }
    return null;
  }

  private restoreFocus(f: FocusDesc | null): void {
    if (!f) return;
    const a = document.activeElement;
    if (f.kind === "row") {
      let row = this.rows.get(f.name)?.el ?? null;
      if (row && a && row.contains(a) && a !== document.body) return;
      if (!row) {
        const all = this.list.children;
        row = (all[Math.min(f.index, all.length - 1)] as HTMLLIElement | undefined) ?? null;
        if (!row) return;
        this.setActive(row.dataset.connector!);
        row.focus({ preventScroll: true });
        return;
      }
      const target =
        (f.sel && row.querySelector<HTMLElement>(f.sel)) ||
        (f.control && row.querySelector<HTMLElement>(`[data-control="${f.control}"]`)) ||
        row;
      if (target !== a) target.focus({ preventScroll: true });
      return;
    }
    const urow = this.unclaimedList.querySelector<HTMLLIElement>(`li[data-unclaimed="${CSS.escape(f.key)}"]`);
    if (urow) {
      if (a && urow.contains(a)) return;
      const target = (f.control && urow.querySelector<HTMLElement>(`[data-control="${f.control}"]`)) || null;
      target?.focus({ preventScroll: true });
      return;
    }
    // The row is gone (deleted): move to its neighbour, else back to the connector list.
    const rest = this.unclaimedList.querySelectorAll<HTMLButtonElement>("[data-control=delete]");
    const next = rest[Math.min(f.index, rest.length - 1)];
    if (next && !this.unclaimed.hidden) next.focus({ preventScroll: true });
    else this.activeRow()?.focus({ preventScroll: true });
  }

  private captureAnchor(f: FocusDesc | null): { el: Element; offset: number } | null {
    const top = this.scroller.getBoundingClientRect().top;
    let anchor: Element | null = null;
    if (f?.kind === "row") anchor = this.rows.get(f.name)?.el ?? null;
    if (f?.kind === "unclaimed")
      anchor = this.unclaimedList.querySelector(`li[data-unclaimed="${CSS.escape(f.key)}"]`);
    if (!anchor && this.scroller.scrollTop > 0) {
      for (const node of this.scroller.querySelectorAll("li[data-connector], li[data-unclaimed], .section-title")) {
        if (node.getBoundingClientRect().bottom > top) {
          anchor = node;
          break;
        }
      }
    }
    if (!anchor) return null;
    return { el: anchor, offset: anchor.getBoundingClientRect().top - top };
  }

  private restoreAnchor(a: { el: Element; offset: number } | null): void {
    if (!a) return;
    let node: Element | null = a.el;
    if (!node.isConnected) {
      const li = a.el as HTMLElement;
      node =
        (li.dataset.connector && this.rows.get(li.dataset.connector)?.el) ||
        (li.dataset.unclaimed &&
          this.unclaimedList.querySelector(`li[data-unclaimed="${CSS.escape(li.dataset.unclaimed)}"]`)) ||
        null;
    }
    if (!node) return;
    const delta = node.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top - a.offset;
    if (Math.abs(delta) >= 1) this.scroller.scrollTop += delta;
  }

  // ---- roving tabindex & keyboard -------------------------------------------------------

  private rowEls(): HTMLLIElement[] {
    return [...this.list.querySelectorAll<HTMLLIElement>(":scope > li[data-connector]")];
  }

  private activeRow(): HTMLLIElement | null {
    return (this.activeName && this.rows.get(this.activeName)?.el) || this.rowEls()[0] || null;
  }

  private setActive(name: string): void {
    if (this.activeName === name) return;
    this.activeName = name;
    this.applyRoving();
  }

  /** One row (and its controls) in the tab order; the rest are reached with the arrow keys. */
  private applyRoving(): void {
    const active = this.activeRow();
    if (active) this.activeName = active.dataset.connector!;
    for (const row of this.rowEls()) {
      const on = row === active;
      row.tabIndex = on ? 0 : -1;
      for (const c of row.querySelectorAll<HTMLElement>("button, a[href], input, summary, pre[data-control]")) {
        c.tabIndex = on ? 0 : -1;
      }
    }
  }

  private onListFocus(e: FocusEvent): void {
    const row = (e.target as HTMLElement).closest<HTMLLIElement>("li[data-connector]");
    if (row) this.setActive(row.dataset.connector!);
  }

  private onListKey(e: KeyboardEvent): void {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const target = e.target as HTMLElement;
    const row = target.closest<HTMLLIElement>("li[data-connector]");
    if (!row) return;
    if (target.closest(".keys") && target !== row) {
      // In the Keys part the keys are its fields' and buttons'; Escape closes a Replace or Clear.
      if (e.key === "Escape" && this.keyActions.escape(row.dataset.connector!)) e.preventDefault();
      return;
    }
    if (target.closest(".flow")) {
      // Inside the paste-back panel the keys are the field's and the buttons'; Escape closes it.
      if (e.key === "Escape") {
        e.preventDefault();
        this.closeFlow(row.dataset.connector!);
      }
      return;
    }
    // The raw answer scrolls with the arrow keys, Home and End, like any scrolled text.
    if (target.matches("pre") && e.key !== "Escape" && e.key !== "Tab") return;
    // "Connect through": the arrow keys choose within the radio group.
    if (target.matches("input[type=radio]") && e.key.startsWith("Arrow")) return;
    const rows = this.rowEls();
    const i = rows.indexOf(row);
    let next: HTMLLIElement | undefined;
    switch (e.key) {
      case "ArrowDown":
        next = rows[Math.min(i + 1, rows.length - 1)];
        break;
      case "ArrowUp":
        next = rows[Math.max(i - 1, 0)];
        break;
      case "Home":
        next = rows[0];
        break;
      case "End":
        next = rows[rows.length - 1];
        break;
      case "Enter":
      case " ":
        if (target === row) {
          e.preventDefault();
          const primary = row.querySelector<HTMLButtonElement>("[data-control=primary]");
          // A row waiting for a key has its field as its action.
          if (primary) primary.click();
          else row.querySelector<HTMLInputElement>(".keys [data-control=key-value]")?.focus();
        }
        return;
      case "Escape": {
        const name = row.dataset.connector!;
        if (this.rowUi.get(name)?.disconnect?.phase === "confirm") {
          e.preventDefault();
          this.cancelDisconnect(name, true);
          return;
        }
        if (this.rowUi.get(name)?.flow || this.rowUi.get(name)?.clientEntry) {
          e.preventDefault();
          this.closeFlow(name);
          return;
        }
        const drawer = target.closest<HTMLDetailsElement>("details[data-drawer]");
        if (drawer?.open) {
          // Escape inside the open drawer closes it and leaves the focus on its summary.
          e.preventDefault();
          drawer.open = false;
          const kind = drawer.dataset.drawer;
          if (isDrawer(kind)) this.updateRowUiQuietly(name, { [DRAWERS[kind]]: false });
          drawer.querySelector<HTMLElement>("summary")?.focus();
          return;
        }
        const close = row.querySelector<HTMLButtonElement>("[data-control=dismiss]");
        if (close) {
          e.preventDefault();
          close.click();
        }
        return;
      }
      default:
        return;
    }
    e.preventDefault();
    if (next) {
      this.setActive(next.dataset.connector!);
      next.focus();
    }
  }

  private onListClick(e: MouseEvent): void {
    const btn = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-control]");
    const row = btn?.closest<HTMLLIElement>("li[data-connector]");
    if (!btn || !row || !this.report) return;
    const name = row.dataset.connector!;
    const c = this.report.connectors.find((x) => x.name === name);
    if (!c) return;
    if (this.keyActions.click(btn, name)) return;
    if (btn.dataset.control === "dismiss") {
      this.updateRowUi(name, { notice: null });
      this.rows.get(name)?.el.focus();
      return;
    }
    if (btn.dataset.control === "copy-link" || btn.dataset.control === "check-copy") {
      void this.copy(btn, name, btn.dataset.copy ?? "", c.state);
      return;
    }
    if (btn.dataset.control === "test") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.test(name, c.state);
      return;
    }
    if (btn.dataset.control === "dismiss-check") {
      this.updateRowUi(name, { check: null });
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=test]")?.focus();
      return;
    }
    if (btn.dataset.control === "confirm-authorize") {
      // The user confirmed what a link asked: exactly the row's Authorize.
      this.updateRowUi(name, { notice: null });
      void this.authorize(name, c.state);
      return;
    }
    if (btn.dataset.control === "check-authorize") {
      // Exactly what the row's Authorize does.
      if (btn.getAttribute("aria-disabled") !== "true") void this.authorize(name, c.state);
      return;
    }
    if (btn.dataset.control === "write-back") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.writeBack(name, btn.dataset.transport ?? "", c.state);
      return;
    }
    if (btn.dataset.control === "cancel") {
      this.closeFlow(name);
      return;
    }
    if (btn.dataset.control === "cancel-authorize") {
      void this.cancelAuthorize(name, c.state);
      return;
    }
    if (btn.dataset.control === "reopen-authorize") {
      void this.reopenAuthorize(name, c.state);
      return;
    }
    if (btn.dataset.control === "retry-authorize") {
      void this.authorize(name, c.state);
      return;
    }
    if (btn.dataset.control === "add-runtime") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.addToRuntime(name, btn.dataset.runtime ?? "", c.state);
      return;
    }
    if (btn.dataset.control === "add-client" || btn.dataset.control === "replace-entry") {
      if (btn.getAttribute("aria-disabled") !== "true") {
        const replace = btn.dataset.control === "replace-entry";
        void this.addToClient(name, btn.dataset.client ?? "", btn.dataset.via ?? "stdio", replace, c.state);
      }
      return;
    }
    if (btn.dataset.control === "undo-write") {
      void this.undoWrite(name, Number(btn.dataset.undo), c.state);
      return;
    }
    if (btn.dataset.control === "switch-entry") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.switchEntry(name, btn.dataset.client ?? "", btn.dataset.entry ?? "", c.state);
      return;
    }
    if (btn.dataset.control === "manage") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.manage(name, c.state);
      return;
    }
    if (btn.dataset.control === "remove") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.remove(name, c.state);
      return;
    }
    if (btn.dataset.control === "refresh") {
      if (btn.getAttribute("aria-disabled") !== "true") void this.refreshNow(name, c.state);
      return;
    }
    if (btn.dataset.control === "disconnect") {
      if (btn.getAttribute("aria-disabled") === "true") return;
      const pending = this.rowUi.get(name)?.disconnect;
      if (pending?.phase === "confirm") {
        const box = row.querySelector<HTMLInputElement>("[data-control=forget-registration]");
        void this.disconnect(name, box ? box.checked : pending.forget, c.state);
      } else {
        this.updateRowUi(name, { disconnect: { phase: "confirm", forget: false }, notice: null });
        this.announce(`Press Confirm disconnect to remove the credential for ${c.title || c.name}`);
      }
      return;
    }
    if (btn.dataset.control !== "primary" || btn.getAttribute("aria-disabled") === "true") return;
    if (c.action === "authorize" || c.action === "reauthorize") void this.authorize(name, c.state);
    else if (c.action === "edit_catalog" && c.source) void this.copy(btn, name, c.source, c.state);
  }

  private onListSubmit(e: SubmitEvent): void {
    const keyForm = (e.target as HTMLElement).closest<HTMLFormElement>("form[data-control=key-form]");
    const keyRow = keyForm?.closest<HTMLLIElement>("li[data-connector]");
    if (keyForm && keyRow) {
      e.preventDefault();
      this.keyActions.submit(keyForm, keyRow.dataset.connector!);
      return;
    }
    const form = (e.target as HTMLElement).closest<HTMLFormElement>("form[data-control=paste-form], form[data-control=client-form]");
    const row = form?.closest<HTMLLIElement>("li[data-connector]");
    if (!form || !row) return;
    e.preventDefault();
    if (form.dataset.control === "client-form") void this.enterClient(row.dataset.connector!);
    else void this.completePaste(row.dataset.connector!);
  }

  private onListInput(e: Event): void {
    const input = e.target as HTMLInputElement;
    if (input.dataset.control === "client-id") {
      const name = input.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector;
      const entry = name ? this.rowUi.get(name)?.clientEntry : null;
      if (entry) entry.draft = input.value;
      return;
    }
    if (input.dataset.control !== "pasted") return;
    const name = input.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector;
    const flow = name ? this.rowUi.get(name)?.flow : null;
    if (flow) flow.draft = input.value;
  }

  private onListChange(e: Event): void {
    const input = e.target as HTMLInputElement;
    if (input.dataset.control === "via") {
      const row = input.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector;
      if (row && input.checked) this.updateRowUi(row, { via: input.value === "gateway" ? "gateway" : "stdio" });
      return;
    }
    if (input.dataset.control !== "forget-registration") return;
    const name = input.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector;
    const pending = name ? this.rowUi.get(name)?.disconnect : null;
    if (name && pending) this.updateRowUiQuietly(name, { disconnect: { ...pending, forget: input.checked } });
  }

  /** A drawer's `toggle` event is a task queued after the click that opened or closed it: a
   * re-render before it runs would rebuild the row from the flag remembered before the click
   * and undo it. The row's drawers as shown are the truth. */
  private drawersFromDom(name: string): void {
    const row = this.rows.get(name)?.el;
    if (!row) return;
    for (const drawer of row.querySelectorAll<HTMLDetailsElement>("details[data-drawer]")) {
      const kind = drawer.dataset.drawer;
      if (!isDrawer(kind) || drawer.closest<HTMLLIElement>("li[data-connector]") !== row) continue;
      this.noteDrawer(name, kind, drawer.open);
    }
  }

  /** Remembers a row's drawer as open or closed, without a re-render (the DOM shows it already). */
  private noteDrawer(name: string, kind: DrawerName, open: boolean): void {
    const flag = DRAWERS[kind];
    if ((this.rowUi.get(name)?.[flag] ?? false) !== open) this.updateRowUiQuietly(name, { [flag]: open });
  }

  private onDrawerToggle(e: Event): void {
    const drawer = e.target as HTMLElement;
    const kind = drawer.dataset.drawer;
    if (!(drawer instanceof HTMLDetailsElement) || !isDrawer(kind)) return;
    const name = drawer.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector;
    if (!name || this.rows.get(name)?.el.contains(drawer) !== true) return;
    this.noteDrawer(name, kind, drawer.open);
  }

  private cancelDisconnectsOutside(target: EventTarget | null): void {
    const inside = target instanceof Element ? target.closest("[data-control=disconnect], .row__forget") : null;
    const own = inside?.closest<HTMLLIElement>("li[data-connector]")?.dataset.connector ?? null;
    for (const [name, ui] of this.rowUi) {
      if (ui.disconnect?.phase === "confirm" && name !== own) this.cancelDisconnect(name, false);
    }
  }

  private cancelDisconnect(name: string, refocus: boolean): void {
    this.updateRowUi(name, { disconnect: null });
    if (refocus) this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=disconnect]")?.focus();
  }

  /** Records what the DOM already shows (a ticked box, an opened drawer) without re-rendering. */
  private updateRowUiQuietly(name: string, patch: Partial<RowUi>): void {
    const cur = this.rowUi.get(name) ?? NO_ROW;
    this.rowUi.set(name, { ...cur, ...patch });
  }

  private updateRowUi(name: string, patch: Partial<RowUi>): void {
    const cur = this.rowUi.get(name) ?? NO_ROW;
    this.rowUi.set(name, { ...cur, ...patch });
    if (this.report) this.render(this.report);
  }

  private updateFlow(name: string, patch: Partial<PasteFlow>): void {
    const flow = this.rowUi.get(name)?.flow;
    if (flow) this.updateRowUi(name, { flow: { ...flow, ...patch } });
  }

  private closeFlow(name: string): void {
    this.updateRowUi(name, { flow: null, clientEntry: null });
    const row = this.rows.get(name)?.el;
    (row?.querySelector<HTMLElement>("[data-control=primary]") ?? row)?.focus();
  }

  private focusPasteField(name: string): void {
    this.rows.get(name)?.el.querySelector<HTMLInputElement>("[data-control=pasted]")?.focus();
  }

  /** The tray or a link asks to authorize `name`: as if its Authorize button were pressed. */
  /**
   * Authorize `name` as asked by the tray (`ask` false: start at once) or by a `patchbay://`
   * link (`ask` true: any program or page can open a link, so the row asks first and consent
   * starts only from its button).
   */
  requestAuthorize(name: string, ask = false): void {
    if (!this.report) {
      this.pendingFocus = name;
      this.pendingAuthorize = ask ? "ask" : "start";
      return;
    }
    const c = this.report.connectors.find((x) => x.name === name);
    const offered = c ? null : (this.report.gallery ?? []).find((g) => g.name === name);
    if (offered) {
      // In the catalog but not in use: the gallery, on that entry; Add walks it to Authorize.
      this.openGallery(this.addButton);
      this.gallerySearch.value = name;
      this.filterGallery();
      this.galleryRows.get(name)?.el.querySelector<HTMLElement>("[data-control=enable]")?.focus();
      this.announce(`${offered.title || name} is not one of your connectors yet: add it, then authorize it`);
      return;
    }
    if (!c) {
      this.requestError = `There is no connector named “${name}” in the catalog, so Patchbay cannot authorize it.`;
      this.render(this.report);
      return;
    }
    this.focusConnector(name);
    if ((c.action === "authorize" || c.action === "reauthorize") && ask) {
      this.updateRowUi(name, {
        notice: {
          tone: "info",
          kind: "link-authorize",
          text: `A link asked to authorize ${c.title || c.name}. Continue only if you opened it yourself.`,
          confirmAuthorize: c.title || c.name,
          forState: c.state,
        },
      });
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=confirm-authorize]")?.focus();
    } else if (c.action === "authorize" || c.action === "reauthorize") {
      void this.authorize(name, c.state);
    } else {
      this.updateRowUi(name, {
        notice: { tone: "info", text: `${c.title || c.name} does not need authorizing now (${c.label}).`, forState: c.state },
      });
    }
  }

  private requestBanner(): HTMLElement[] {
    if (!this.requestError) return [];
    const b = el("div", "banner banner--error");
    b.dataset.banner = "request-error";
    b.setAttribute("role", "alert");
    b.append(icon("warning", "icon banner__icon"));
    const body = el("div", "banner__body");
    body.append(el("p", "banner__title", this.requestError));
    const close = el("button", "notice__close");
    close.type = "button";
    close.setAttribute("aria-label", "Dismiss");
    close.title = "Dismiss";
    close.append(icon("close", "icon"));
    close.addEventListener("click", () => {
      this.requestError = null;
      if (this.report) this.render(this.report);
    });
    b.append(body, close);
    return [b];
  }

  // ---- actions --------------------------------------------------------------------------

  private async authorize(name: string, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { pending: true, notice: null, flow: null, clientEntry: null });
    let started: StartedFlow;
    try {
      started = await this.backend.startAuthorization(name);
    } catch (err) {
      const e = toBackendError(err);
      const clientEntry = clientEntryFor(e, state);
      if (clientEntry) {
        this.updateRowUi(name, { pending: false, clientEntry });
        this.announce("Patchbay needs a client made at the provider: enter its client id");
        this.rows.get(name)?.el.querySelector<HTMLInputElement>("[data-control=client-id]")?.focus();
        return;
      }
      this.updateRowUi(name, { pending: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state, retry: true } });
      return;
    }
    this.started(name, started, state);
  }

  /** Cancel while the browser is awaited: the flow ends and the receiver stops. */
  private async cancelAuthorize(name: string, state: ConnectorStateId): Promise<void> {
    try {
      const report = await this.backend.cancelAuthorization(name);
      this.updateRowUi(name, { notice: null, pending: false });
      this.announce("Authorizing cancelled");
      this.render(report);
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=primary]")?.focus();
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
    }
  }

  /** "Open the page again": the pending flow's consent page, in the browser, by the backend. */
  private async reopenAuthorize(name: string, state: ConnectorStateId): Promise<void> {
    try {
      await this.backend.reopenAuthorization(name);
      this.announce("Opened the consent page again");
    } catch (err) {
      const e = toBackendError(err);
      // Nothing pending any more (it expired or finished elsewhere): say so, offer Retry.
      this.updateRowUi(name, { notice: { tone: "error", text: e.message, kind: e.kind, forState: state, retry: true } });
    }
  }

  /** Save and authorize: keeps the client typed into the row's form, then authorizing starts. */
  private async enterClient(name: string): Promise<void> {
    const entry = this.rowUi.get(name)?.clientEntry;
    if (!entry || entry.busy) return;
    const row = this.rows.get(name)?.el;
    const clientId = row?.querySelector<HTMLInputElement>("[data-control=client-id]")?.value ?? entry.draft;
    const secretField = row?.querySelector<HTMLInputElement>("[data-control=client-secret]");
    if (clientId.trim() === "") {
      this.updateRowUi(name, {
        clientEntry: { ...entry, draft: clientId, error: { kind: "invalid_input", message: "Enter the client id the provider gave you." } },
      });
      this.rows.get(name)?.el.querySelector<HTMLInputElement>("[data-control=client-id]")?.focus();
      return;
    }
    const secret = secretField?.value ?? "";
    this.updateRowUi(name, { clientEntry: { ...entry, draft: clientId, busy: true, error: null } });
    let started: StartedFlow;
    try {
      started = await this.backend.enterClient(name, clientId, secret);
    } catch (err) {
      const now = this.rowUi.get(name)?.clientEntry;
      if (now) this.updateRowUi(name, { clientEntry: { ...now, busy: false, error: toBackendError(err) } });
      this.rows.get(name)?.el.querySelector<HTMLInputElement>("[data-control=client-id]")?.focus();
      return;
    }
    this.updateRowUi(name, { clientEntry: null });
    this.started(name, started, entry.forState);
  }

  /** An authorization started: the paste-back panel, or the note that the browser finishes it. */
  private started(name: string, started: StartedFlow, state: ConnectorStateId): void {
    const notice = started.notice ?? null;
    if (started.completion === "paste_back") {
      this.updateRowUi(name, {
        pending: false,
        flow: {
          url: started.authorize_url,
          why: started.why ?? null,
          notice,
          draft: "",
          error: null,
          busy: false,
          forState: state,
        },
      });
      this.announce("Approve access in your browser, then paste the address you land on");
      this.focusPasteField(name);
      return;
    }
    this.updateRowUi(name, {
      pending: false,
      notice: {
        tone: "info",
        text: RECEIVER_TEXT,
        detail: notice,
        // Something went wrong on the way to the browser: let the user get there by hand.
        link: notice ? started.authorize_url : null,
        authorizing: { url: started.authorize_url },
        forState: state,
      },
    });
  }

  private async addToRuntime(name: string, runtime: string, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { adding: runtime, notice: null });
    try {
      const report = await this.backend.addToRuntime(name, runtime);
      this.updateRowUi(name, { adding: null });
      const c = report.connectors.find((x) => x.name === name);
      this.announce(`${c?.title || name} added to ${runtimeName(runtime)}`);
      this.render(report);
      this.rows.get(name)?.el.focus({ preventScroll: true });
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { adding: null, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
    }
  }

  // ---- other MCP clients and the gateway (issue 12) --------------------------------------

  /** The clients found, the mcp-remote entries to switch and the gateway's clients. Each that
   * cannot be read leaves its part out (the gateway section says why). */
  private async loadClients(): Promise<void> {
    const warn = (what: string) => (err: unknown) => {
      console.warn(`${what} unavailable:`, toBackendError(err).message);
      return null;
    };
    const [targets, candidates, gateway] = await Promise.all([
      this.backend.clientTargets().catch(warn("client targets")),
      this.backend.switchCandidates().catch(warn("switch candidates")),
      this.backend.gatewayClients().then(
        (g) => {
          this.gatewayError = null;
          return g;
        },
        (err) => {
          this.gatewayError = toBackendError(err).message;
          return null;
        },
      ),
    ]);
    this.targets = (targets ?? []).filter((t) => t.found);
    this.candidates = candidates ?? [];
    this.gatewayInfo = gateway;
    if (this.report) this.render(this.report);
    // For tests and screenshots: the clients' parts are in (or known to be missing).
    this.root.dataset.clients = "loaded";
  }

  private async addToClient(name: string, client: string, via: string, replace: boolean, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { addingClient: client, notice: null });
    try {
      const preview = await this.backend.previewAddToClient(client, name, via, replace);
      if (!(await this.confirmed(name, preview, "add"))) {
        this.updateRowUi(name, { addingClient: null });
        return;
      }
      const written = await this.backend.addToClient(client, name, via, replace);
      this.showWritten(name, written, state);
      this.updateRowUi(name, { addingClient: null });
      void this.loadClients();
    } catch (err) {
      const e = toBackendError(err);
      const clientName = this.targets.find((t) => t.client === client)?.display_name ?? client;
      const notice = {
        tone: "error" as const,
        text: e.message,
        kind: e.kind,
        forState: state,
        replace: e.kind === "conflict" ? { client, clientName, via } : null,
      };
      this.updateRowUi(name, { addingClient: null, notice });
      if (e.kind === "conflict") this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=replace-entry]")?.focus();
    }
  }

  private async switchEntry(name: string, client: string, entry: string, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { switching: `${client}/${entry}`, notice: null });
    try {
      const preview = await this.backend.previewSwitchClientEntry(client, entry);
      if (!(await this.confirmed(name, preview, "switch"))) {
        this.updateRowUi(name, { switching: null });
        return;
      }
      const written = await this.backend.switchClientEntry(client, entry);
      this.showWritten(name, written, state);
      this.updateRowUi(name, { switching: null });
      // A client-only server is managed now: its row says so.
      if (written.managed) this.render(await this.backend.getStatus());
      await this.loadClients();
      this.rows.get(name)?.el.focus({ preventScroll: true });
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { switching: null, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
    }
  }

  /** Asks before a write to another app's config; one that changes nothing needs no asking. */
  private async confirmed(name: string, preview: WritePreview, kind: WriteKind): Promise<boolean> {
    if (preview.change === "unchanged") return true;
    const row = this.rows.get(name)?.el ?? null;
    const from = document.activeElement instanceof HTMLElement && row?.contains(document.activeElement) ? document.activeElement : row;
    return confirmWrite(preview, kind, from);
  }

  /** The Undo in a write's notice: the client's file as it was before that write. */
  private async undoWrite(name: string, id: number, state: ConnectorStateId): Promise<void> {
    try {
      const undone = await this.backend.undoClientWrite(id);
      const text = `${undone.client_name}’s config is back as it was (\`${undone.file}\`).`;
      const detail = undone.revoked ? `Gateway client “${undone.revoked}” revoked: no file holds its secret now.` : null;
      this.updateRowUiQuietly(name, { notice: { tone: "info", text, detail, kind: "undone", forState: state } });
      this.announce(text.replace(/`/g, ""));
      await this.loadClients();
      this.render(await this.backend.getStatus());
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
    }
  }

  private showWritten(name: string, w: ClientWrite, state: ConnectorStateId): void {
    const { text, detail } = writtenText(w);
    this.updateRowUiQuietly(name, { notice: { tone: "info", text, detail, kind: w.change, forState: state, undo: w.undo_id } });
    this.announce(text.replace(/`/g, ""));
  }

  private renderGateway(r: StatusReport, t: number): void {
    const info = this.gatewayInfo;
    const clients = info?.clients ?? [];
    const labels = new Set(clients.map((g) => g.label));
    for (const [label, p] of this.revokePhase) {
      if (!labels.has(label)) {
        window.clearTimeout(p.timer);
        this.revokePhase.delete(label);
      }
    }
    // Shown once the gateway's clients are known (or could not be read); not on the first run.
    this.gatewaySection.hidden = !this.gatewayError && (!info || (r.connectors.length === 0 && clients.length === 0));
    if (this.gatewaySection.hidden) return;
    this.gatewayCount.textContent = clients.length > 0 ? String(clients.length) : "";
    this.gatewayNote.replaceChildren();
    if (info) {
      this.gatewayNote.append(
        "MCP clients that reach your connectors through the gateway at ",
        el("code", "gateway__url", info.url),
        ` (one connector: ${info.url}/NAME). Each sends a secret Patchbay minted into its config; Patchbay keeps only its hash, so a secret is never shown again.`,
      );
    }
    this.gatewayProblem.replaceChildren();
    if (this.gatewayError) {
      const n = el("div", "notice notice--error");
      n.setAttribute("role", "alert");
      n.append(icon("warning", "icon notice__icon"), el("p", "notice__text", this.gatewayError));
      this.gatewayProblem.append(n);
    }
    if (this.revokeError && labels.has(this.revokeError.label)) {
      const n = el("div", "notice notice--error");
      n.setAttribute("role", "alert");
      n.append(icon("warning", "icon notice__icon"), el("p", "notice__text", this.revokeError.message));
      this.gatewayProblem.append(n);
    }
    const titles = new Map(r.connectors.map((c) => [c.name, c.title || c.name]));
    const focused = document.activeElement?.closest?.("li[data-gateway-client]")?.getAttribute("data-gateway-client") ?? null;
    const focusIndex = focused ? clients.findIndex((g) => g.label === focused) : -1;
    this.gatewayList.replaceChildren(
      ...clients.map((g) => buildGatewayRow(g, this.revokePhase.get(g.label)?.phase ?? "idle", titles, t)),
    );
    if (clients.length === 0) {
      const li = el("li", "gateway__none", "No gateway clients yet. “Use in another client” through the gateway creates one per client; so does patchbay gateway client add LABEL.");
      this.gatewayList.append(li);
    }
    if (focused && focusIndex >= 0) {
      this.gatewayList.querySelector<HTMLElement>(`li[data-gateway-client="${CSS.escape(focused)}"] [data-control=revoke]`)?.focus({ preventScroll: true });
    }
  }

  private cancelRevoke(label: string): void {
    const p = this.revokePhase.get(label);
    if (!p || p.phase !== "confirm") return;
    window.clearTimeout(p.timer);
    this.revokePhase.delete(label);
    const btn = this.gatewayList.querySelector<HTMLButtonElement>(`li[data-gateway-client="${CSS.escape(label)}"] [data-control=revoke]`);
    if (btn) setRevokeButton(btn, "idle");
  }

  private onGatewayClick(e: MouseEvent): void {
    const btn = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-control=revoke]");
    const li = btn?.closest<HTMLLIElement>("li[data-gateway-client]");
    if (!btn || !li) return;
    const label = li.dataset.gatewayClient!;
    const p = this.revokePhase.get(label);
    if (p?.phase === "busy") return;
    if (!p) {
      const timer = window.setTimeout(() => this.cancelRevoke(label), CONFIRM_MS);
      this.revokePhase.set(label, { phase: "confirm", timer });
      setRevokeButton(btn, "confirm");
      this.announce(`Press Confirm revoke: ${label} can no longer reach the gateway`);
      return;
    }
    window.clearTimeout(p.timer);
    this.revokePhase.set(label, { phase: "busy", timer: 0 });
    setRevokeButton(btn, "busy");
    this.revokeError = null;
    const index = [...this.gatewayList.children].indexOf(li);
    void this.backend.revokeGatewayClient(label).then(
      (g) => {
        this.revokePhase.delete(label);
        this.gatewayInfo = g;
        this.gatewayError = null;
        this.announce(`Gateway client ${label} revoked`);
        if (this.report) this.render(this.report);
        const rest = this.gatewayList.querySelectorAll<HTMLElement>("[data-control=revoke]");
        const next = rest[Math.min(index, rest.length - 1)];
        (next ?? this.gatewaySection.querySelector<HTMLElement>("#gateway-title"))?.focus({ preventScroll: true });
      },
      (err) => {
        this.revokePhase.delete(label);
        this.revokeError = { label, message: toBackendError(err).message };
        if (this.report) this.render(this.report);
        this.gatewayList.querySelector<HTMLElement>(`li[data-gateway-client="${CSS.escape(label)}"] [data-control=revoke]`)?.focus();
      },
    );
  }

  private async refreshNow(name: string, state: ConnectorStateId): Promise<void> {
    const before = this.report?.connectors.find((x) => x.name === name)?.refresh_history?.[0] ?? null;
    this.updateRowUi(name, { refreshing: true, notice: null });
    let report: StatusReport;
    try {
      report = await this.backend.refreshConnector(name);
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { refreshing: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      return;
    }
    const c = report.connectors.find((x) => x.name === name);
    const last = c?.refresh_history?.[0] ?? null;
    const title = c?.title || name;
    const fresh = last !== null && JSON.stringify(last) !== JSON.stringify(before);
    // Quietly, then render the answer: a render of the previous report first would drop a notice
    // raised for the answer's state.
    this.updateRowUiQuietly(name, {
      refreshing: false,
      // Nothing recorded: the refresher sent nothing (no usable refresh token, or busy).
      notice:
        fresh || !c?.credential
          ? null
          : {
              tone: "info",
              text: c.credential.has_refresh_token
                ? "Nothing was refreshed: Patchbay has no usable refresh token for this credential, or another refresh was under way."
                : `Nothing was refreshed: ${title} issued no refresh token, so only authorizing again renews this credential.`,
              forState: c.state,
            },
    });
    this.render(report);
    if (!fresh) this.announce(`${title}: nothing was refreshed`);
    else if (outcomeTone(last.outcome) === "ok") this.announce(`${title} refreshed`);
    else this.announce(`Refreshing ${title} failed: ${last.summary}`);
  }

  /** "Test": a real handshake; the answer shows in the row, the board is fetched again. */
  private async test(name: string, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { testing: true, notice: null });
    let result: ConnectorCheck;
    try {
      result = await this.backend.checkConnector(name);
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { testing: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      return;
    }
    // The answer carries the connector's health after this check: draw it at once, then fetch
    // the whole board (the backend may have recorded more meanwhile).
    const row = this.health.get(name);
    if (row && result.skipped === null) {
      this.health.set(name, {
        ...row,
        ...result.health,
        degraded: result.degraded,
        consecutive_failures: result.consecutive_failures,
        tools:
          result.ok && result.transport
            ? { checked_at: result.checked_at, transport: result.transport, tools: result.tools }
            : row.tools,
      });
    }
    const c = this.report?.connectors.find((x) => x.name === name);
    this.updateRowUi(name, {
      testing: false,
      check: { result, credentialAt: c?.credential?.updated_at ?? null, forState: c?.state ?? state },
    });
    this.announce(checkAnnouncement(c, result));
    void this.loadBoard();
  }

  /** "Save SSE to catalog": writes the transport that answered to the user catalog. */
  private async writeBack(name: string, transport: string, state: ConnectorStateId): Promise<void> {
    const check = this.rowUi.get(name)?.check ?? null;
    const file = check?.result.write_back?.file ?? null;
    this.updateRowUi(name, { writingBack: true, notice: null });
    let report: StatusReport;
    try {
      report = await this.backend.writeBackTransport(name, transport);
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { writingBack: false, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      return;
    }
    const c = report.connectors.find((x) => x.name === name);
    const title = c?.title || name;
    const label = transportLabel(transport);
    // Saved: the offer goes, the test result stays (it answered over what is now configured).
    const saved: RowUi["check"] = check && {
      ...check,
      result: { ...check.result, configured_transport: check.result.fell_back_to, fell_back_to: null, write_back: null },
    };
    this.updateRowUiQuietly(name, {
      writingBack: false,
      check: saved,
      notice: {
        tone: "info",
        text: file
          ? `Saved ${label} as ${title}’s transport in \`${file}\`.`
          : `Saved ${label} as ${title}’s transport in your catalog.`,
        forState: c?.state ?? state,
      },
    });
    this.render(report);
    this.announce(`${title}: ${label} saved to the catalog`);
    this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=test]")?.focus({ preventScroll: true });
  }

  private async disconnect(name: string, forgetRegistration: boolean, state: ConnectorStateId): Promise<void> {
    this.updateRowUi(name, { disconnect: { phase: "busy", forget: forgetRegistration }, notice: null });
    try {
      const report = await this.backend.disconnectConnector(name, forgetRegistration);
      this.updateRowUiQuietly(name, { disconnect: null, refreshing: false });
      const c = report.connectors.find((x) => x.name === name);
      this.announce(`${c?.title || name} disconnected`);
      this.render(report);
      this.rows.get(name)?.el.focus({ preventScroll: true });
    } catch (err) {
      const e = toBackendError(err);
      this.updateRowUi(name, { disconnect: null, notice: { tone: "error", text: e.message, kind: e.kind, forState: state } });
      this.rows.get(name)?.el.querySelector<HTMLElement>("[data-control=disconnect]")?.focus({ preventScroll: true });
    }
  }

  private async completePaste(name: string): Promise<void> {
    const flow = this.rowUi.get(name)?.flow;
    if (!flow || flow.busy) return;
    const pasted = this.rows.get(name)?.el.querySelector<HTMLInputElement>("[data-control=pasted]")?.value ?? flow.draft;
    if (pasted.trim() === "") {
      this.updateFlow(name, {
        draft: pasted,
        error: { kind: "invalid_input", message: "Paste the address your browser landed on after approving, or the code." },
      });
      this.focusPasteField(name);
      return;
    }
    this.updateFlow(name, { draft: pasted, busy: true, error: null });
    try {
      const report = await this.backend.completeAuthorization(name, pasted);
      this.updateRowUi(name, { flow: null, pending: false });
      const c = report.connectors.find((x) => x.name === name);
      this.announce(`${c?.title || name} authorized`);
      this.render(report);
      this.rows.get(name)?.el.focus({ preventScroll: true });
    } catch (err) {
      this.updateFlow(name, { busy: false, error: toBackendError(err) });
      this.focusPasteField(name);
    }
  }

  private async copy(
    btn: HTMLButtonElement,
    name: string,
    text: string,
    state: ConnectorStateId,
  ): Promise<void> {
    const ok = await copyText(text);
    if (ok) {
      const label = btn.textContent;
      btn.textContent = "Copied";
      btn.classList.add("btn--done");
      this.announce(`Copied ${text}`);
      window.setTimeout(() => {
        if (!btn.isConnected) return;
        btn.textContent = label;
        btn.classList.remove("btn--done");
      }, 1600);
    } else {
      this.updateRowUi(name, {
        notice: { tone: "info", text: `Couldn’t reach the clipboard. Copy this yourself: \`${text}\``, forState: state },
      });
    }
  }

  private onUnclaimedClick(e: MouseEvent): void {
    const btn = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-control=delete]");
    const li = btn?.closest<HTMLLIElement>("li[data-unclaimed]");
    if (!btn || !li) return;
    const key = li.dataset.unclaimed!;
    const phase = btn.dataset.phase;
    if (phase === "busy") return;
    if (phase !== "confirm") {
      setDeleteButton(btn, "confirm");
      this.announce("Press Confirm delete to delete this credential");
      const timer = window.setTimeout(() => {
        this.confirmTimers.delete(key);
        if (btn.isConnected && btn.dataset.phase === "confirm") setDeleteButton(btn, "idle");
      }, CONFIRM_MS);
      this.confirmTimers.set(key, timer);
      return;
    }
    window.clearTimeout(this.confirmTimers.get(key));
    this.confirmTimers.delete(key);
    setDeleteButton(btn, "busy");
    void this.backend.deleteUnclaimedCredential(key).then(
      (r) => {
        this.announce("Credential deleted");
        this.render(r);
      },
      (err) => {
        const e2 = toBackendError(err);
        if (btn.isConnected) setDeleteButton(btn, "idle");
        li.querySelector(".notice")?.remove();
        const n = el("div", "notice notice--error");
        n.setAttribute("role", "alert");
        n.append(icon("warning", "icon notice__icon"), el("p", "notice__text", e2.message));
        li.querySelector(".urow__main")?.append(n);
      },
    );
  }

  // ---- focus-connector ------------------------------------------------------------------

  focusConnector(name: string): void {
    if (!this.report) {
      // The last request before the rows exist wins: an authorize kept for another row is not
      // carried over to this one.
      this.pendingFocus = name;
      this.pendingAuthorize = null;
      return;
    }
    const row = this.rows.get(name)?.el;
    if (!row) return;
    // The tray asks for a row: the list comes back from the gallery.
    if (this.galleryOpen) this.closeGallery(false);
    this.setActive(name);
    const reduce = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    row.scrollIntoView({ block: "nearest", behavior: reduce ? "auto" : "smooth" });
    row.focus({ preventScroll: true });
    for (const r of this.list.querySelectorAll(".row--highlight")) r.classList.remove("row--highlight");
    void row.offsetWidth; // restart the highlight
    row.classList.add("row--highlight");
    window.clearTimeout(this.highlightTimer);
    this.highlightTimer = window.setTimeout(() => row.classList.remove("row--highlight"), HIGHLIGHT_MS);
  }

  // ---- announcements --------------------------------------------------------------------

  private announceChanges(prev: StatusReport, next: StatusReport): void {
    const before = new Map(prev.connectors.map((c) => [c.name, c.state]));
    const changed = next.connectors.filter((c) => before.has(c.name) && before.get(c.name) !== c.state);
    if (changed.length === 0) return;
    const parts = changed.slice(0, 3).map((c) => `${c.title || c.name}: ${c.label}`);
    if (changed.length > 3) parts.push(`and ${changed.length - 3} more`);
    this.announce(parts.join(". "));
  }

  private announce(text: string): void {
    if (!this.announcer) return;
    const node = this.announcer;
    node.textContent = "";
    window.setTimeout(() => (node.textContent = text), 60);
  }
}

/** The row's note right after Add: what is left to reach Ready. */
function addedNotice(c: Connector, g: GalleryEntry | null): RowUi["notice"] {
  const title = c.title || g?.title || c.name;
  let text: string;
  if (c.action === "authorize" || c.action === "reauthorize") {
    text = `${title} is added. Authorize it to finish: Patchbay opens the sign-in page in your browser.`;
  } else if (c.action === "set_variable") {
    text = `${title} is added. Enter its ${c.missing_variables.length > 1 ? "keys" : "key"} below to finish; Patchbay keeps ${c.missing_variables.length > 1 ? "them" : "it"} in the system keychain.`;
  } else if (!c.needs_attention) {
    text = `${title} is added and ready to use.`;
  } else {
    text = `${title} is added: ${c.label}.`;
  }
  return { tone: "info", text, forState: c.state };
}

/** What a screen reader hears when a Test answers. */
function checkAnnouncement(c: Connector | undefined, r: ConnectorCheck): string {
  const title = c?.title || r.connector;
  if (r.skipped !== null) return `${title} was not tested: ${r.skipped}`;
  if (!r.ok) return `${title} test failed: ${r.error?.message ?? "no answer"}`;
  const tools = `${r.tools.length} ${r.tools.length === 1 ? "tool" : "tools"}`;
  const fell = r.fell_back_to ? `; it answers over ${transportLabel(r.fell_back_to)}, not ${transportLabel(r.configured_transport)}` : "";
  return `${title} answered in ${r.latency_ms ?? "?"} ms with ${tools}${fell}`;
}

/**
 * Puts `ordered` first in `parent`, in that order, moving only the nodes that are out of place
 * (a node that stays put keeps its focus and selection). Whatever else is left is removed by the caller.
 */
function placeInOrder(parent: HTMLElement, ordered: HTMLElement[]): void {
  ordered.forEach((node, i) => {
    const at = parent.children[i] ?? null;
    if (at !== node) parent.insertBefore(node, at);
  });
}

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection fallback
  }
  try {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "clipboard-fallback";
    const active = document.activeElement as HTMLElement | null;
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    active?.focus({ preventScroll: true });
    return ok;
  } catch {
    return false;
  }
}
