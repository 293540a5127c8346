// The confirmation before Patchbay changes another app's config ("Add to Cursor", "Switch
// Cursor's entry to Patchbay"): a modal dialog with the one entry as the file holds it now and
// as it will be (the backend's preview: preview_add_to_client / preview_switch_client_entry,
// every header and variable value already hidden), the file's path, and the preview's warning
// (the connector not ready in Patchbay yet, no installed CLI). Nothing is written until the user confirms; the
// write's notice then offers Undo (ClientWrite.undo_id).

import "./write-confirm.css";
import { el } from "./format";
import type { WritePreview } from "./generated/ipc";

/** Which write is being confirmed. */
export type WriteKind = "add" | "switch";

/** The dialog's question. */
export function confirmTitle(p: WritePreview, kind: WriteKind): string {
  return kind === "switch"
    ? `Switch ${p.client_name}’s “${p.name}” to Patchbay?`
    : p.change === "replaced"
      ? `Replace ${p.client_name}’s “${p.name}” with Patchbay’s?`
      : `Add ${p.name} to ${p.client_name}?`;
}

/** The confirm button's label. */
function confirmLabel(p: WritePreview, kind: WriteKind): string {
  return kind === "switch" ? "Switch" : p.change === "replaced" ? "Replace" : "Add";
}

/**
 * Shows the confirmation for `preview` and resolves `true` when the user confirms, `false` on
 * Cancel or Escape. Focus goes to Cancel (the safe choice) and back to `returnFocus` when the dialog closes.
 */
export function confirmWrite(
  preview: WritePreview,
  kind: WriteKind,
  returnFocus: HTMLElement | null,
): Promise<boolean> {
  document.getElementById("write-confirm")?.remove();
  const dialog = el("dialog", "write-confirm");
  dialog.id = "write-confirm";
  dialog.setAttribute("aria-labelledby", "write-confirm-title");
  dialog.setAttribute("aria-describedby", "write-confirm-text");
  const title = el("h2", "write-confirm__title", confirmTitle(preview, kind));
  title.id = "write-confirm-title";
  const text = el("p", "write-confirm__text");
  text.id = "write-confirm-text";
  text.append(
    `Patchbay changes this one entry in `,
    el("code", "write-confirm__file", preview.file),
    `; everything else in the file stays as it is. Undo puts the file back.`,
  );
  dialog.append(title, text);
  if (preview.warning) {
    const warn = el("p", "write-confirm__warning", preview.warning);
    warn.dataset.part = "warning";
    dialog.append(warn);
  }
  const side = (label: string, body: string | null, part: string) => {
    const figure = el("figure", "write-confirm__side");
    figure.dataset.part = part;
    figure.append(el("figcaption", "write-confirm__caption", label));
    if (body === null) figure.append(el("p", "write-confirm__none", `No entry named “${preview.name}” yet.`));
    else figure.append(el("pre", "write-confirm__entry", body));
    return figure;
  };
  const diff = el("div", "write-confirm__diff");
  diff.append(side("Now", preview.before, "before"), side("After", preview.after, "after"));
  dialog.append(diff);
  const actions = el("div", "write-confirm__actions");
  const cancel = el("button", "btn", "Cancel");
  cancel.type = "button";
  cancel.dataset.control = "write-cancel";
  const confirm = el("button", "btn btn--primary", confirmLabel(preview, kind));
  confirm.type = "button";
  confirm.dataset.control = "write-confirm";
  actions.append(cancel, confirm);
  dialog.append(actions);
  document.body.append(dialog);

  return new Promise((resolve) => {
    let answer = false;
    cancel.addEventListener("click", () => dialog.close());
    confirm.addEventListener("click", () => {
      answer = true;
      dialog.close();
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (returnFocus?.isConnected) returnFocus.focus({ preventScroll: true });
      resolve(answer);
    });
    dialog.showModal();
    cancel.focus();
  });
}
