#!/usr/bin/env bash
# Quick start, command 2: the whole test suite (builds first if needed).
#   tools/test.sh           Release build in ./build, all tests
#   tools/test.sh --asan    AddressSanitizer + UndefinedBehaviorSanitizer build in ./build-asan
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PWD/install")
if [[ "${1:-}" == "--asan" ]]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DACLNN_CPU_SANITIZE=ON -DACLNN_CPU_BUILD_BENCH=OFF)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
[[ -f $dir/build.ninja ]] || cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
