#!/bin/sh
# `tauri build`'s beforeBuildCommand (run in app-tauri/): the web UI into app-ui/dist and the
# `showdown` compute sidecar into binaries/showdown-<target triple>, where bundle.externalBin
# expects it (release, or the dev profile for `tauri build --debug`). `cargo xtask dist` and CI
# prepare both themselves and set SHOWDOWN_SIDECAR_READY=1.
set -eu
if [ "${SHOWDOWN_SIDECAR_READY:-}" = 1 ]; then
  echo "sidecar and web UI already prepared"
  exit 0
fi
exec cargo xtask sidecar
