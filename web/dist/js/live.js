// Live updates: `GET /api/events` read with fetch (an EventSource cannot send the token or the
// mode header). A change notice carries identifiers only, so the pages read what they show
// again: 250 ms after the stream goes quiet, and at least every 2 s through a long burst (a
// mine job announces a change per document). A lost stream is opened again after a back-off
// that doubles up to 30 s; Manual turns it off, and the Refresh button still works.

import { headers, session } from "./api.js";

const QUIET_MS = 250;
const LONGEST_WAIT_MS = 2000;
const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 30000;

export function createLive({ onChange, onState }) {
  let manual = false;
  let controller = null;
  let retryTimer = null;
  let retryMs = FIRST_RETRY_MS;
  let quietTimer = null;
  let burstStarted = 0;
  let state = "connecting";

  function setState(next) {
    state = next;
    onState(next);
  }

  function changed() {
    const now = Date.now();
    if (!quietTimer) burstStarted = now;
    clearTimeout(quietTimer);
    const wait = Math.min(QUIET_MS, Math.max(0, burstStarted + LONGEST_WAIT_MS - now));
    quietTimer = setTimeout(() => {
      quietTimer = null;
      onChange();
    }, wait);
  }

  function handle(event, data) {
    if (event === "open") {
      retryMs = FIRST_RETRY_MS;
      setState("live");
      return;
    }
    changed();
  }

  async function connect() {
    clearTimeout(retryTimer);
    if (manual) return;
    controller = new AbortController();
    const mine = controller;
    setState("connecting");
    try {
      const response = await fetch("/api/events", { headers: headers(), signal: mine.signal });
      if (response.status === 401) {
        session.signOut();
        return;
      }
      if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
      await readFrames(response.body, handle);
      throw new Error("the event stream ended");
    } catch {
      if (mine.signal.aborted || manual) return;
      setState("connecting");
      retryTimer = setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
      // What changed while the stream was down is read when it is back.
      changed();
    }
  }

  function stop() {
    clearTimeout(retryTimer);
    if (controller) controller.abort();
    controller = null;
  }

  return {
    get state() {
      return state;
    },
    start() {
      retryMs = FIRST_RETRY_MS;
      stop();
      connect();
    },
    stop,
    // Live <-> Manual, from the badge.
    toggle() {
      manual = !manual;
      if (manual) {
        stop();
        setState("manual");
      } else {
        this.start();
      }
    },
  };
}

// Server-sent events, parsed from the body's bytes: `event:` and `data:` lines, a blank line
// ends a frame, a line starting with `:` is a keep-alive comment.
async function readFrames(body, handle) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (!frame.startsWith(":")) handle(event, data ? JSON.parse(data) : {});
    }
  }
}
