import "./styles.css";
import { ConnectorsWindow } from "./app";
import { createBackend, toBackendError } from "./backend";
import { buildSettingsFooter } from "./launch-at-login";

async function main(): Promise<void> {
  const root = document.getElementById("app")!;
  const announcer = document.getElementById("announcer");
  try {
    const backend = await createBackend();
    const win = new ConnectorsWindow(root, backend, announcer);
    // The window's one app-wide setting, in a footer: after the connectors in the tab order.
    root.append(buildSettingsFooter(backend, (text) => announcer && (announcer.textContent = text)));
    await win.start();
  } catch (err) {
    const e = toBackendError(err);
    root.removeAttribute("aria-busy");
    root.textContent = `Patchbay could not start this window: ${e.message}`;
  }
}

void main();
