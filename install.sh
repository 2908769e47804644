#!/usr/bin/env bash
# Installs everything coder needs: as root, the system packages (bubblewrap, ripgrep, tmux, git; iproute2 and
# util-linux for the sandbox's tarpits, coder/sandbox/tarpit.py) with apt-get;
# then coder itself, editable, with its dev, swebench and ray extras, into the current Python (use a venv if you prefer).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}

declare -A PACKAGE_FOR=([bwrap]=bubblewrap [rg]=ripgrep [tmux]=tmux [git]=git [ip]=iproute2 [setpriv]=util-linux)
missing=()
for cmd in bwrap rg tmux git ip setpriv; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${PACKAGE_FOR[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing ${missing[*]} with apt-get (a minute or two)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install.sh: could not install ${missing[*]} (needs root and apt-get)." >&2
    echo "            Install them yourself, e.g.: sudo apt-get install ${missing[*]}" >&2
    echo "            Without bubblewrap coder refuses to run shell commands (see 'coder doctor')." >&2
  fi
fi

# A distribution's own Python refuses pip installs (PEP 668): then coder goes into a project venv instead.
managed=$("$PYTHON" -c 'import sys, sysconfig, os; print(int(sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))')
if [ "$managed" = 1 ]; then
  echo "install.sh: $PYTHON is managed by the system (PEP 668): installing into ./.venv"
  "$PYTHON" -m venv .venv
  PYTHON=.venv/bin/python
fi
echo "install.sh: installing coder (editable) with its dev, swebench and ray extras into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
echo "            with pip: the first time this takes a few minutes, and pip says nothing until it is done"
"$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[dev,swebench,ray]"
if [ "$managed" = 1 ]; then
  echo "install.sh: done. Activate it with: source .venv/bin/activate   (then: coder doctor)"
else
  echo "install.sh: done. Try: coder doctor, then coder --model scripted:examples/hello.json (the app, no key needed)"
fi
