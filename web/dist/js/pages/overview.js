// Overview: is the daemon healthy, where does it listen, how big is the palace, what are the
// jobs doing, and how did the newest 200 end.

import { get } from "../api.js";
import { href } from "../router.js";
import { Facts, Loading, Page, Time, html, useResource } from "../ui.js";

const OUTCOMES = ["completed", "failed", "cancelled", "running", "queued", "paused"];

export function Overview() {
  const state = useResource(async (signal) => {
    const [status, recent] = await Promise.all([
      get("/status", {}, signal),
      get("/jobs", { limit: 200 }, signal),
    ]);
    return { status, recent };
  });
  return html`<${Page} title="Overview">
    <${Loading} state=${state}>${({ status, recent }) => html`
      <div class="cards">
        <article class="card">
          <h2>Daemon</h2>
          <${Facts} rows=${[
            ["Health", status.datastore.healthy
              ? html`<span class="ok">healthy</span>`
              : html`<span class="bad">unhealthy: ${status.datastore.error}</span>`],
            ["Version", status.version],
            ["Address", html`<code>${status.bind_addr}</code>`],
            ["MCP", html`<code>${status.mcp_url}</code>`],
            ["Process", status.pid],
            ["Started", html`<${Time} value=${status.started_at} />`],
            ["Authentication", status.auth_enabled ? "on" : "off"],
            ["This tab's mode", status.mode],
          ]} />
        </article>
        <article class="card">
          <h2>Palace</h2>
          <${Facts} rows=${[
            ["Drawers", html`<strong class="big">${status.drawers ?? "—"}</strong>`],
            ["Directory", html`<code>${status.palace}</code>`],
            ["Datastore", status.store.mode],
            ["Migrations", status.migrations
              ? `${status.migrations.applied} of ${status.migrations.available} applied` +
                (status.migrations.pending ? `, ${status.migrations.pending} pending` : "")
              : "—"],
            ["Search indexes", status.search.state],
            ["Default embedding", status.embeddings.default_profile || "none"],
          ]} />
        </article>
        <article class="card">
          <h2>Jobs now</h2>
          <ul class="counts">
            ${["queued", "running", "paused"].map((name) => html`<li>
              <a href=${href("jobs", [], { status: name })}>
                <strong class="big">${status.jobs ? status.jobs[name] : "—"}</strong>
                <span>${name}</span>
              </a>
            </li>`)}
          </ul>
        </article>
      </div>
      <article class="card">
        <h2>The newest ${recent.jobs.length} jobs</h2>
        <${Outcomes} jobs=${recent.jobs} />
      </article>
    `}<//>
  <//>`;
}

function Outcomes({ jobs }) {
  const counts = Object.fromEntries(OUTCOMES.map((name) => [name, 0]));
  for (const job of jobs) counts[job.status] = (counts[job.status] || 0) + 1;
  const total = jobs.length || 1;
  return html`<div class="outcomes">
    <div class="bar" role="img" aria-label=${OUTCOMES.map((n) => `${counts[n]} ${n}`).join(", ")}>
      ${OUTCOMES.filter((n) => counts[n]).map((name) => html`<span
        class=${`segment status-${name}`} style=${{ width: `${(100 * counts[name]) / total}%` }}></span>`)}
    </div>
    <ul class="legend">
      ${OUTCOMES.map((name) => html`<li>
        <a href=${href("jobs", [], { status: name })}><span class=${`dot status-${name}`}></span>
          ${counts[name]} ${name}</a>
      </li>`)}
    </ul>
  </div>`;
}
