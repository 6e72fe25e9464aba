# Sourced on the GPU machine, from the repository root, with .device/ carried
# (tools/device-pack.sh makes it): puts the packed build where its RPATHs and the tests'
# compiled-in paths point, and the packed Debian libraries on the library path.
ucx=$(cat .device/ucx-dir)
mkdir -p "$(dirname "$ucx")" /work/main
ln -sfn "$PWD/.device/libucx" "$ucx"
ln -sfn "$PWD/.device/build" /work/main/build
export LD_LIBRARY_PATH=$PWD/.device/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0
