// "Start at login": the Connectors window's switch for launching Patchbay at login (off by
// default). In Tauri it calls the app's get_launch_at_login / set_launch_at_login commands, which
// write or remove the login entry (Linux: the XDG autostart file; the entry starts the app
// quietly in the tray). In a plain browser (tests, `npm run dev`) a small in-memory stand-in
// answers instead:
//   login=on                          the setting starts on
//   fail=get_launch_at_login          reading it rejects (the switch says it is unavailable)
//   fail=set_launch_at_login          every change rejects (the switch goes back)
// and `window.__patchbayLaunchAtLogin` shows the stand-in's state and the calls it got.

import "./launch-at-login.css";
import { invoke } from "@tauri-apps/api/core";
import { isTauri, toBackendError } from "./backend";
import { el } from "./format";

export interface LaunchAtLogin {
  /** Whether Patchbay starts at login. */
  get(): Promise<boolean>;
  /** Turns it on or off; answers the setting as it now is. */
  set(enabled: boolean): Promise<boolean>;
}

interface StandIn {
  enabled: boolean;
  calls: { command: string; enabled?: boolean }[];
}

declare global {
  interface Window {
    __patchbayLaunchAtLogin?: StandIn;
  }
}

function standIn(params: URLSearchParams): LaunchAtLogin {
  const failing = new Set((params.get("fail") ?? "").split(","));
  const state: StandIn = { enabled: params.get("login") === "on", calls: [] };
  window.__patchbayLaunchAtLogin = state;
  const refuse = (command: string) => ({
    kind: "launch_at_login",
    message: `cannot write the autostart entry (${command} failed in the stand-in)`,
  });
  return {
    async get() {
      state.calls.push({ command: "get_launch_at_login" });
      if (failing.has("get_launch_at_login")) throw refuse("get_launch_at_login");
      return state.enabled;
    },
    async set(enabled) {
      state.calls.push({ command: "set_launch_at_login", enabled });
      if (failing.has("set_launch_at_login")) throw refuse("set_launch_at_login");
      state.enabled = enabled;
      return state.enabled;
    },
  };
}

export function launchAtLogin(): LaunchAtLogin {
  if (isTauri()) {
    return {
      get: () => invoke<boolean>("get_launch_at_login"),
      set: (enabled) => invoke<boolean>("set_launch_at_login", { enabled }),
    };
  }
  return standIn(new URLSearchParams(window.location.search));
}

/**
 * The switch: a checkbox with role=switch, disabled while the setting is read or written. A
 * change that fails puts the switch back and says why; `announce` speaks a change that worked.
 */
export function buildLaunchAtLoginSwitch(
  setting: LaunchAtLogin,
  announce: (text: string) => void = () => {},
): HTMLElement {
  const root = el("div", "login-switch");
  const label = el("label", "login-switch__label");
  const input = el("input", "login-switch__input");
  input.type = "checkbox";
  input.id = "launch-at-login";
  input.setAttribute("role", "switch");
  input.disabled = true;
  label.append(input, "Start at login");
  label.title = "Start Patchbay in the tray when you log in (no window opens)";
  const problem = el("p", "login-switch__problem");
  problem.id = "launch-at-login-problem";
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  root.append(label, problem);

  const say = (text: string | null) => {
    problem.textContent = text ?? "";
    problem.hidden = text === null;
    if (text === null) input.removeAttribute("aria-describedby");
    else input.setAttribute("aria-describedby", problem.id);
  };

  setting.get().then(
    (enabled) => {
      input.checked = enabled;
      input.disabled = false;
    },
    (err) => {
      root.classList.add("login-switch--unavailable");
      say(`Start at login is unavailable: ${toBackendError(err).message}`);
    },
  );

  input.addEventListener("change", () => {
    const wanted = input.checked;
    input.disabled = true;
    root.setAttribute("aria-busy", "true");
    setting.set(wanted).then(
      (enabled) => {
        input.checked = enabled;
        say(null);
        announce(enabled ? "Patchbay will start at login" : "Patchbay will not start at login");
      },
      (err) => {
        input.checked = !wanted;
        say(`Could not ${wanted ? "turn on" : "turn off"} Start at login: ${toBackendError(err).message}`);
      },
    ).finally(() => {
      input.disabled = false;
      root.removeAttribute("aria-busy");
    });
  });
  return root;
}

/** The window's footer holding the switch (below the scrolling list, always in view). */
export function buildSettingsFooter(setting: LaunchAtLogin, announce?: (text: string) => void): HTMLElement {
  const footer = el("footer", "settings-footer");
  footer.setAttribute("aria-label", "Settings");
  footer.append(buildLaunchAtLoginSwitch(setting, announce));
  return footer;
}
