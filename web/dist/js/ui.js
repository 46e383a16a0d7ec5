// What every page is built from: the page frame with its Refresh button, the error box that
// shows an API failure with its help, the resource hook that reads again on every change, and
// small pieces (times, tags, progress bars, write buttons that read-only mode disables).

import { h, createContext } from "preact";
import { useContext, useEffect, useState, useCallback, useRef } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);

// `version` moves on at every change notice and every Refresh; `refresh` moves it by hand.
export const Changes = createContext({ version: 0, refresh: () => {} });
// The tab's memory mode, so write controls follow the selector at once.
export const ModeContext = createContext("full");

export function useReadOnly() {
  return useContext(ModeContext) === "read_only";
}

// Reads `load(signal)` now, again whenever the palace changes or deps change. The previous
// answer stays on screen while a new one is read, so a live page does not flicker.
export function useResource(load, deps = []) {
  const { version } = useContext(Changes);
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const controller = new AbortController();
    setState((old) => ({ ...old, loading: true }));
    loadRef.current(controller.signal).then(
      (data) => controller.signal.aborted || setState({ data, error: null, loading: false }),
      (error) => {
        if (!controller.signal.aborted) setState((old) => ({ ...old, error, loading: false }));
      },
    );
    return () => controller.abort();
  }, [version, ...deps]);
  return state;
}

// Runs an action (a POST), keeping its error and answer for the page to show.
export function useAction() {
  const [state, setState] = useState({ busy: false, error: null, answer: null });
  const { refresh } = useContext(Changes);
  const run = useCallback(async (action) => {
    setState({ busy: true, error: null, answer: null });
    try {
      const answer = await action();
      setState({ busy: false, error: null, answer });
      refresh();
      return answer;
    } catch (error) {
      setState({ busy: false, error, answer: null });
      return null;
    }
  }, []);
  return [state, run];
}

export function Page({ title, intro, children, actions }) {
  const { refresh } = useContext(Changes);
  useEffect(() => {
    document.title = `${title} · MemCastle`;
  }, [title]);
  return html`<section class="page" aria-labelledby="page-title">
    <header class="page-head">
      <h1 id="page-title" tabindex="-1">${title}</h1>
      <div class="page-actions">
        ${actions}
        <button type="button" class="secondary" onClick=${refresh} title="Read this page again">
          Refresh
        </button>
      </div>
    </header>
    ${intro && html`<p class="intro">${intro}</p>`}
    ${children}
  </section>`;
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <strong>${error.message}</strong>
    ${error.help && html`<p class="help">${error.help}</p>`}
    ${error.code && html`<code class="code">${error.code}</code>`}
  </div>`;
}

// A resource's error, or a placeholder while it is first read.
export function Loading({ state, children }) {
  if (state.error && !state.data) return html`<${ErrorBox} error=${state.error} />`;
  if (!state.data) return html`<p class="muted" aria-busy="true">Loading…</p>`;
  return html`${state.error && html`<${ErrorBox} error=${state.error} />`}${children(state.data)}`;
}

// A button that writes: disabled, with the reason, in read-only mode.
export function WriteButton({ children, disabled, title, ...props }) {
  const readOnly = useReadOnly();
  return html`<button
    type="button"
    data-write=""
    ...${props}
    disabled=${readOnly || disabled}
    title=${readOnly ? "Read-only mode: switch to full to change anything" : title}
  >
    ${children}
  </button>`;
}

export function Time({ value }) {
  if (!value) return html`<span class="muted">—</span>`;
  const date = new Date(value);
  return html`<time datetime=${value} title=${value}>${date.toLocaleString()}</time>`;
}

export function Tags({ tags }) {
  if (!tags || !tags.length) return null;
  return html`<span class="tags">${tags.map((tag) => html`<span class="tag">${tag}</span>`)}</span>`;
}

export function Status({ value }) {
  return html`<span class=${`status status-${value}`}>${value}</span>`;
}

export function ProgressBar({ progress, status }) {
  const current = progress?.current ?? 0;
  const total = progress?.total;
  const label = total ? `${current} of ${total}` : `${current}`;
  return html`<div class="progress">
    ${total
      ? html`<progress max=${total} value=${current} aria-label=${`progress ${label}`}></progress>`
      : html`<progress aria-label="progress" value=${status === "completed" ? 1 : undefined}></progress>`}
    <span class="progress-text">${label}${progress?.message ? ` · ${progress.message}` : ""}</span>
  </div>`;
}

export function Json({ value }) {
  return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
}

export function Field({ label, children, hint }) {
  return html`<label class="field"><span class="label">${label}</span>${children}
    ${hint && html`<span class="hint">${hint}</span>`}</label>`;
}

// `[["label", value], ...]` as a definition list; empty values are left out.
export function Facts({ rows }) {
  return html`<dl class="facts">
    ${rows
      .filter(([, value]) => value !== undefined && value !== null && value !== "")
      .map(([label, value]) => html`<dt>${label}</dt><dd>${value}</dd>`)}
  </dl>`;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}
