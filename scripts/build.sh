#!/usr/bin/env bash
# Configures and builds zap in ${ZAP_BUILD_DIR:-build}. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ZAP_BUILD_DIR:-build}
cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} "$@"
cmake --build "$build" -j "$(nproc)"
