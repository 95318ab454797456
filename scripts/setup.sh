#!/usr/bin/env bash
# One-time set-up of a machine for baton's main job and its tests: the Debian packages they use
# (skipped when present; sudo when not root), then the npm dependencies from the lockfile.
# `npm run setup` runs it; so does .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

# tool on PATH (or file) -> Debian package that provides it
declare -A needs=(
  [flite]=flite                                        # offline text to speech
  [pocketsphinx_continuous]=pocketsphinx               # offline speech to text (libpocketsphinx + CLI)
  [/usr/share/pocketsphinx/model/en-us/en-us]=pocketsphinx-en-us   # its English model
  [chromium]=chromium                                  # the browser test of the web page
  [openssl]=openssl                                    # the TLS front of the official-client tests (a self-signed certificate)
)
missing=()
for what in "${!needs[@]}"; do
  if [[ "$what" == /* ]]; then [[ -e "$what" ]] || missing+=("${needs[$what]}")
  else command -v "$what" >/dev/null 2>&1 || missing+=("${needs[$what]}"); fi
done
# the PostgreSQL server of the session store's tests (a private cluster each run; Debian keeps
# initdb off PATH, in /usr/lib/postgresql/<version>/bin)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)

if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]} and no apt-get here; install them with your package manager" >&2
    exit 1
  fi
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

npm ci --no-audit --no-fund

# LiveKit's own worker (@livekit/agents 1.9, whose rtc-node peer differs from ours) in its own
# folder: the benchmark and the test that drives the fake dispatch server with it use it.
npm ci --prefix bench/agents-js --no-audit --no-fund

# Silero VAD's model file (not in git; taken from an npm tarball and checked by sha256)
bash scripts/fetch-silero.sh
