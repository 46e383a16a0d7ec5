// Launch: submit a mine (a directory, or an installed source with the options it declares), an
// extract or an embed job, and follow the job just submitted as it runs.

import { useState } from "preact/hooks";
import { get, post } from "../api.js";
import { href } from "../router.js";
import {
  ErrorBox, Field, Loading, Page, ProgressBar, Status, WriteButton, html, useAction, useReadOnly,
  useResource,
} from "../ui.js";

export function Launch() {
  const [submitted, setSubmitted] = useState([]);
  const added = (job) => job && setSubmitted((old) => [job.id, ...old.filter((id) => id !== job.id)]);
  return html`<${Page} title="Launch" intro="Start work in the background; it shows on Jobs, where it can be paused or cancelled.">
    <${Mine} onSubmitted=${added} />
    <div class="cards">
      <${Simple} type="extract" title="Extract" onSubmitted=${added}
        what="Read entities and facts out of mined drawers and notes not read yet (needs an extraction provider)." />
      <${Simple} type="embed" title="Embed" onSubmitted=${added}
        what="Give drawers their vectors in the default embedding profile." />
    </div>
    ${submitted.length > 0 && html`<article class="card" aria-live="polite">
      <h2>Submitted from this page</h2>
      <ul class="jobs">${submitted.map((id) => html`<${Followed} id=${id} key=${id} />`)}</ul>
    </article>`}
  <//>`;
}

function Followed({ id }) {
  const state = useResource((signal) => get(`/jobs/${id}`, {}, signal), [id]);
  return html`<li class="job" data-job=${id} data-status=${state.data?.status}>
    <${Loading} state=${state}>${(job) => html`
      <div class="job-head">
        <a href=${href("jobs", [job.id])}><strong>${job.kind.type}</strong> ${job.id}</a>
        <${Status} value=${job.status} />
      </div>
      <${ProgressBar} progress=${job.progress} status=${job.status} />
      ${job.error && html`<p class="bad">${job.error}</p>`}`}<//>
  </li>`;
}

function Mine({ onSubmitted }) {
  const readOnly = useReadOnly();
  const [from, setFrom] = useState("directory");
  const [source, setSource] = useState("");
  const [action, run] = useAction();
  const sources = useResource((signal) => get("/sources", {}, signal));
  // A built-in source has no state; an installed one must be enabled to be mined.
  const minable = (sources.data?.adapters || []).filter(
    (adapter) => adapter.name !== "directory" && [undefined, "enabled"].includes(adapter.state),
  );
  const chosen = minable.find((adapter) => adapter.name === source) || minable[0];
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    const body = { type: "mine", requested_by: "web" };
    if (form.get("wing")) body.wing = form.get("wing");
    if (form.get("full")) body.full = true;
    if (from === "directory") {
      body.path = form.get("path");
    } else {
      body.source = chosen.name;
      if (form.get("locator")) body.locator = form.get("locator");
      const options = {};
      for (const option of chosen.options) {
        const value = form.get(`option-${option.name}`);
        if (value) options[option.name] = value;
      }
      if (Object.keys(options).length) body.options = options;
    }
    onSubmitted(await run(() => post("/jobs", body)));
  }
  return html`<form class="card" onSubmit=${submit} aria-labelledby="mine-title">
    <h2 id="mine-title">Mine</h2>
    <fieldset disabled=${readOnly}>
      <div class="segmented" role="radiogroup" aria-label="What to mine">
        <label><input type="radio" name="from" value="directory" checked=${from === "directory"}
          onChange=${() => setFrom("directory")} /> A directory</label>
        <label><input type="radio" name="from" value="source" checked=${from === "source"}
          onChange=${() => setFrom("source")} /> An installed source</label>
      </div>
      ${from === "directory"
        ? html`<${Field} label="Directory" hint="an absolute path on the daemon's machine">
            <input name="path" required placeholder="for example /home/you/project" /><//>`
        : html`<${Loading} state=${sources}>${() => minable.length === 0
            ? html`<p class="muted">No source but the directory is enabled: see <code>memcastle source list</code>.</p>`
            : html`
              <${Field} label="Source">
                <select value=${chosen.name} onChange=${(event) => setSource(event.target.value)}>
                  ${minable.map((adapter) => html`<option value=${adapter.name}>${adapter.name}</option>`)}
                </select>
              <//>
              <p class="muted">${chosen.description}</p>
              <${Field} label="Locator" hint="where the source reads; its default when empty"><input name="locator" /><//>
              ${chosen.options.map((option) => html`<${Field} key=${`${chosen.name}-${option.name}`}
                  label=${option.name} hint=${option.description + (option.breadth ? ` (${option.breadth})` : "")}>
                <input name=${`option-${option.name}`} />
              <//>`)}`}<//>`}
      <div class="row">
        <${Field} label="Wing" hint="where the drawers go; the source's default when empty"><input name="wing" /><//>
        <label class="check"><input type="checkbox" name="full" value="true" /> Read everything again (full)</label>
      </div>
      <${WriteButton} type="submit" disabled=${action.busy}>Start mining<//>
    </fieldset>
    <${ErrorBox} error=${action.error} />
  </form>`;
}

function Simple({ type, title, what, onSubmitted }) {
  const readOnly = useReadOnly();
  const [action, run] = useAction();
  async function submit(event) {
    event.preventDefault();
    const wing = new FormData(event.target).get("wing");
    const body = { type, requested_by: "web" };
    if (wing) body.wing = wing;
    onSubmitted(await run(() => post("/jobs", body)));
  }
  return html`<form class="card" onSubmit=${submit}>
    <h2>${title}</h2>
    <p class="muted">${what}</p>
    <fieldset disabled=${readOnly}>
      <${Field} label="Wing" hint="every wing when empty"><input name="wing" /><//>
      <${WriteButton} type="submit" disabled=${action.busy}>${`Start ${type}`}<//>
    </fieldset>
    <${ErrorBox} error=${action.error} />
  </form>`;
}
