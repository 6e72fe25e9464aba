# Sourced on the GPU machine, from the repository root, with .device/ carried
# (tools/device-pack.sh makes it): puts the packed build where its RPATHs and the tests'
# compiled-in paths point (the build directory it was packed from), and the packed Debian
# libraries on the library path. Sets $build to that path.
ucx=$(cat .device/ucx-dir)
build=$(cat .device/build-dir)
case $build in /*) ;; *) build=/work/main/$build ;; esac  # a pack from before the path was absolute
mkdir -p "$(dirname "$ucx")" "$(dirname "$build")"
ln -sfn "$PWD/.device/libucx" "$ucx"
if [ -d "$build" ] && [ ! -L "$build" ]; then
  echo "device-env: $build exists and is not a link; not replacing it" >&2
else
  ln -sfn "$PWD/.device/build" "$build"
fi
# Scripts that name /work/main/build find a pack made from a worktree too.
[ -e /work/main/build ] || { mkdir -p /work/main && ln -sfn "$PWD/.device/build" /work/main/build; }
export LD_LIBRARY_PATH=$PWD/.device/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0
