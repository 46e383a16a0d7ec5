// Search: every option of GET /api/search (ranking, scope, tags, source kind, profile, expand,
// and time: current, as of an instant, a window, or all of history), each hit with its score
// and the signals that made it.

import { get } from "../api.js";
import { href, navigate } from "../router.js";
import { Empty, Field, Loading, Page, Tags, Time, html, useResource } from "../ui.js";

const RANKINGS = ["auto", "lexical", "semantic", "hybrid"];
const SOURCE_KINDS = ["", "file", "manual", "transcript", "note", "other"];
const TEMPORAL = [
  ["current", "Valid now"],
  ["as_of", "As of an instant"],
  ["between", "At some time in a window"],
  ["all", "All of history"],
];

// The form's fields as the route keeps them, and the API query they make.
function query(params) {
  const temporal = params.get("temporal") || "current";
  const asked = {
    q: params.get("q"),
    ranking: params.get("ranking") || "auto",
    wing: params.get("wing"),
    room: params.get("room"),
    tags: (params.get("tags") || "").split(",").map((t) => t.trim()).filter(Boolean),
    source_kind: params.get("source_kind"),
    profile: params.get("profile"),
    limit: params.get("limit"),
    expand: params.get("expand") === "true" ? "true" : undefined,
  };
  if (temporal === "as_of") asked.as_of = instant(params.get("as_of"));
  if (temporal === "between") {
    asked.from = instant(params.get("from"));
    asked.until = instant(params.get("until"));
  }
  if (temporal === "all") asked.include_historical = "true";
  return asked;
}

// A datetime-local value is the browser's local time: sent as UTC.
function instant(value) {
  return value ? new Date(value).toISOString() : undefined;
}

export function Search({ route }) {
  const params = route.params;
  const asked = params.get("q");
  const temporal = params.get("temporal") || "current";
  const state = useResource(
    (signal) => (asked ? get("/search", query(params), signal) : Promise.resolve(null)),
    [params.toString()],
  );
  function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    form.expand = form.expand ? "true" : "";
    navigate("search", [], form);
  }
  const value = (name, fallback = "") => params.get(name) ?? fallback;
  return html`<${Page} title="Search">
    <form class="card search-form" onSubmit=${submit} key=${params.toString()}>
      <div class="row">
        <${Field} label="Query"><input name="q" type="search" required defaultValue=${value("q")} /><//>
        <${Field} label="Ranking">
          <select name="ranking">
            ${RANKINGS.map((r) => html`<option value=${r} selected=${r === value("ranking", "auto")}>${r}</option>`)}
          </select>
        <//>
        <${Field} label="Time">
          <select name="temporal" value=${temporal} onChange=${(event) => {
            const form = Object.fromEntries(new FormData(event.target.form));
            navigate("search", [], { ...form, q: form.q || params.get("q") || "", expand: form.expand ? "true" : "" });
          }}>
            ${TEMPORAL.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
          </select>
        <//>
      </div>
      ${temporal === "as_of" && html`<div class="row">
        <${Field} label="As of"><input name="as_of" type="datetime-local" step="1" required defaultValue=${value("as_of")} /><//>
      </div>`}
      ${temporal === "between" && html`<div class="row">
        <${Field} label="From"><input name="from" type="datetime-local" step="1" required defaultValue=${value("from")} /><//>
        <${Field} label="Until"><input name="until" type="datetime-local" step="1" required defaultValue=${value("until")} /><//>
      </div>`}
      <details open=${["wing", "room", "tags", "source_kind", "profile", "limit", "expand"].some((n) => params.get(n))}>
        <summary>Scope and options</summary>
        <div class="row">
          <${Field} label="Wing"><input name="wing" defaultValue=${value("wing")} /><//>
          <${Field} label="Room"><input name="room" defaultValue=${value("room")} /><//>
          <${Field} label="Tags" hint="comma-separated, all must match"><input name="tags" defaultValue=${value("tags")} /><//>
        </div>
        <div class="row">
          <${Field} label="Source kind">
            <select name="source_kind">
              ${SOURCE_KINDS.map((k) => html`<option value=${k} selected=${k === value("source_kind")}>${k || "any"}</option>`)}
            </select>
          <//>
          <${Field} label="Embedding profile" hint="the default when empty"><input name="profile" defaultValue=${value("profile")} /><//>
          <${Field} label="Limit"><input name="limit" type="number" min="0" max="200" defaultValue=${value("limit")} /><//>
        </div>
        <label class="check"><input type="checkbox" name="expand" value="true" defaultChecked=${value("expand") === "true"} />
          Expand through the knowledge graph (drawers sharing an entity with a hit)</label>
      </details>
      <button type="submit">Search</button>
    </form>
    ${asked && html`<${Loading} state=${state}>${(answer) => html`<${Results} answer=${answer} />`}<//>`}
  <//>`;
}

function Results({ answer }) {
  if (!answer) return null;
  return html`<section aria-label="Results">
    <p class="muted">${answer.results.length} hit${answer.results.length === 1 ? "" : "s"} ·
      ranking <strong data-testid="ranking">${answer.ranking}</strong>
      ${answer.profile && html` · profile ${answer.profile}`}</p>
    ${answer.results.length === 0
      ? html`<${Empty}>Nothing matched.<//>`
      : html`<ol class="hits">${answer.results.map((hit) => html`<li class="hit">
          <div class="hit-head">
            <a href=${href("palace", [hit.wing, hit.room, hit.id])}>${hit.name || `Drawer ${hit.id.slice(0, 8)}`}</a>
            <span class="score" title="comparable only within this answer">score ${hit.score.toFixed(4)}</span>
          </div>
          <pre class="verbatim small">${hit.content.length > 600 ? `${hit.content.slice(0, 600)}…` : hit.content}</pre>
          <div class="meta">
            <${Signals} signals=${hit.signals} />
            ${hit.via && html`<span class="signal">via ${hit.via.join(", ")}</span>`}
            <span><${Time} value=${hit.valid_from} /> → ${hit.valid_to ? html`<${Time} value=${hit.valid_to} />` : "now"}</span>
            <${Tags} tags=${hit.tags} />
          </div>
        </li>`)}</ol>`}
  </section>`;
}

function Signals({ signals }) {
  if (!signals) return html`<span class="muted">no signal</span>`;
  const shown = [];
  for (const name of ["lexical", "semantic", "graph"]) {
    if (signals[name] !== undefined) {
      shown.push(html`<span class="signal">${name} ${Number(signals[name]).toFixed(3)}</span>`);
    }
  }
  if (signals.preference) {
    const pref = signals.preference;
    shown.push(html`<span class="signal">preference ${pref.level}${pref.source ? ` (${pref.source})` : ""}</span>`);
  }
  return shown;
}
