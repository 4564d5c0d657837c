#!/usr/bin/env bash
# The main job: build zarrflow, write a small ERA5-like store (Zarr v2 WeatherBench2-style and
# Zarr v3 sharded), inspect it, read it back, and print read throughput next to zarr-python's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
.venv/bin/python examples/demo.py "$@"
