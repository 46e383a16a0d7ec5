// The dashboard's shell: sign-in when the daemon asks for a token, then the navigation, the
// memory-mode selector, the live-updates badge and the current page.

import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, MODES, onSession, session } from "./api.js";
import { createLive } from "./live.js";
import { useRoute } from "./router.js";
import { Changes, ErrorBox, ModeContext, html } from "./ui.js";
import { Overview } from "./pages/overview.js";
import { DrawerPage, Palace } from "./pages/palace.js";
import { Search } from "./pages/search.js";
import { Graph } from "./pages/graph.js";
import { Diary } from "./pages/diary.js";
import { Jobs } from "./pages/jobs.js";
import { Launch } from "./pages/launch.js";
import { Triggers } from "./pages/triggers.js";
import { Maintenance } from "./pages/maintenance.js";
import { Settings } from "./pages/settings.js";

const PAGES = [
  ["overview", "Overview", Overview],
  ["palace", "Palace", Palace],
  ["search", "Search", Search],
  ["graph", "Graph", Graph],
  ["diary", "Diary", Diary],
  ["jobs", "Jobs", Jobs],
  ["launch", "Launch", Launch],
  ["triggers", "Triggers", Triggers],
  ["maintenance", "Maintenance", Maintenance],
  ["settings", "Settings", Settings],
];
// Pages reached by a link, not from the navigation.
const HIDDEN = { drawer: DrawerPage };

const BADGES = {
  live: ["Live", "Updates arrive as they happen; click to stop them"],
  connecting: ["Connecting", "Opening the event stream; click to stop trying"],
  manual: ["Manual", "Live updates are off: use Refresh, or click to turn them on"],
};

function App() {
  // checking → signin | in; `authEnabled` says whether Sign out means anything.
  const [auth, setAuth] = useState({ state: "checking", enabled: false, refused: null });
  const [mode, setMode] = useState(session.mode);
  const [version, setVersion] = useState(0);
  const [liveState, setLiveState] = useState("connecting");
  const live = useMemo(
    () => createLive({ onChange: () => setVersion((v) => v + 1), onState: setLiveState }),
    [],
  );

  async function check() {
    try {
      const status = await api("GET", "/status");
      setAuth({ state: "in", enabled: status.auth_enabled, refused: null });
    } catch (error) {
      if (error.status === 401) setAuth({ state: "signin", enabled: true, refused: null });
      else setAuth({ state: "in", enabled: false, refused: error });
    }
  }

  useEffect(() => {
    check();
    return onSession((what) => {
      if (what === "signed-out") {
        live.stop();
        setAuth((old) => ({ state: "signin", enabled: true, refused: old.state === "in" ? "expired" : null }));
      } else if (what === "mode") {
        setMode(session.mode);
        setVersion((v) => v + 1);
        if (live.state !== "manual") live.start();
      }
    });
  }, []);

  useEffect(() => {
    if (auth.state === "in") live.start();
    return () => live.stop();
  }, [auth.state]);

  if (auth.state === "checking") return html`<p class="boot">Connecting to MemCastle…</p>`;
  if (auth.state === "signin") {
    return html`<${SignIn} expired=${auth.refused === "expired"} onIn=${check} />`;
  }
  const changes = { version, refresh: () => setVersion((v) => v + 1) };
  return html`<${ModeContext.Provider} value=${mode}>
    <${Changes.Provider} value=${changes}>
      <${Shell} mode=${mode} live=${live} liveState=${liveState} authEnabled=${auth.enabled}
        startError=${auth.refused} />
    <//>
  <//>`;
}

function Shell({ mode, live, liveState, authEnabled, startError }) {
  const route = useRoute();
  const [menuOpen, setMenuOpen] = useState(false);
  const current = PAGES.find(([name]) => name === route.page) ||
    (HIDDEN[route.page] ? [route.page, "", HIDDEN[route.page]] : PAGES[0]);
  const Current = current[2];
  const [label, explanation] = BADGES[liveState];
  useEffect(() => setMenuOpen(false), [route.page]);
  return html`<div class="shell">
    <a class="skip" href="#main" onClick=${(event) => {
      event.preventDefault();
      document.getElementById("page-title")?.focus();
    }}>Skip to content</a>
    <header class="top">
      <a class="brand" href="#/overview" aria-label="MemCastle overview">
        <img src="/ui/icon.svg" alt="" width="24" height="24" /> MemCastle
      </a>
      <button type="button" class="menu secondary" aria-expanded=${menuOpen} aria-controls="nav"
        onClick=${() => setMenuOpen(!menuOpen)}>Menu</button>
      <div class="controls">
        <label class="mode">
          <span>Mode</span>
          <select value=${mode} onChange=${(event) => session.setMode(event.target.value)}
            aria-label="Memory mode">
            ${MODES.map((each) => html`<option value=${each}>${each === "full" ? "Full" : "Read-only"}</option>`)}
          </select>
        </label>
        <button type="button" class=${`badge badge-${liveState}`} onClick=${() => live.toggle()}
          title=${explanation} aria-label=${`Live updates: ${label}. ${explanation}`}>
          ${label}
        </button>
        ${authEnabled && html`<button type="button" class="secondary" onClick=${() => session.signOut()}>
          Sign out
        </button>`}
      </div>
      <nav id="nav" class=${menuOpen ? "open" : ""} aria-label="Pages">
        ${PAGES.map(([name, title]) => html`<a href=${`#/${name}`}
          aria-current=${name === current[0] ? "page" : undefined}>${title}</a>`)}
      </nav>
    </header>
    <main id="main">
      ${mode === "read_only" && html`<p class="notice">Read-only mode: every write control is disabled.</p>`}
      ${startError && startError !== "expired" && html`<${ErrorBox} error=${startError} />`}
      <${Current} route=${route} />
    </main>
  </div>`;
}

function SignIn({ expired, onIn }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    const token = new FormData(event.target).get("password").trim().replace(/^Bearer\s+/i, "");
    setBusy(true);
    session.signIn(token);
    try {
      await api("GET", "/status");
      setError(null);
      onIn();
    } catch (failure) {
      session.signOut();
      setError(failure);
      setBusy(false);
    }
  }
  return html`<main class="signin">
    <form onSubmit=${submit} aria-labelledby="signin-title">
      <h1 id="signin-title"><img src="/ui/icon.svg" alt="" width="32" height="32" /> MemCastle</h1>
      <p>This daemon asks for its API token.</p>
      ${expired && !error && html`<p class="notice">The daemon refused the token: sign in again.</p>`}
      <label class="field"><span class="label">User</span>
        <input name="username" value="memcastle" readonly autocomplete="username" />
      </label>
      <label class="field"><span class="label">Password (the API token)</span>
        <input name="password" type="password" required autocomplete="current-password" autofocus />
      </label>
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Sign in</button>
      <p class="hint">The token is kept in this tab only, and forgotten when you sign out or close it.</p>
    </form>
  </main>`;
}

render(html`<${App} />`, document.getElementById("app"));
