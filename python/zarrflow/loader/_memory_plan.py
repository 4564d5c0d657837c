"""How many batches a GPU loader keeps in flight, fitted into zarrflow's GPU memory limit.

A loader holds up to ``prefetch + workers + 1`` batches on the GPU (ready ahead, being made by
each worker, and the one the consumer uses), each worker's read pieces (compressed staging,
decoded chunks, nvCOMP's scratch: they shrink with the room left, down to ~1 GB with double
buffering), and its GPU chunk cache. The default's spare worker goes first (a GPU loader asks for
three workers when nobody chose: the third one fills the gaps the other two leave, but only
where the limit leaves every worker room for large read pieces, ``read_bytes`` each). Then,
when the plan passes the limit, prefetch goes down (it only smooths out jitter), then workers
(they overlap host and GPU work, worth 1.4x at 71 channels); a plan that does not fit even with
one of each is refused before any reading starts.
Loaders of one process share the limit: a validation loader made after the training loader gets
what the training loader's plan leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

PER_WORKER = 1 << 30  # the smallest working set of one worker's reads (pieces of 256 MB staged)


# What each worker's reads should have beside the batches and caches for a spare worker to stay:
# room for pieces of 4 GB of decoded chunks, with their staging and nvCOMP's zstd scratch (~5.5x the
# decoded bytes; pipeline/gpu/read_op_plan_cuda.cc, piece_bounds). Measured, not derived: a third
# worker helped where its plan left each worker ~24 GB or more and cost where it left 16 GB or
# less (docs/design_measurements.md, "spare third worker only with 22 GB per worker"). nvCOMP's
# calls have a fixed latency, so pieces squeezed by a third reader cost more calls than the third
# reader wins back.
SPARE_WORKER_READ_BYTES = int(5.5 * 4e9)


@dataclass(frozen=True)
class MemoryPlan:
    batch_bytes: int
    prefetch: int
    workers: int
    cache_bytes: int
    limit: int                    # bytes; 0 = no limit
    asked: tuple[int, int]        # (prefetch, workers) the caller asked for, spare left out
    others: int = 0               # bytes the process's other GPU loaders planned

    @property
    def in_flight(self) -> int:
        return self.prefetch + self.workers + 1

    @property
    def need(self) -> int:
        return self.in_flight * self.batch_bytes + self.workers * PER_WORKER + self.cache_bytes

    @property
    def held(self) -> int:
        """What stays planned while the loader lives: its batches and cache (read buffers
        shrink with the room left, so they are not held against other loaders)."""
        return self.in_flight * self.batch_bytes + self.cache_bytes

    @property
    def read_budget(self) -> int:
        """Device bytes each worker's reads may hold under the limit, beside the batches, the
        cache and other loaders' plans (0 without a limit: reads judge from what is free). Sizes
        the pieces of chunks nvCOMP decodes, whose calls cost about the same whatever their size,
        from the limit rather than from what happens to be free when each read starts."""
        if not self.limit:
            return 0
        return max(self.limit - self.held - self.others, 0) // self.workers

    @property
    def fits(self) -> bool:
        return not self.limit or self.need + self.others <= self.limit

    @property
    def reduced(self) -> bool:
        """Fewer than the caller asked for (a spare worker given up does not count)."""
        return self.prefetch < self.asked[0] or self.workers < self.asked[1]

    def describe(self) -> str:
        return (f"{self.in_flight} batches of {self.batch_bytes / 1e9:.2f} GB in flight (prefetch "
                f"{self.prefetch} + {self.workers} workers + the one in use), "
                f"{self.workers} x {PER_WORKER / 1e9:.1f} GB of read buffers at least"
                + (f", a {self.cache_bytes / 1e9:.1f} GB chunk cache" if self.cache_bytes else "")
                + f": {self.need / 1e9:.1f} GB"
                + (f", beside {self.others / 1e9:.1f} GB that other loaders of this process "
                   f"planned" if self.others else ""))


def fit(batch_bytes: int, prefetch: int, workers: int, cache_bytes: int, limit: int,
        others: int = 0, spare_workers: int = 0,
        read_bytes: int = SPARE_WORKER_READ_BYTES) -> MemoryPlan:
    """The plan closest to (prefetch, workers) that fits `limit` bytes (0: no limit) beside
    `others` planned by other loaders; when even one of each does not fit, that plan (``fits``
    False). `spare_workers` of the `workers` are extras nobody asked for: they go first, and stay
    only where what the limit leaves beside the batches and caches gives every worker
    `read_bytes` (see SPARE_WORKER_READ_BYTES)."""
    asked = (prefetch, workers - spare_workers)
    plan = MemoryPlan(batch_bytes, prefetch, workers, cache_bytes, limit, asked, others)
    # A worker's reads work in pieces sized from the room left (1 GB is their floor, not their
    # speed), so a spare worker that takes that room slows every read.
    while plan.workers > asked[1] and (not plan.fits or (
            plan.limit and plan.limit - plan.held - plan.others < plan.workers * read_bytes)):
        plan = replace(plan, workers=plan.workers - 1)
    while not plan.fits and plan.prefetch > 1:
        plan = replace(plan, prefetch=plan.prefetch - 1)
    while not plan.fits and plan.workers > 1:
        plan = replace(plan, workers=plan.workers - 1)
    return plan


def refusal(plan: MemoryPlan) -> str:
    """Why a plan that does not fit is refused, and what would fit."""
    return (f"this loader needs more GPU memory than zarrflow's limit of {plan.limit / 1e9:.1f} "
            f"GB, even with prefetch=1 and workers=1: {plan.describe()}. A smaller batch, "
            f"dtype='bfloat16', a smaller cache_gb, or a higher limit "
            f"(zarrflow.set_gpu_memory_limit, ZARRFLOW_GPU_MEMORY_LIMIT) would fit.")
