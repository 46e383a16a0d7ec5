// MemCastle for pi, installed by `memcastle integration install pi` and taken out by
// `memcastle integration remove pi`. When pi shuts down, this runs MemCastle's session-end
// hook, which asks the daemon to mine pi's sessions. Plain JavaScript in a .ts file: pi loads
// extensions from .ts files, and no types are needed here.
import { spawn } from "node:child_process";

const HOOK = @@HOOK_ARGV@@;

// MEMCASTLE_MODE, in the integrations' labels: a mine is a write, so anything but full (or no
// mode) registers nothing.
const writing = ["", "full"].includes((process.env.MEMCASTLE_MODE ?? "").trim());

export default function memcastle(pi) {
  if (!writing) return;
  pi.on("session_shutdown", async () => {
    // Detached and unwaited: pi exits at once, and a failure to start the hook is ignored
    // rather than thrown into pi.
    const hook = spawn(HOOK[0], HOOK.slice(1), { detached: true, stdio: "ignore" });
    hook.on("error", () => {});
    hook.unref();
  });
}
