"""The loader's counters: bytes, chunks, waits, and a timeline of its last batches."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

TIMELINE_LEN = 1024


@dataclass
class Stats:
    batches: int = 0
    samples: int = 0
    batch_bytes: int = 0          # bytes of the batches assembled, in their output dtype
    stored_bytes: int = 0         # compressed bytes read
    chunks: int = 0
    deduplicated: int = 0         # chunk reads saved because samples shared a chunk
    cache_hits: int = 0           # chunks served from the GPU cache of compressed chunks
    host_cache_hits: int = 0      # chunks served from the pinned host cache
    missing: int = 0
    gpu_decoded: int = 0
    cpu_decoded: int = 0
    host_transformed: int = 0     # GPU reads: chunks the host threads normalised and cast
    nans: int = 0
    h2d_ms: float = 0.0           # GPU reads: copies up after a piece was read (GPU time, summed)
    decode_ms: float = 0.0        # GPU reads: decode kernels (GPU time, summed)
    scatter_ms: float = 0.0       # GPU reads: scatter into the batch (GPU time, summed)
    # GPU reads run in internal batches (pieces bounded in bytes, pipelined): how many,
    # how long the GPU stream sat idle between them, and the reading threads' wall time fetching
    # (reads, host decoding), enqueueing (tables, launches) and waiting for the GPU.
    internal_batches: int = 0
    gpu_idle_ms: float = 0.0
    plan_ms: float = 0.0          # host time before a read's first piece (leaf chunks, sizes)
    fetch_ms: float = 0.0
    enqueue_ms: float = 0.0
    gpu_wait_ms: float = 0.0
    limit_wait_ms: float = 0.0    # waits for GPU memory other reads held under zarrflow's limit
    read_s: float = 0.0           # time the workers spent reading + assembling (summed)
    wait_s: float = 0.0           # time the consumer waited for a batch
    depth_sum: int = 0            # batches ready when the consumer asked, summed over requests
    depth_n: int = 0
    # The last TIMELINE_LEN batches: who produced each, when, and how long the consumer waited.
    timeline: collections.deque = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_LEN))

    def add(self, delta: dict) -> None:
        """Counters of one batch, added when the consumer takes it (batches read ahead and then
        dropped, e.g. for a wrongly guessed next epoch, never count)."""
        for key, value in delta.items():
            setattr(self, key, getattr(self, key) + value)

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items()
             if k not in ("depth_sum", "depth_n", "timeline")}
        d["mean_queue_depth"] = self.depth_sum / self.depth_n if self.depth_n else 0.0
        d["batch_GBps"] = self.batch_bytes / 1e9 / self.read_s if self.read_s else 0.0
        return d
