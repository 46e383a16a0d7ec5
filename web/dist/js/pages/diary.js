// Diary: an agent's entries in a wing, newest first, and a new entry written by hand.

import { useState } from "preact/hooks";
import { get, post } from "../api.js";
import { navigate } from "../router.js";
import {
  Empty, ErrorBox, Field, Loading, Page, Tags, Time, WriteButton, html, useAction, useReadOnly,
  useResource,
} from "../ui.js";

export function Diary({ route }) {
  const agent = route.params.get("agent") || "";
  const wing = route.params.get("wing") || "";
  const state = useResource(
    (signal) => (agent ? get("/diary", { agent_identity: agent, wing, limit: 50 }, signal) : Promise.resolve(null)),
    [agent, wing],
  );
  function submit(event) {
    event.preventDefault();
    navigate("diary", [], Object.fromEntries(new FormData(event.target)));
  }
  return html`<${Page} title="Diary" intro="What an agent wrote down for itself, read back by its identity.">
    <form class="card row" onSubmit=${submit} key=${`${agent}|${wing}`}>
      <${Field} label="Agent identity"><input name="agent" required defaultValue=${agent} /><//>
      <${Field} label="Wing" hint="empty for every wing"><input name="wing" defaultValue=${wing} /><//>
      <button type="submit">Read</button>
    </form>
    ${agent && html`<${Loading} state=${state}>${(diary) => diary && (diary.entries.length === 0
      ? html`<${Empty}>No diary entry for ${agent}${wing && ` in ${wing}`}.<//>`
      : html`<ol class="hits">${diary.entries.map((entry) => html`<li class="hit">
          <div class="meta"><${Time} value=${entry.created_at} /> <${Tags} tags=${entry.tags} /></div>
          <pre class="verbatim small">${entry.content}</pre>
        </li>`)}</ol>`)}<//>`}
    ${agent && html`<${Write} agent=${agent} wing=${wing} />`}
  <//>`;
}

function Write({ agent, wing }) {
  const readOnly = useReadOnly();
  const [action, run] = useAction();
  const [content, setContent] = useState("");
  async function submit(event) {
    event.preventDefault();
    const into = new FormData(event.target).get("wing");
    const body = { agent_identity: agent, wing: into, content, requested_by: "web" };
    if (await run(() => post("/diary", body))) setContent("");
  }
  return html`<form class="card" onSubmit=${submit}>
    <h2>Write an entry as ${agent}</h2>
    <fieldset disabled=${readOnly}>
      <${Field} label="Into wing" hint="the entry is filed in this wing's diary room">
        <input name="wing" required defaultValue=${wing} />
      <//>
      <${Field} label="Entry"><textarea rows="3" required value=${content}
        onInput=${(event) => setContent(event.target.value)}></textarea><//>
      <${WriteButton} type="submit" disabled=${action.busy}>Write<//>
    </fieldset>
    <${ErrorBox} error=${action.error} />
  </form>`;
}
