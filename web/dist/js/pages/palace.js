// Palace: wings, their rooms, a room's drawers (a page at a time), and one drawer verbatim with
// its source, validity, history and likely copies. Filing and correcting a drawer are the
// page's writes.

import { useState } from "preact/hooks";
import { get, post } from "../api.js";
import { href, navigate } from "../router.js";
import {
  Empty, ErrorBox, Facts, Field, Json, Loading, Page, Tags, Time, WriteButton, html,
  useAction, useReadOnly, useResource,
} from "../ui.js";

const PAGE_SIZE = 50;
const path = (...parts) => parts.map(encodeURIComponent).join("/");

export function Palace({ route }) {
  const [wing, room, drawer] = route.parts;
  if (drawer) return html`<${DrawerView} wing=${wing} room=${room} id=${drawer} />`;
  if (room) return html`<${RoomView} wing=${wing} room=${room} offset=${Number(route.params.get("offset") || 0)} />`;
  if (wing) return html`<${WingView} wing=${wing} />`;
  return html`<${Wings} />`;
}

// `#/drawer/<id>`: a drawer known only by its id (a graph fact's evidence).
export function DrawerPage({ route }) {
  return html`<${DrawerView} id=${route.parts[0]} />`;
}

function Trail({ wing, room, drawer }) {
  return html`<nav class="trail" aria-label="Where you are">
    <a href=${href("palace")}>Palace</a>
    ${wing && html` / <a href=${href("palace", [wing])}>${wing}</a>`}
    ${room && html` / <a href=${href("palace", [wing, room])}>${room}</a>`}
    ${drawer && html` / <span>${drawer}</span>`}
  </nav>`;
}

function Wings() {
  const state = useResource((signal) => get("/wings", {}, signal));
  return html`<${Page} title="Palace" intro="Wings hold rooms, rooms hold drawers: verbatim memories, superseded, never rewritten.">
    <${Loading} state=${state}>${({ wings }) => wings.length === 0
      ? html`<${Empty}>The palace is empty: file a drawer, or mine a directory from Launch.<//>`
      : html`<div class="table-wrap"><table>
          <thead><tr><th>Wing</th><th class="num">Rooms</th><th class="num">Drawers</th><th>Created</th></tr></thead>
          <tbody>${wings.map((wing) => html`<tr>
            <td><a href=${href("palace", [wing.name])}>${wing.name}</a>
              ${wing.description && html`<div class="muted">${wing.description}</div>`}</td>
            <td class="num">${wing.counts.rooms}</td>
            <td class="num">${wing.counts.drawers}</td>
            <td><${Time} value=${wing.created_at} /></td>
          </tr>`)}</tbody>
        </table></div>`}<//>
  <//>`;
}

function WingView({ wing }) {
  const state = useResource((signal) => get(`/wings/${path(wing)}/rooms`, {}, signal), [wing]);
  return html`<${Page} title=${`Wing ${wing}`}>
    <${Trail} wing=${wing} />
    <${Loading} state=${state}>${({ rooms }) => rooms.length === 0
      ? html`<${Empty}>This wing has no rooms yet.<//>`
      : html`<div class="table-wrap"><table>
          <thead><tr><th>Room</th><th class="num">Drawers</th><th>Created</th></tr></thead>
          <tbody>${rooms.map((room) => html`<tr>
            <td><a href=${href("palace", [wing, room.name])}>${room.name}</a>
              ${room.description && html`<div class="muted">${room.description}</div>`}</td>
            <td class="num">${room.counts.drawers}</td>
            <td><${Time} value=${room.created_at} /></td>
          </tr>`)}</tbody>
        </table></div>`}<//>
  <//>`;
}

function RoomView({ wing, room, offset }) {
  const state = useResource(
    (signal) => get(`/wings/${path(wing)}/rooms/${path(room)}/drawers`, { limit: PAGE_SIZE, offset }, signal),
    [wing, room, offset],
  );
  return html`<${Page} title=${`Room ${room}`}>
    <${Trail} wing=${wing} room=${room} />
    <${Loading} state=${state}>${(list) => html`
      ${list.drawers.length === 0
        ? html`<${Empty}>No drawer in this room.<//>`
        : html`<ul class="drawers">${list.drawers.map((drawer) => html`<li class=${drawer.valid_to ? "closed" : ""}>
            <a href=${href("palace", [wing, room, drawer.id])}>
              <span class="drawer-name">${drawer.name || `Drawer ${drawer.id.slice(0, 8)}`}</span>
            </a>
            <p class="preview">${drawer.preview}</p>
            <div class="meta">
              <span>${drawer.source.kind}</span> · <span>${drawer.length} characters</span> ·
              <span>from <${Time} value=${drawer.valid_from} /></span>
              ${drawer.valid_to && html` · <span class="bad">until <${Time} value=${drawer.valid_to} /></span>`}
              <${Tags} tags=${drawer.tags} />
            </div>
          </li>`)}</ul>`}
      <${Pager} wing=${wing} room=${room} offset=${offset} total=${list.total} />
    `}<//>
    <${FileDrawer} wing=${wing} room=${room} />
  <//>`;
}

function Pager({ wing, room, offset, total }) {
  if (total <= PAGE_SIZE) return html`<p class="muted">${total} drawer${total === 1 ? "" : "s"}</p>`;
  const last = Math.min(offset + PAGE_SIZE, total);
  return html`<div class="pager">
    <button type="button" class="secondary" disabled=${offset === 0}
      onClick=${() => navigate("palace", [wing, room], { offset: Math.max(0, offset - PAGE_SIZE) })}>Previous</button>
    <span>${offset + 1}–${last} of ${total}</span>
    <button type="button" class="secondary" disabled=${last >= total}
      onClick=${() => navigate("palace", [wing, room], { offset: offset + PAGE_SIZE })}>Next</button>
  </div>`;
}

function FileDrawer({ wing, room }) {
  const readOnly = useReadOnly();
  const [action, run] = useAction();
  const [content, setContent] = useState("");
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    const tags = String(form.get("tags") || "").split(",").map((t) => t.trim()).filter(Boolean);
    const body = { content, tags, requested_by: "web" };
    if (form.get("name")) body.name = form.get("name");
    const filed = await run(() => post(`/wings/${path(wing)}/rooms/${path(room)}/drawers`, body));
    if (filed) setContent("");
  }
  return html`<details class="card">
    <summary>File a drawer here</summary>
    <form onSubmit=${submit}>
      <fieldset disabled=${readOnly}>
        <${Field} label="Content"><textarea name="content" rows="4" required value=${content}
          onInput=${(event) => setContent(event.target.value)}></textarea><//>
        <div class="row">
          <${Field} label="Name" hint="optional, unique in the room"><input name="name" /><//>
          <${Field} label="Tags" hint="comma-separated"><input name="tags" /><//>
        </div>
        <${WriteButton} type="submit" disabled=${action.busy}>File<//>
      </fieldset>
      <${ErrorBox} error=${action.error} />
      ${action.answer && html`<p class="ok">${action.answer.created ? "Filed" : "Already there"}: ${action.answer.id}</p>`}
    </form>
  </details>`;
}

function DrawerView({ wing, room, id }) {
  const state = useResource(async (signal) => {
    const [drawer, history, duplicates] = await Promise.all([
      get(`/drawers/${path(id)}`, {}, signal),
      get(`/drawers/${path(id)}/history`, {}, signal),
      get(`/drawers/${path(id)}/duplicates`, {}, signal),
    ]);
    return { drawer, history, duplicates };
  }, [id]);
  const shown = state.data?.drawer;
  wing = wing || shown?.wing;
  room = room || shown?.room;
  return html`<${Page} title=${shown?.name || "Drawer"}>
    <${Trail} wing=${wing} room=${room} drawer=${id} />
    <${Loading} state=${state}>${({ drawer, history, duplicates }) => html`
      <article class="card">
        <h2>Content</h2>
        <pre class="verbatim" data-testid="drawer-content">${drawer.content}</pre>
        <${Tags} tags=${drawer.tags} />
      </article>
      <div class="cards">
        <article class="card">
          <h2>Source</h2>
          <${Facts} rows=${[
            ["Kind", drawer.source.kind],
            ["URI", drawer.source.uri && html`<code>${drawer.source.uri}</code>`],
            ["Agent", drawer.source.agent],
            ["Filed through", drawer.provenance.requested_by],
            ["By job", drawer.provenance.job_id && html`<a href=${href("jobs", [drawer.provenance.job_id])}>${drawer.provenance.job_id}</a>`],
          ]} />
          ${drawer.source.origin && html`<h3>Document</h3><${Json} value=${drawer.source.origin} />`}
        </article>
        <article class="card">
          <h2>Validity</h2>
          <${Facts} rows=${[
            ["Valid from", html`<${Time} value=${drawer.valid_from} />`],
            ["Valid until", drawer.valid_to ? html`<${Time} value=${drawer.valid_to} />` : "still valid"],
            ["Supersedes", drawer.supersedes && html`<a href=${href("palace", [wing, room, drawer.supersedes])}>${drawer.supersedes}</a>`],
            ["Superseded by", drawer.superseded_by && html`<a href=${href("palace", [wing, room, drawer.superseded_by])}>${drawer.superseded_by}</a>`],
            ["Recorded", html`<${Time} value=${drawer.created_at} />`],
            ["Id", html`<code>${drawer.id}</code>`],
          ]} />
        </article>
      </div>
      <article class="card">
        <h2>History (${history.versions.length} version${history.versions.length === 1 ? "" : "s"})</h2>
        <ol class="history">${history.versions.map((version) => html`<li class=${version.id === drawer.id ? "current" : ""}>
          <div class="meta"><${Time} value=${version.valid_from} /> → ${version.valid_to ? html`<${Time} value=${version.valid_to} />` : "now"}
            ${version.id !== drawer.id && html` · <a href=${href("palace", [wing, room, version.id])}>open</a>`}</div>
          <pre class="verbatim small">${version.content}</pre>
        </li>`)}</ol>
      </article>
      <article class="card">
        <h2>Likely copies</h2>
        ${duplicates.similar.length === 0
          ? html`<${Empty}>No drawer is linked to this one as a likely copy.<//>`
          : html`<ul class="drawers">${duplicates.similar.map((each) => html`<li>
              <a href=${href("palace", [wing, room, each.drawer.id])}>${each.drawer.name || each.drawer.id}</a>
              <span class="muted"> ${each.kind}, similarity ${each.similarity.toFixed(3)}, ${each.side}</span>
              <p class="preview">${each.drawer.content.slice(0, 200)}</p>
            </li>`)}</ul>`}
      </article>
      ${!drawer.valid_to && html`<${Supersede} drawer=${drawer} />`}
    `}<//>
  <//>`;
}

function Supersede({ drawer }) {
  const readOnly = useReadOnly();
  const [action, run] = useAction();
  async function submit(event) {
    event.preventDefault();
    const content = new FormData(event.target).get("content");
    const body = content ? { content, requested_by: "web" } : { requested_by: "web" };
    await run(() => post(`/drawers/${encodeURIComponent(drawer.id)}/supersede`, body));
  }
  return html`<details class="card">
    <summary>Correct this drawer</summary>
    <form onSubmit=${submit}>
      <fieldset disabled=${readOnly}>
        <${Field} label="Replacement" hint="leave empty to only invalidate it; the old content is kept">
          <textarea name="content" rows="3"></textarea>
        <//>
        <${WriteButton} type="submit" disabled=${action.busy}>Supersede<//>
      </fieldset>
      <${ErrorBox} error=${action.error} />
      ${action.answer && html`<p class="ok">Superseded.</p>`}
    </form>
  </details>`;
}
