// Graph: the knowledge graph at a glance, or an entity's neighbourhood (1 to 3 hops) drawn as
// a graph, each fact with where it was read from, and the drawers that mention the entity.

import { get } from "../api.js";
import { href, navigate } from "../router.js";
import { Empty, Facts, Field, Loading, Page, Time, html, useResource } from "../ui.js";

const SIZE = 560;
const RING = 105;

export function Graph({ route }) {
  const entity = route.params.get("entity");
  const depth = route.params.get("depth") || "1";
  return html`<${Page} title="Graph">
    <${Finder} find=${route.params.get("find")} />
    ${entity ? html`<${Neighbourhood} entity=${entity} depth=${depth} />` : html`<${AtAGlance} />`}
  <//>`;
}

function Finder({ find }) {
  function submit(event) {
    event.preventDefault();
    const name = new FormData(event.target).get("name");
    navigate("graph", [], { find: name });
  }
  const state = useResource((signal) => (find ? get("/entities", { name: find, limit: 50 }, signal) : Promise.resolve(null)), [find]);
  return html`<form class="card row" onSubmit=${submit} role="search">
      <${Field} label="Find an entity"><input name="name" type="search" required defaultValue=${find || ""} /><//>
      <button type="submit">Find</button>
    </form>
    ${find && html`<${Loading} state=${state}>${(answer) => answer && (answer.entities.length === 0
      ? html`<${Empty}>No entity is named like “${find}”.<//>`
      : html`<ul class="chips">${answer.entities.map((e) => html`<li>
          <a class="chip" href=${href("graph", [], { entity: e.id })}>${e.name} <span class="muted">${e.kind}</span></a>
        </li>`)}</ul>`)}<//>`}`;
}

function AtAGlance() {
  const state = useResource((signal) => get("/graph", {}, signal));
  return html`<${Loading} state=${state}>${(graph) => html`
    <div class="cards">
      <article class="card"><h2>Counts</h2>
        <${Facts} rows=${Object.entries(graph.counts).map(([name, count]) => [name.replace("_", " "), count])} />
      </article>
      <article class="card"><h2>Most related entities</h2>
        ${graph.top.length === 0
          ? html`<${Empty}>The graph is empty: it is read from drawers by the extract job, or written by checkpoint facts.<//>`
          : html`<ul class="chips">${graph.top.map((e) => html`<li>
              <a class="chip" href=${href("graph", [], { entity: e.id })}>${e.name}
                <span class="muted">${e.kind}, ${e.relationships}</span></a>
            </li>`)}</ul>`}
      </article>
    </div>`}<//>`;
}

function Neighbourhood({ entity, depth }) {
  const state = useResource(async (signal) => {
    const [graph, mentions] = await Promise.all([
      get("/graph", { entity, depth }, signal),
      get(`/entities/${encodeURIComponent(entity)}/mentions`, { limit: 50 }, signal),
    ]);
    return { graph, mentions };
  }, [entity, depth]);
  return html`<${Loading} state=${state}>${({ graph, mentions }) => {
    const names = Object.fromEntries([graph.entity, ...graph.entities].map((e) => [e.id, e.name]));
    return html`
      <article class="card">
        <div class="graph-head">
          <h2>${graph.entity.name} <span class="muted">${graph.entity.kind}</span></h2>
          <label class="inline">Depth
            <select value=${depth} onChange=${(event) => navigate("graph", [], { entity, depth: event.target.value })}>
              ${["1", "2", "3"].map((d) => html`<option value=${d}>${d}</option>`)}
            </select>
          </label>
        </div>
        ${graph.entity.aliases.length > 0 && html`<p class="muted">Also written ${graph.entity.aliases.join(", ")}</p>`}
        <${Drawing} graph=${graph} />
        ${graph.truncated && html`<p class="muted">The neighbourhood was cut to the first entities found.</p>`}
      </article>
      <article class="card">
        <h2>Facts (${graph.relationships.length})</h2>
        ${graph.relationships.length === 0
          ? html`<${Empty}>No fact relates this entity yet.<//>`
          : html`<div class="table-wrap"><table class="facts-table">
              <thead><tr><th>Fact</th><th>State</th><th class="num">Confidence</th><th>Valid</th><th>Read from</th></tr></thead>
              <tbody>${graph.relationships.map((fact) => html`<tr>
                <td>${names[fact.from] || fact.from} <em>${fact.predicate.replace("_", " ")}</em> ${names[fact.to] || fact.to}</td>
                <td>${fact.lifecycle.state}</td>
                <td class="num">${fact.confidence.toFixed(2)}</td>
                <td><${Time} value=${fact.valid_from} />${fact.valid_to && html` → <${Time} value=${fact.valid_to} />`}</td>
                <td><${Provenance} fact=${fact} /></td>
              </tr>`)}</tbody>
            </table></div>`}
      </article>
      <article class="card">
        <h2>Mentioned in</h2>
        ${mentions.mentions.length === 0
          ? html`<${Empty}>No drawer mentions it.<//>`
          : html`<ul class="drawers">${mentions.mentions.map((m) => html`<li>
              <a href=${href("drawer", [m.drawer.id])}>${m.drawer.name || m.drawer.id}</a>
              <span class="muted"> as “${m.observation.name}” (${m.observation.rule}, ${m.observation.confidence})</span>
              <p class="preview">${m.drawer.preview}</p>
            </li>`)}</ul>`}
      </article>`;
  }}<//>`;
}

function Provenance({ fact }) {
  if (fact.provenance) {
    const p = fact.provenance;
    return html`<a href=${href("drawer", [p.drawer])}>drawer</a> by ${p.extractor}
      ${p.origin?.document && html` · ${p.origin.document}`}
      ${p.job_id && html` · <a href=${href("jobs", [p.job_id])}>job</a>`}`;
  }
  if (fact.assertion) return html`asserted in <a href=${href("drawer", [fact.assertion])}>a checkpoint</a>`;
  return html`<span class="muted">asserted directly</span>`;
}

// The centre in the middle, each hop on a ring around it; a node is a link to its own
// neighbourhood, so the drawing is walked with the keyboard as well as the mouse.
function Drawing({ graph }) {
  const centre = SIZE / 2;
  const place = { [graph.entity.id]: { x: centre, y: centre, entity: graph.entity, distance: 0 } };
  const rings = {};
  for (const entity of graph.entities) {
    if (entity.id === graph.entity.id) continue;
    (rings[entity.distance] ||= []).push(entity);
  }
  for (const [distance, members] of Object.entries(rings)) {
    members.sort((a, b) => a.name.localeCompare(b.name));
    members.forEach((entity, index) => {
      const angle = (2 * Math.PI * index) / members.length - Math.PI / 2 + Number(distance) * 0.4;
      const radius = RING * Number(distance);
      place[entity.id] = {
        x: centre + radius * Math.cos(angle),
        y: centre + radius * Math.sin(angle),
        entity,
        distance: Number(distance),
      };
    });
  }
  const nodes = Object.values(place);
  const edges = graph.relationships.filter((fact) => place[fact.from] && place[fact.to]);
  // The drawing is as large as its outer ring, plus room for the names.
  const extent = RING * Math.max(1, ...nodes.map((node) => node.distance)) + 60;
  const box = `${centre - extent} ${centre - extent} ${2 * extent} ${2 * extent}`;
  return html`<svg class="graph" viewBox=${box} role="img"
      aria-label=${`${graph.entity.name} and ${nodes.length - 1} related entities`}>
    <defs>
      <marker id="arrow" viewBox="0 0 10 10" refX="20" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
        <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
      </marker>
    </defs>
    ${edges.map((fact) => {
      const a = place[fact.from];
      const b = place[fact.to];
      return html`<g class=${`edge state-${fact.lifecycle.state}`}>
        <line x1=${a.x} y1=${a.y} x2=${b.x} y2=${b.y} marker-end="url(#arrow)" />
        <text x=${(a.x + b.x) / 2} y=${(a.y + b.y) / 2 - 4} text-anchor="middle">${fact.predicate.replace("_", " ")}</text>
      </g>`;
    })}
    ${nodes.map((node) => html`<a href=${href("graph", [], { entity: node.entity.id })} class=${`node kind-${node.entity.kind} distance-${node.distance}`}>
      <title>${node.entity.name} (${node.entity.kind})</title>
      <circle cx=${node.x} cy=${node.y} r=${node.distance === 0 ? 16 : 11} />
      <text x=${node.x} y=${node.y + (node.distance === 0 ? 32 : 26)} text-anchor="middle">${node.entity.name}</text>
    </a>`)}
  </svg>`;
}
