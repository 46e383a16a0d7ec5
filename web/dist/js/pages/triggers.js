// Triggers: what starts a miner unattended (a schedule, a webhook...), its state, when it last
// fired and when it is next due; enabling, disabling and firing one by hand.

import { get, post } from "../api.js";
import {
  Empty, ErrorBox, Facts, Json, Loading, Page, Status, Time, WriteButton, html, useAction,
  useResource,
} from "../ui.js";

export function Triggers() {
  const state = useResource((signal) => get("/triggers", {}, signal));
  return html`<${Page} title="Triggers" intro="Triggers run miners unattended. They are defined in the configuration file or with memcastle trigger set.">
    <${Loading} state=${state}>${({ triggers }) => triggers.length === 0
      ? html`<${Empty}>No trigger is defined: add one with <code>memcastle trigger set</code>.<//>`
      : html`<div class="cards">${triggers.map((trigger) => html`<${Trigger} trigger=${trigger} key=${trigger.name} />`)}</div>`}<//>
  <//>`;
}

function Trigger({ trigger }) {
  const [action, run] = useAction();
  const name = encodeURIComponent(trigger.name);
  const state = trigger.state || {};
  return html`<article class="card" data-trigger=${trigger.name}>
    <div class="job-head"><h2>${trigger.name}</h2><${Status} value=${trigger.status} /></div>
    <${Facts} rows=${[
      ["Miner", trigger.miner],
      ["Type", trigger.type],
      ["Unavailable because", trigger.unavailable_reason],
      ["Last fired", state.last_fired && html`<${Time} value=${state.last_fired} />`],
      ["Next due", state.next_due && html`<${Time} value=${state.next_due} />`],
      ["Fired", state.fires],
      ["Failures", state.failures],
      ["Last error", state.last_error && html`<span class="bad">${state.last_error}</span>`],
      ["Watching", state.watching === null || state.watching === undefined ? null : (state.watching ? "yes" : "not yet")],
      ["Last job", state.last_job],
      ["Secret", trigger.credential && `${trigger.credential.kind}, ${trigger.credential.available ? "available" : "missing"}`],
    ]} />
    <details><summary>Settings</summary><${Json} value=${trigger.settings} /></details>
    <div class="controls-row">
      ${trigger.enabled
        ? html`<${WriteButton} class="secondary" disabled=${action.busy}
            onClick=${() => run(() => post(`/triggers/${name}/disable`))}>Disable<//>`
        : html`<${WriteButton} class="secondary" disabled=${action.busy}
            onClick=${() => run(() => post(`/triggers/${name}/enable`))}>Enable<//>`}
      <${WriteButton} class="secondary" disabled=${action.busy || !trigger.enabled}
        onClick=${() => run(() => post(`/triggers/${name}/fire`))}>Fire now<//>
    </div>
    <${ErrorBox} error=${action.error} />
    ${action.answer?.job && html`<p class="ok">Fired: job ${action.answer.job} (${action.answer.status})</p>`}
  </article>`;
}
