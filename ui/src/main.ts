import "./styles.css";
import { ConnectorsWindow } from "./app";
import { createBackend, toBackendError } from "./backend";
import { buildConsentRequests } from "./consents";
import { buildSettingsFooter } from "./launch-at-login";

async function main(): Promise<void> {
  const root = document.getElementById("app")!;
  const announcer = document.getElementById("announcer");
  try {
    const backend = await createBackend();
    const announce = (text: string) => announcer && (announcer.textContent = text);
    const win = new ConnectorsWindow(root, backend, announcer);
    // Sign-in requests from the gateway's clients, above everything else while any waits.
    root.prepend(buildConsentRequests(backend, announce));
    // The window's one app-wide setting, in a footer: after the connectors in the tab order.
    root.append(buildSettingsFooter(backend, announce));
    await win.start();
  } catch (err) {
    const e = toBackendError(err);
    root.removeAttribute("aria-busy");
    root.textContent = `Patchbay could not start this window: ${e.message}`;
  }
}

void main();
