// MemCastle for opencode, installed by `memcastle integration install opencode` and taken out
// by `memcastle integration remove opencode`. opencode has no session-end event: when a session
// goes idle (the agent has answered and waits), this runs MemCastle's session-end hook, which
// asks the daemon to mine opencode's sessions. Mining skips what it has already read.
import { spawn } from "node:child_process"

const HOOK = @@HOOK_ARGV@@

// MEMCASTLE_MODE, in the integrations' labels: a mine is a write, so anything but full (or no
// mode) registers nothing.
const writing = ["", "full"].includes((process.env.MEMCASTLE_MODE ?? "").trim())

export const MemCastle = async () => {
  if (!writing) return {}
  return {
    event: async ({ event }) => {
      if (event.type !== "session.idle") return
      // Detached and unwaited: the hook never holds opencode up, and a failure to start it
      // is ignored rather than thrown into opencode.
      const hook = spawn(HOOK[0], HOOK.slice(1), { detached: true, stdio: "ignore" })
      hook.on("error", () => {})
      hook.unref()
    },
  }
}
