#!/usr/bin/env bash
# Installs everything ucharm needs on a fresh Debian 12 machine and builds it.
# Idempotent: packages already present are not reinstalled, the build is incremental.
#   --asan                   the sanitizer build (ASan + UBSan, UCHARM_SANITIZE=ON) into
#                            build-asan/ instead of the release build into build/
#   UCHARM_UCX_ROOT=/prefix  use that UCX instead of the libucx-cu13 wheel
#   UCHARM_BUILD_DIR=dir     build folder (default: build, or build-asan with --asan)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
config=(-DCMAKE_BUILD_TYPE=Release -DUCHARM_SANITIZE=OFF)
default_build=$root/build
case "${1:-}" in
  "") ;;
  --asan) config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DUCHARM_SANITIZE=ON)
          default_build=$root/build-asan ;;
  *) echo "setup: unknown argument '$1' (known: --asan)" >&2; exit 2 ;;
esac
build=${UCHARM_BUILD_DIR:-$default_build}
venv=$root/.venv

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pkgs=(g++ gfortran cmake ninja-build pkg-config python3 python3-venv python3-dev
      libpmix-dev libhwloc-dev libboost-context-dev libgtest-dev googletest
      libcli11-dev libfmt-dev libmetis-dev libxxhash-dev openmpi-bin libopenmpi-dev bc iproute2 util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# UCX 1.22 with CUDA transports comes from PyPI (libucx-cu13) inside the project virtualenv.
if [ -z "${UCHARM_UCX_ROOT:-}" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if ! "$venv/bin/python" -c 'import libucx' 2>/dev/null; then
    echo "setup: installing libucx-cu13 into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'libucx-cu13>=1.22,<1.23'
  fi
  UCHARM_UCX_ROOT=$("$venv/bin/python" -c 'import libucx,os;print(os.path.dirname(libucx.__file__))')
fi

# matplotlib, for tools/plot_osu.py (benchmark curves as PNG); Cython, scikit-build-core,
# greenlet, NumPy and pytest for the Python package (bindings/python) and its tests; Numba
# for the tests of programs with jitted kernels (charm4py's LeanMD and other examples).
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import matplotlib, Cython, scikit_build_core, greenlet, numpy, pytest, numba' 2>/dev/null ||
  "$venv/bin/pip" install -q --disable-pip-version-check 'matplotlib>=3.7' 'cython>=3.0,<4' \
      'scikit-build-core>=0.10' 'greenlet>=3' numpy 'pytest>=7' 'numba>=0.60'

# The sanitizer build leaves the Python package out: an instrumented extension cannot be
# loaded into the uninstrumented interpreter.
python_opt=(-DPython3_EXECUTABLE="$venv/bin/python")
[ "${1:-}" = --asan ] && python_opt=(-DUCHARM_BUILD_PYTHON=OFF)
cmake -S "$root" -B "$build" -G Ninja "${config[@]}" "${python_opt[@]}" \
      -DUCHARM_UCX_ROOT="$UCHARM_UCX_ROOT" >/dev/null
cmake --build "$build" --parallel "$(nproc)"

# The package installed into the project virtualenv (`.venv/bin/python prog.py`,
# `.venv/bin/ucharmrun`); its build folder is kept, so a second run is quick.
if [ "${1:-}" != --asan ]; then
  UCHARM_UCX_ROOT="$UCHARM_UCX_ROOT" "$venv/bin/pip" install -q --disable-pip-version-check \
      --no-build-isolation -C build-dir="$build/python-wheel" -C cmake.define.UCHARM_UCX_ROOT="$UCHARM_UCX_ROOT" \
      "$root/bindings/python"
fi
