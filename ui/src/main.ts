import "./styles.css";
import { ConnectorsWindow } from "./app";
import { createBackend, toBackendError } from "./backend";

async function main(): Promise<void> {
  const root = document.getElementById("app")!;
  const announcer = document.getElementById("announcer");
  try {
    const backend = await createBackend();
    const win = new ConnectorsWindow(root, backend, announcer);
    await win.start();
  } catch (err) {
    const e = toBackendError(err);
    root.removeAttribute("aria-busy");
    root.textContent = `Patchbay could not start this window: ${e.message}`;
  }
}

void main();
