#!/usr/bin/env bash
# Installs every Debian package esock's build, tests, benchmarks and demo need.
# Idempotent: quiet and fast when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libisal-dev
  libsodium-dev
  libdpdk-dev dpdk
  librdmacm-dev libibverbs-dev
  wireshark-dev tshark
  iproute2 procps gdb
  curl netcat-openbsd iperf3 redis-server redis-tools python3-matplotlib socat
  nginx lighttpd apache2-utils wrk
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
