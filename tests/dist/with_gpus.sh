#!/bin/sh
# with_gpus.sh N CMD...: runs CMD where nvidia-smi lists N GPUs or more; exits 77 otherwise,
# which the ctest entries that use it report as skipped.
n=$1
shift
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "${have:-0}" -ge "$n" ] || exit 77
exec "$@"
