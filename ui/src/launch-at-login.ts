// "Start at login": the Connectors window's switch for launching Patchbay at login (off by
// default). It reads and changes the setting through the Backend (get_launch_at_login /
// set_launch_at_login, which write or remove the login entry: on Linux the XDG autostart file,
// starting the app quietly in the tray); in a plain browser the mock backend answers (mock.ts:
// `login=on`, `fail=get_launch_at_login`, `fail=set_launch_at_login`). Failures arrive as a
// BackendError of kind `launch_at_login`.

import "./launch-at-login.css";
import type { Backend } from "./backend";
import { toBackendError } from "./backend";
import { el } from "./format";

/** The part of the Backend the switch uses. */
export type LaunchAtLogin = Pick<Backend, "getLaunchAtLogin" | "setLaunchAtLogin">;

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

  setting.getLaunchAtLogin().then(
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
    setting.setLaunchAtLogin(wanted).then(
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
