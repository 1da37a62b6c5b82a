#!/usr/bin/env bash
# Installs the Debian 12 packages aclnn-cpu needs, only those missing (apt-get, as root).
# --bench also installs python3-torch, the PyTorch peer the benchmark compares against.
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config libboost-dev libboost-filesystem-dev libyaml-cpp-dev libtbb-dev libgtest-dev libdnnl-dev)
[[ "${1:-}" == "--bench" ]] && packages+=(python3-torch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install_deps: missing ${missing[*]}; run as root (apt-get install) or install them yourself" >&2
  exit 1
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
