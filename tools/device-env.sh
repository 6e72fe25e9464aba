# Sourced on the GPU machine, from the repository root, with .device/ carried
# (tools/device-pack.sh makes it; DEVICE_DIR names another folder): puts the packed build
# where its RPATHs and the tests' compiled-in paths point (the build directory it was
# packed from), and the packed Debian libraries on the library path. Sets $build to
# that path and $dev to the pack.
dev=${DEVICE_DIR:-.device}
case $dev in /*) ;; *) dev=$PWD/$dev ;; esac
ucx=$(cat "$dev/ucx-dir")
build=$(cat "$dev/build-dir")
case $build in /*) ;; *) build=/work/main/$build ;; esac  # a pack from before the path was absolute
src=$(cat "$dev/source-dir" 2>/dev/null || echo /work/main)
# CTest files name the source tree the pack was made from (expect.sh, test scripts): point
# that path at this checkout when it is not here.
if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; fi
mkdir -p "$(dirname "$ucx")" "$(dirname "$build")"
ln -sfn "$dev/libucx" "$ucx"
if [ -d "$build" ] && [ ! -L "$build" ]; then
  echo "device-env: $build exists and is not a link; not replacing it" >&2
else
  ln -sfn "$dev/build" "$build"
fi
# Scripts that name /work/main/build find a pack made from a worktree too.
[ -e /work/main/build ] || { mkdir -p /work/main && ln -sfn "$dev/build" /work/main/build; }
export LD_LIBRARY_PATH=$dev/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0
