#!/usr/bin/env bash
# Installs what voxrt needs to build, test and make fixtures, from Debian's packages.
# Skips apt entirely when everything is already there.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libnifti2-dev zlib1g-dev
  python3 python3-numpy python3-onnx
)
if [ "${VOXRT_FIXTURE_TOOLS:-0}" = 1 ]; then
  packages+=(python3-torch libopenblas0-pthread)
fi
if [ "${VOXRT_ANALYSIS_TOOLS:-0}" = 1 ]; then
  packages+=(llvm-19)  # llvm-mca with a Sapphire Rapids model: bench/predict_microkernels
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
