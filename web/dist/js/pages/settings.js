// Settings: the configuration the daemon runs with (GET /api/config), section by section as the
// file names them; a secret is never sent, only whether it is set. Changing a setting means
// editing the file (or the environment) and restarting the daemon.

import { get } from "../api.js";
import { Facts, Loading, Page, html, useResource } from "../ui.js";

export function Settings() {
  const state = useResource((signal) => get("/config", {}, signal));
  return html`<${Page} title="Settings" intro="What the daemon runs with: the defaults, its configuration file, its environment and its flags, merged. Change them in the file and restart.">
    <${Loading} state=${state}>${(config) => html`
      <div class="cards">
        <article class="card">
          <h2>Where it comes from</h2>
          <${Facts} rows=${[
            ["Configuration file", config.config_file ? html`<code>${config.config_file}</code>` : "none (defaults, environment and flags)"],
            ["Dashboard files", html`<code>${config.assets.dashboard}</code>`],
            ["Bundled sources", html`<code>${config.assets.bundled_sources}</code>`],
          ]} />
        </article>
        <article class="card">
          <h2>Secrets</h2>
          <${Facts} rows=${Object.entries(config.secrets).map(([key, set]) => [
            html`<code>${key}</code>`, set ? "set (never shown)" : html`<span class="muted">not set</span>`,
          ])} />
        </article>
      </div>
      <div class="cards">${Object.entries(config.settings).map(([section, values]) => html`
        <article class="card" data-section=${section}>
          <h2>[${section}]</h2>
          <${Facts} rows=${Object.entries(values).map(([key, value]) => [html`<code>${key}</code>`, shown(value)])} />
        </article>`)}
      </div>`}<//>
  <//>`;
}

function shown(value) {
  if (value === null) return html`<span class="muted">not set</span>`;
  if (typeof value === "object") return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
  return String(value);
}
