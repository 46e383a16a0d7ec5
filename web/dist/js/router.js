// Pages are addressed by the hash (`#/palace/work/notes`), so every address is the one page the
// daemon serves, a reload keeps the place, and Back works.

import { useEffect, useState } from "preact/hooks";

export function parseHash(hash) {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || "overview", parts: parts.slice(1), params: new URLSearchParams(search) };
}

export function href(page, parts = [], params = {}) {
  const path = [page, ...parts].map(encodeURIComponent).join("/");
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "" && value !== false) {
      query.set(name, String(value));
    }
  }
  const search = query.toString();
  return `#/${path}${search ? `?${search}` : ""}`;
}

export function navigate(page, parts, params) {
  location.hash = href(page, parts, params);
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseHash(location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}
