#!/usr/bin/env bash
# tools/tsan_tbb.sh PREFIX: oneTBB built with ThreadSanitizer, installed into PREFIX/lib (tools/test.sh
# --tsan puts it first on LD_LIBRARY_PATH). Debian's libtbb is not instrumented, so TSan cannot see the
# synchronisation in TBB's task handoffs and reports hundreds of false races. The source is Debian's own
# package at the installed libtbb's version: the headers the project compiled against are the same, so
# nothing else is rebuilt. Idempotent: nothing to do once PREFIX/lib/libtbb.so.12 exists.
set -euo pipefail
prefix=$(realpath -m "${1:?usage: tools/tsan_tbb.sh PREFIX}")
[[ -e $prefix/lib/libtbb.so.12 ]] && exit 0
ver=$(dpkg-query -W -f='${source:Version}' libtbb12)
src=$prefix/src work=$prefix/work
if [[ ! -f $src/CMakeLists.txt ]]; then
  # A private apt configuration with deb-src lines (and its own index): /etc/apt and apt's state stay as
  # they are, and apt-get needs no root for it. Sandbox user = caller: _apt may not write into PREFIX.
  rm -rf "$work" && mkdir -p "$work/lists/partial" "$work/cache"
  . /etc/os-release
  key='[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]'
  printf 'deb-src %s http://deb.debian.org/debian %s main\n' "$key" "$VERSION_CODENAME" "$key" "$VERSION_CODENAME-updates" >"$work/sources.list"
  printf 'deb-src %s http://deb.debian.org/debian-security %s-security main\n' "$key" "$VERSION_CODENAME" >>"$work/sources.list"
  apt=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::lists="$work/lists"
       -o Dir::Cache="$work/cache" -o APT::Sandbox::User="$(id -un)")
  if ! (cd "$work" && apt-get "${apt[@]}" update && apt-get "${apt[@]}" source onetbb="$ver") >"$work/apt.log" 2>&1; then
    tail -n 5 "$work/apt.log" >&2
    cat >&2 <<MSG
tsan_tbb.sh: 'apt-get source onetbb=$ver' failed (log: $work/apt.log). It needs dpkg-dev and access
to deb.debian.org (as root: apt-get install dpkg-dev). Or unpack that version's source yourself (the .dsc
and tarballs are on https://snapshot.debian.org/package/onetbb/$ver/):  dpkg-source -x onetbb_$ver.dsc $src
then rerun this script: it builds whatever is in $src.
MSG
    exit 1
  fi
  mv "$work"/onetbb-*/ "$src"
fi
# TBB_STRICT=OFF: oneTBB builds with -Werror, and GCC warns (-Wtsan) that TSan does not support
# atomic_thread_fence. Only libtbb: it is all the project links, and with no libtbbmalloc beside it
# (libtbb looks only there) TBB allocates with malloc, which TSan intercepts.
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBB_SANITIZE=thread -DTBB_STRICT=OFF \
  -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBBMALLOC_BUILD=OFF -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib >/dev/null
cmake --build "$work/build" >"$prefix/build.log" 2>&1 || { tail -n 20 "$prefix/build.log" >&2; exit 1; }
cmake --install "$work/build" >/dev/null
rm -rf "$work"
