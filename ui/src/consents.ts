// Sign-in requests from the gateway's clients (issue 20): a client that signs in to Patchbay's
// gateway with OAuth opens Patchbay's consent page in the browser, and the same request waits
// here, at the top of the Connectors window, with Allow and Deny. Answered here, the page in the
// browser follows the answer to the client by itself; answered there, it leaves this list. The
// requests come from consent_requests and the consents-changed event; answer_consent answers one
// (Allow gives every connector in use, or the one asked for: choosing some is the page's). In a
// plain browser the mock backend answers (mock.ts: `consents=CLIENT[:CONNECTOR],…`,
// `fail=answer_consent`).

import "./consents.css";
import type { Backend } from "./backend";
import { toBackendError } from "./backend";
import { el } from "./format";
import type { ConsentRequest } from "./generated/ipc";

/** The part of the Backend the requests use. */
export type ConsentDesk = Pick<Backend, "consentRequests" | "answerConsent" | "onConsentsChanged">;

/** What a request asks, as a sentence after the client's name. */
function asks(request: ConsentRequest): string {
  return request.connector
    ? ` wants to use ${request.connector} through Patchbay's gateway.`
    : " wants to use your connectors through Patchbay's gateway.";
}

function requestItem(request: ConsentRequest): HTMLLIElement {
  const li = el("li", "consent");
  li.dataset.consent = request.id;
  const text = el("p", "consent__text");
  text.append(el("strong", undefined, request.client_name), asks(request));
  const note = el(
    "p",
    "consent__note",
    request.connector
      ? "Allow gives it this connector only. Your browser shows the same request."
      : "Allow gives it every connector in use; to choose some, answer in your browser instead.",
  );
  const actions = el("div", "consent__actions");
  for (const [answer, label, style] of [
    ["deny", "Deny", "btn"],
    ["allow", "Allow", "btn btn--primary"],
  ] as const) {
    const button = el("button", style, label);
    button.type = "button";
    button.dataset.answer = answer;
    button.setAttribute("aria-label", `${label} ${request.client_name}`);
    actions.append(button);
  }
  li.append(text, note, actions);
  return li;
}

/** The requests' region: hidden while none waits. `announce` speaks an answer that was taken. */
export function buildConsentRequests(desk: ConsentDesk, announce: (text: string) => void = () => {}): HTMLElement {
  const root = el("section", "consents");
  root.id = "consent-requests";
  root.setAttribute("aria-label", "Sign-in requests");
  const list = el("ul", "consents__list");
  const problem = el("p", "consents__problem");
  problem.id = "consent-problem";
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  root.append(list, problem);
  let requests: ConsentRequest[] = [];

  const show = () => {
    root.hidden = requests.length === 0 && problem.hidden;
  };
  const say = (text: string | null) => {
    problem.textContent = text ?? "";
    problem.hidden = text === null;
    show();
  };
  const render = (next: ConsentRequest[]) => {
    requests = next;
    list.replaceChildren(...next.map(requestItem));
    show();
  };

  list.addEventListener("click", (e) => {
    const button = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-answer]");
    const li = button?.closest<HTMLLIElement>("li[data-consent]");
    const request = requests.find((r) => r.id === li?.dataset.consent);
    if (!button || !li || !request) return;
    const allow = button.dataset.answer === "allow";
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    li.setAttribute("aria-busy", "true");
    desk.answerConsent(request.id, allow).then(
      (left) => {
        say(null);
        render(left);
        announce(allow ? `Allowed ${request.client_name}` : `Denied ${request.client_name}`);
      },
      (err) => {
        say(`Could not answer ${request.client_name}'s request: ${toBackendError(err).message}`);
        void desk.consentRequests().then(render, () => render(requests));
      },
    );
  });

  void desk.onConsentsChanged(render);
  desk.consentRequests().then(render, (err) => say(`Sign-in requests are unavailable: ${toBackendError(err).message}`));
  show();
  return root;
}
