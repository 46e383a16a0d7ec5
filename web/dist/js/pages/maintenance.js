// Maintenance: an audit (what is orphaned, dangling or exhausted), and a repair, first as a dry
// run that says what it would delete, then applied; the last report of each.

import { useState } from "preact/hooks";
import { get, post } from "../api.js";
import { href } from "../router.js";
import {
  Empty, ErrorBox, Facts, Field, Loading, Page, ProgressBar, Status, Time, WriteButton, html,
  useAction, useReadOnly, useResource,
} from "../ui.js";

export function Maintenance() {
  const state = useResource(async (signal) => {
    const [audits, repairs] = await Promise.all([
      get("/jobs", { kind: "audit", limit: 1 }, signal),
      get("/jobs", { kind: "repair", limit: 1 }, signal),
    ]);
    return { audit: audits.jobs[0], repair: repairs.jobs[0] };
  });
  return html`<${Page} title="Maintenance" intro="An audit only reads. A repair only deletes orphan drawers (whose room is gone), and only when applied.">
    <${Loading} state=${state}>${({ audit, repair }) => html`<div class="cards">
      <${Audit} last=${audit} />
      <${Repair} last=${repair} audit=${audit} />
    </div>`}<//>
  <//>`;
}

function Audit({ last }) {
  const readOnly = useReadOnly();
  const [action, run] = useAction();
  function submit(event) {
    event.preventDefault();
    const scope = new FormData(event.target).get("scope");
    run(() => post("/jobs", scope ? { type: "audit", scope, requested_by: "web" } : { type: "audit", requested_by: "web" }));
  }
  return html`<article class="card">
    <h2>Audit</h2>
    <form onSubmit=${submit}>
      <fieldset disabled=${readOnly}>
        <${Field} label="Wing" hint="the whole palace when empty"><input name="scope" /><//>
        <${WriteButton} type="submit" disabled=${action.busy}>Run an audit<//>
      </fieldset>
      <${ErrorBox} error=${action.error} />
    </form>
    <${LastReport} job=${last}>${(result) => html`<${Facts} rows=${[
      ["Orphan drawers", result.orphan_drawers.count],
      ["Drawers naming a missing job", result.dangling_job_refs.count],
      ["Jobs out of crash budget", result.exhausted_jobs.count],
      ["Other jobs running", result.running_jobs],
      ["Drawers without a vector", result.drawers_without_embedding],
      ["Scope", result.scope || "whole palace"],
    ]} />`}<//>
  </article>`;
}

function Repair({ last, audit }) {
  const [action, run] = useAction();
  const [confirming, setConfirming] = useState(false);
  const basedOn = audit?.status === "completed" ? audit.id : null;
  function repair(dryRun) {
    setConfirming(false);
    const body = { type: "repair", dry_run: dryRun, requested_by: "web" };
    if (basedOn) body.based_on_job = basedOn;
    run(() => post("/jobs", body));
  }
  return html`<article class="card">
    <h2>Repair</h2>
    <p class="muted">${basedOn ? "Only the orphans the last audit listed, if they are still orphans." : "Every orphan drawer."}</p>
    <div class="controls-row">
      <${WriteButton} class="secondary" disabled=${action.busy} onClick=${() => repair(true)}>Dry run<//>
      ${confirming
        ? html`<${WriteButton} class="danger" onClick=${() => repair(false)}>Delete the orphans<//>
            <button type="button" class="secondary" onClick=${() => setConfirming(false)}>Keep them</button>`
        : html`<${WriteButton} disabled=${action.busy} onClick=${() => setConfirming(true)}>Apply…<//>`}
    </div>
    <${ErrorBox} error=${action.error} />
    <${LastReport} job=${last}>${(result) => html`<${Facts} rows=${[
      ["Kind", result.dry_run ? "dry run" : "applied"],
      ["Would delete", result.dry_run ? result.planned.count : undefined],
      ["Deleted", result.dry_run ? undefined : result.deleted],
      ["Based on audit", result.based_on_job && html`<a href=${href("jobs", [result.based_on_job])}>${result.based_on_job}</a>`],
    ]} />`}<//>
  </article>`;
}

function LastReport({ job, children }) {
  if (!job) return html`<${Empty}>None has run yet.<//>`;
  return html`<section class="report" aria-label="Last report">
    <div class="job-head">
      <a href=${href("jobs", [job.id])}>Last run</a> <${Time} value=${job.created_at} /> <${Status} value=${job.status} />
    </div>
    ${job.status === "completed" ? children(job.result) : html`<${ProgressBar} progress=${job.progress} status=${job.status} />`}
    ${job.error && html`<p class="bad">${job.error}</p>`}
  </section>`;
}
