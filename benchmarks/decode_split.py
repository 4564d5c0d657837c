"""The training ceiling of a GPU loader that can decode on the host, on the GPU, or split between.

A model step that takes T_s on batches already in GPU memory (the synthetic run) pays for its
data in one of two ways:

- GPU decoding (``host_decode_share=0``): the decode kernels share the SMs with the model, and
  a step takes T_g >= T_s;
- host decoding (``host_decode_share=1``): the host threads decode, costing the model next to
  nothing, but a step cannot be shorter than the host's time to decode one batch, T_h.

With a share h of the chunks decoded on the host, the host needs h * T_h per step and the GPU's
part stretches the model step to T_s + (1 - h) * (T_g - T_s), both linear in h. The step is the
longer of the two, so the best split is where they meet,

    h* = T_g / (T_h + T_g - T_s),    T* = h* * T_h,

and T_s / T* is the best real/synthetic any split can reach from these measured costs (1 when
the host alone keeps up: T_h <= T_s). The three times come from runs of the same process
(benchmarks/train_bench.py: ``synthetic``, ``zarrflow-gpu@0``, ``zarrflow-gpu@1``), per sample.

It is an upper bound, not a forecast. It leaves out that the host also stages the chunks the
GPU decodes (part of T_h is staging that every share pays), and that a loader worker does a
batch's host work and waits for its GPU work in turn (a read piece's GPU decoding starts once
its host-decoded chunks are done), so with two workers the two costs partly add up instead of
overlapping (docs/performance.md, "Who decodes", has fixed host shares as they ran).
"""

from __future__ import annotations


def best_split(synthetic_sps: float, gpu_sps: float, host_sps: float) -> dict:
    """The best host share and the real/synthetic it reaches, from three runs' samples/s:
    synthetic batches, all chunks decoded on the GPU, all decoded on the host."""
    if min(synthetic_sps, gpu_sps, host_sps) <= 0:
        raise ValueError(f"samples/s must be positive, got {synthetic_sps}, {gpu_sps}, {host_sps}")
    t_s, t_g, t_h = 1 / synthetic_sps, 1 / gpu_sps, 1 / host_sps
    t_g = max(t_g, t_s)  # GPU decoding never speeds the model up; within noise it costs nothing
    if t_h <= t_s:  # the host keeps up alone: no SM time needed
        share, step = 1.0, t_s
    else:
        share = t_g / (t_h + t_g - t_s)
        step = share * t_h
    return {"host_share": share, "samples_per_s": 1 / step, "real_over_synthetic": t_s / step}
