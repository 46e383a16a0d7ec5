// Jobs: the active ones and the history, filtered by state and kind, each with its progress,
// parameters and result, and the controls its state allows.

import { get, post } from "../api.js";
import { href, navigate } from "../router.js";
import {
  Empty, ErrorBox, Facts, Field, Json, Loading, Page, ProgressBar, Status, Time, WriteButton,
  html, useAction, useResource,
} from "../ui.js";

const STATUSES = ["", "queued", "running", "paused", "completed", "failed", "cancelled"];
const KINDS = ["", "mine", "extract", "embed", "checkpoint", "audit", "repair", "demo"];
const PAGE_SIZE = 50;

// What each control applies to, as the job's states allow it (docs/jobs.md, States).
const CONTROLS = [
  ["pause", "Pause", (job) => job.status === "running" && !job.pause_requested],
  ["resume", "Resume", (job) => job.status === "paused"],
  ["cancel", "Cancel", (job) => ["queued", "running", "paused"].includes(job.status) && !job.cancel_requested],
  ["retry", "Retry", (job) => job.status === "failed"],
];

export function Jobs({ route }) {
  if (route.parts[0]) return html`<${JobView} id=${route.parts[0]} />`;
  const status = route.params.get("status") || "";
  const kind = route.params.get("kind") || "";
  const offset = Number(route.params.get("offset") || 0);
  const state = useResource(
    (signal) => get("/jobs", { status, kind, limit: PAGE_SIZE, offset }, signal),
    [status, kind, offset],
  );
  const filter = (change) => navigate("jobs", [], { status, kind, ...change, offset: 0 });
  return html`<${Page} title="Jobs">
    <div class="card row filters">
      <${Field} label="State">
        <select value=${status} onChange=${(event) => filter({ status: event.target.value })}>
          ${STATUSES.map((s) => html`<option value=${s}>${s || "any"}</option>`)}
        </select>
      <//>
      <${Field} label="Kind">
        <select value=${kind} onChange=${(event) => filter({ kind: event.target.value })}>
          ${KINDS.map((k) => html`<option value=${k}>${k || "any"}</option>`)}
        </select>
      <//>
    </div>
    <${Loading} state=${state}>${(list) => html`
      ${list.jobs.length === 0
        ? html`<${Empty}>No job${status && ` ${status}`}${kind && ` of kind ${kind}`}.<//>`
        : html`<ul class="jobs">${list.jobs.map((job) => html`<${JobRow} job=${job} key=${job.id} />`)}</ul>`}
      <div class="pager">
        <button type="button" class="secondary" disabled=${offset === 0}
          onClick=${() => navigate("jobs", [], { status, kind, offset: Math.max(0, offset - PAGE_SIZE) })}>Newer</button>
        <span>${list.total ? `${offset + 1}–${Math.min(offset + PAGE_SIZE, list.total)} of ${list.total}` : ""}</span>
        <button type="button" class="secondary" disabled=${offset + PAGE_SIZE >= list.total}
          onClick=${() => navigate("jobs", [], { status, kind, offset: offset + PAGE_SIZE })}>Older</button>
      </div>`}<//>
  <//>`;
}

function JobRow({ job }) {
  return html`<li class="job" data-job=${job.id} data-status=${job.status}>
    <div class="job-head">
      <a href=${href("jobs", [job.id])}><strong>${job.kind.type}</strong> ${summary(job.kind)}</a>
      <${Status} value=${job.status} />
    </div>
    <${ProgressBar} progress=${job.progress} status=${job.status} />
    <div class="meta">submitted <${Time} value=${job.created_at} /> by ${job.requested_by}
      ${job.error && html` · <span class="bad">${job.error}</span>`}</div>
    <${Controls} job=${job} />
  </li>`;
}

// The parameters worth reading in a list: where a mine reads, which wing, what scope.
function summary(kind) {
  return [kind.path, kind.source, kind.locator, kind.wing && `wing ${kind.wing}`, kind.scope && `scope ${kind.scope}`,
    kind.dry_run === false ? "apply" : kind.type === "repair" ? "dry run" : null]
    .filter(Boolean).join(" · ");
}

function Controls({ job }) {
  const [action, run] = useAction();
  const offered = CONTROLS.filter(([, , allowed]) => allowed(job));
  if (!offered.length && !action.error) return null;
  return html`<div class="controls-row">
    ${offered.map(([name, label]) => html`<${WriteButton} class="secondary" disabled=${action.busy}
      aria-label=${`${label} job ${job.id}`}
      onClick=${() => run(() => post(`/jobs/${job.id}/${name}`, { requested_by: "web" }))}>${label}<//>`)}
    <${ErrorBox} error=${action.error} />
  </div>`;
}

function JobView({ id }) {
  const state = useResource((signal) => get(`/jobs/${encodeURIComponent(id)}`, {}, signal), [id]);
  return html`<${Page} title="Job">
    <nav class="trail" aria-label="Where you are"><a href=${href("jobs")}>Jobs</a> / <span>${id}</span></nav>
    <${Loading} state=${state}>${(job) => html`
      <article class="card job" data-job=${job.id} data-status=${job.status}>
        <div class="job-head"><h2>${job.kind.type}</h2><${Status} value=${job.status} /></div>
        <${ProgressBar} progress=${job.progress} status=${job.status} />
        <${Controls} job=${job} />
        <${Facts} rows=${[
          ["Submitted", html`<${Time} value=${job.created_at} />`],
          ["Started", html`<${Time} value=${job.started_at} />`],
          ["Ended", html`<${Time} value=${job.completed_at} />`],
          ["Requested by", job.requested_by],
          ["Priority", job.priority],
          ["Attempts", `${job.attempt} (crash budget ${job.max_attempts}, ${job.recovery_attempts} used)`],
          ["Error", job.error && html`<span class="bad">${job.error}</span> <code>${job.error_code}</code>`],
        ]} />
      </article>
      <div class="cards">
        <article class="card"><h2>Parameters</h2><${Json} value=${job.kind} /></article>
        <article class="card"><h2>Result</h2>${job.result ? html`<${Json} value=${job.result} />` : html`<${Empty}>None yet.<//>`}</article>
      </div>
      <article class="card"><h2>Checkpoint</h2><${Json} value=${job.checkpoint} /></article>
    `}<//>
  <//>`;
}
