#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, install into ./install, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PWD/install" >/dev/null
cmake --build build
cmake --install build >/dev/null
echo "installed into $PWD/install"
bash tools/demo.sh
