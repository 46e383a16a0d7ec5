// The one way the dashboard reaches the daemon: `/api` on the page's own origin, with the tab's
// token and memory mode. Every failure becomes an ApiError carrying the daemon's
// {error, code, help}, so every page can show what went wrong and what to do about it.

const TOKEN_KEY = "memcastle.token";
const MODE_KEY = "memcastle.mode";
export const MODES = ["full", "read_only"];

const listeners = new Set();

// The session of this tab: sessionStorage, so closing the tab forgets the token.
export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  },
  get mode() {
    const mode = sessionStorage.getItem(MODE_KEY);
    return MODES.includes(mode) ? mode : "full";
  },
  get readOnly() {
    return this.mode === "read_only";
  },
  signIn(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    notify("signed-in");
  },
  signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    notify("signed-out");
  },
  setMode(mode) {
    sessionStorage.setItem(MODE_KEY, mode);
    notify("mode");
  },
};

// Told of "signed-in", "signed-out" (a sign out, or a 401) and "mode".
export function onSession(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function notify(what) {
  for (const listener of [...listeners]) listener(what);
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body.error || `the daemon answered ${status}`);
    this.status = status;
    this.code = body.code || "memcastle::client::unreadable";
    this.help = body.help || "";
  }
}

export function headers(extra = {}) {
  const sent = { "X-MemCastle-Mode": session.mode, ...extra };
  if (session.token) sent.Authorization = `Bearer ${session.token}`;
  return sent;
}

// `path` continues /api (so /wings is /api/wings); `query` is an object of parameters, the
// empty ones dropped.
export function apiUrl(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "" || value === false) continue;
    for (const each of Array.isArray(value) ? value : [value]) params.append(name, String(each));
  }
  const search = params.toString();
  return `/api${path}${search ? `?${search}` : ""}`;
}

export async function api(method, path, { query, body, signal } = {}) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(apiUrl(path, query), init);
  } catch (failure) {
    if (failure.name === "AbortError") throw failure;
    throw new ApiError(0, {
      error: "the daemon cannot be reached",
      code: "memcastle::client::request_failed",
      help: "check that the daemon is running (`memcastle status`), then press Refresh",
    });
  }
  const text = await response.text();
  let answer = {};
  try {
    answer = text ? JSON.parse(text) : {};
  } catch {
    answer = { error: `the daemon answered ${response.status} with something other than JSON` };
  }
  if (response.status === 401) session.signOut();
  if (!response.ok) throw new ApiError(response.status, answer);
  return answer;
}

export const get = (path, query, signal) => api("GET", path, { query, signal });
export const post = (path, body = {}) => api("POST", path, { body });
