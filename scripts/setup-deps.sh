#!/usr/bin/env bash
# Installs what zap needs to build and test, on Debian 12 or Ubuntu 24.04,
# and only what is missing. Uses sudo when not root. CUDA is optional: when
# /usr/local/cuda/bin/nvcc exists the GPU parts are built too.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libopenmpi-dev openmpi-bin libucx-dev ucx-utils libgtest-dev libsodium-dev iproute2 nftables iptables gfortran)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
