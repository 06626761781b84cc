#!/bin/sh
# The plugin's way to run reverie: `reverie.sh hook session-start` (and any other reverie arguments).
#
# Uses `reverie` from PATH, else the copy this plugin installed into ${CLAUDE_PLUGIN_DATA}/venv.
# When neither exists and this is the SessionStart hook, it starts scripts/install.py in the
# background (detached, locked, logged to ${CLAUDE_PLUGIN_DATA}/install.log) and returns at once,
# printing nothing: this session goes without memory, later ones use the install.
# Fails open: a hook call always exits 0 and prints only what reverie prints.
data="${CLAUDE_PLUGIN_DATA:-}"
if command -v reverie >/dev/null 2>&1; then
  exec reverie "$@"
fi
if [ -n "$data" ] && [ -f "$data/venv/.reverie-installed" ] && [ -x "$data/venv/bin/reverie" ]; then
  exec "$data/venv/bin/reverie" "$@"
fi
if [ "$1" = "hook" ]; then
  if [ "$2" = "session-start" ] && [ -n "$data" ] && [ -n "${CLAUDE_PLUGIN_ROOT:-}" ] \
      && [ -z "${REVERIE_CHILD:-}" ] && command -v python3 >/dev/null 2>&1; then
    python3 "$CLAUDE_PLUGIN_ROOT/scripts/install.py" start </dev/null >/dev/null 2>&1
  fi
  exit 0
fi
echo "reverie is not installed yet: the plugin installs it at the next session start (log: ${data:-CLAUDE_PLUGIN_DATA}/install.log)" >&2
exit 1
