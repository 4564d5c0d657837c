"""How the loader reads: device, output type, concurrency, memory and decoding settings.

:class:`LoaderOptions` holds every setting with its default; nothing in it changes which
samples a batch holds or their values (the :class:`~zarrflow.loader.DatasetSpec` and the
:class:`~zarrflow.loader.Sampler` decide those), except ``dtype``, the batches' element type.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import numbers
import sys
from dataclasses import dataclass

from .. import _gpu
from ._errors import LoaderError

DTYPES = ("float32", "bfloat16", "float16")
OUTPUTS = ("auto", "torch", "cupy", "jax", "numpy", "zarrflow")
LAYOUTS = ("auto", "BCHW", "BTCHW")
# The package each output type needs, and how to get it.
_OUTPUT_PACKAGES = {"torch": ("torch", "pip install torch"),
                    "cupy": ("cupy", "pip install cupy-cuda12x"),
                    "jax": ("jax", "pip install jax")}


@dataclass(frozen=True)
class LoaderOptions:
    """Settings of a :class:`~zarrflow.Loader`: where batches go and how they are made.

    Every field has a default that works on any machine; ``dataclasses.replace(options, ...)``
    makes a changed copy. Invalid values raise :class:`~zarrflow.LoaderError` here; what
    depends on the machine (a GPU, an installed package) is checked when the Loader is made.

    Parameters
    ----------
    device : str, default "auto"
        ``"auto"``: the GPU when zarrflow can use one (built with CUDA, a driver and a device
        present), else the CPU. ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` choose; ``"cuda"`` and
        ``"auto"`` take PyTorch's current device when PyTorch has initialised CUDA (as after
        ``torch.cuda.set_device(local_rank)`` under torchrun), else device 0.
    output : str, default "auto"
        The batch type: ``"torch"`` tensors, ``"cupy"`` or ``"jax"`` arrays (GPU batches),
        ``"numpy"`` arrays (CPU batches), or ``"zarrflow"`` (the raw DLPack-capable
        :class:`zarrflow.Tensor` under ``"raw"``). ``"auto"``: ``"torch"`` when PyTorch is
        installed, else ``"numpy"`` on the CPU and ``"cupy"`` on a GPU. Batches share memory
        with zarrflow's buffers: no copy is made.
    dtype : {"float32", "bfloat16", "float16"}, default "float32"
        Element type of the batches. Values are decoded and normalised in float32, then cast.
    layout : {"auto", "BCHW", "BTCHW"}, default "auto"
        ``"BTCHW"``: ``x`` is ``(batch, input_steps, channels, *grid)`` and ``y``
        ``(batch, target_steps, channels, *grid)``. ``"BCHW"`` leaves out the time axis and needs
        one input and at most one target step. ``"auto"``: ``"BCHW"`` when that holds, else
        ``"BTCHW"``.
    prefetch : int, default 2
        Batches made ahead of the consumer.
    workers : int, optional
        Threads making batches at once, each with its own CUDA stream. Default: 2 (one batch's
        host work overlaps another's GPU work), plus a third on a GPU where zarrflow's GPU memory
        limit leaves every worker room for large read pieces. On a GPU, ``prefetch`` and then
        ``workers`` are lowered, with a warning, when the batches would not fit the limit
        (:func:`zarrflow.set_gpu_memory_limit`; the Loader's ``memory_plan`` says what it chose).
    missing : {"fill", "error"}, default "fill"
        Chunks that are not stored: filled with the array's fill value (as Zarr reads them), or
        :class:`~zarrflow.MissingChunkError`.
    gpu_decode : {"auto", "on", "off"}, default "auto"
        GPU loaders: decode on the GPU where a codec allows it (``"auto"``), insist (``"on"``)
        or decode every chunk on the host threads (``"off"``).
    host_decode_share : float or "auto", default "auto"
        GPU loaders: the fraction (0..1) of GPU-decodable chunks the host threads decode
        instead. ``"auto"`` with ``gpu_decode="auto"`` and no chunk cache: the host decodes as
        long as it keeps up with the consumer, and chunks move to the GPU while the consumer
        waits or its steps slow down (the decode kernels share the GPU with the model);
        otherwise 0.
    stream_priority : {"high", "normal"}, default "high"
        GPU loaders: the CUDA priority of the streams a batch is copied and decoded on.
        ``"high"``: the device's highest, so a batch's decode kernels are scheduled ahead of
        the model's kernels queued on PyTorch's default priority, and the batch is ready
        sooner; ``"normal"``: CUDA's default, the same as the model's.
    threads : int, optional
        Size of the I/O thread pool. Default: the process's shared pool (one thread per CPU,
        divided among the ranks of a node; :func:`zarrflow.set_num_threads`).
    decode_threads : int, optional
        A separate pool for host decoding and checks. Default: the I/O pool.
    cache_gb : float, default 0
        GPU memory (GB) for compressed chunks kept across epochs; 0 = no cache.
    host_cache_gb : float, default 0
        Pinned host memory (GB) for compressed chunks kept across epochs (asked after the GPU
        tier); 0 = no cache. GPU loaders only.
    progress : int, default 0
        Print a rate line every N batches (0: never).
    prime_next_epoch : bool, default True
        When every batch of a pass has been started, start the next pass's first batches, so
        validation or checkpointing hides the next epoch's start. The next epoch is guessed
        (the next one if ``set_epoch`` was called before this pass, else the same one); a wrong
        guess costs reads, never different batches.

    Raises
    ------
    LoaderError
        A value outside its choices or range (the message names the setting).

    Examples
    --------
    >>> opts = zarrflow.LoaderOptions(device="cpu", output="numpy", dtype="bfloat16")
    >>> loader = zarrflow.Loader(spec, batch_size=8, options=opts)
    """

    device: str = "auto"
    output: str = "auto"
    dtype: str = "float32"
    layout: str = "auto"
    prefetch: int = 2
    workers: int | None = None
    missing: str = "fill"
    gpu_decode: str = "auto"
    host_decode_share: float | str = "auto"
    stream_priority: str = "high"
    threads: int | None = None
    decode_threads: int | None = None
    cache_gb: float = 0.0
    host_cache_gb: float = 0.0
    progress: int = 0
    prime_next_epoch: bool = True

    def __post_init__(self) -> None:
        _choice("dtype", self.dtype, DTYPES)
        _choice("output", self.output, OUTPUTS)
        _choice("layout", self.layout, LAYOUTS)
        _choice("missing", self.missing, ("fill", "error"))
        _choice("gpu_decode", self.gpu_decode, ("auto", "on", "off"))
        _choice("stream_priority", self.stream_priority, ("high", "normal"))
        if self.device != "auto":
            try:
                _gpu.parse_device(self.device)
            except ValueError:
                raise LoaderError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got "
                                  f"{self.device!r}") from None
        _count("prefetch", self.prefetch, minimum=1)
        if self.workers is not None:
            _count("workers", self.workers, minimum=1, also="or None")
        for name in ("threads", "decode_threads"):
            if getattr(self, name) is not None:
                _count(name, getattr(self, name), minimum=1, also="or None")
        _count("progress", self.progress, minimum=0)
        share = self.host_decode_share
        if share != "auto" and not (isinstance(share, numbers.Real) and not isinstance(share, bool)
                                    and 0.0 <= share <= 1.0):
            raise LoaderError(f"host_decode_share must be in [0, 1] or 'auto', got {share!r}")
        for name in ("cache_gb", "host_cache_gb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
                raise LoaderError(f"{name} must be a number >= 0, got {value!r}")

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of the settings.

        Returns
        -------
        tuple of str
        """
        return tuple(f.name for f in dataclasses.fields(cls))

    def resolve_device(self) -> tuple[str, int]:
        """(kind, index) of the device batches go to: ``"auto"`` resolved on this machine.

        Returns
        -------
        tuple of (str, int)
            ``("cpu", 0)`` or ``("cuda", device index)``.

        Raises
        ------
        LoaderError
            ``device`` names a GPU and zarrflow cannot use one here.
        """
        if self.device == "auto":
            _gpu.configure()
            if not _gpu.cuda_available():
                return "cpu", 0
            return "cuda", _current_cuda_device()
        kind, index = _gpu.parse_device(self.device)
        if kind == "cuda":
            _gpu.configure()
            if not _gpu.cuda_available():
                raise LoaderError(f"device={self.device!r} but no GPU can be used: "
                                  f"{_gpu.cuda_status()}. Use device='cpu' (or 'auto': the GPU "
                                  f"when there is one).")
            if ":" not in str(self.device):
                index = _current_cuda_device()
        return kind, index

    def resolve_output(self, on_gpu: bool) -> str:
        """The batch type ``"auto"`` stands for here; checks that its package is installed.

        Parameters
        ----------
        on_gpu : bool
            Whether batches are made in GPU memory.

        Returns
        -------
        str
            One of ``"torch"``, ``"cupy"``, ``"jax"``, ``"numpy"``, ``"zarrflow"``.

        Raises
        ------
        LoaderError
            The output type needs a package that is not installed, or does not suit the device.
        """
        output = self.output
        if output == "auto":
            if _installed("torch"):
                return "torch"
            if not on_gpu:
                return "numpy"
            if _installed("cupy"):
                return "cupy"
            raise LoaderError("output='auto' on a GPU needs PyTorch or CuPy (pip install torch); "
                              "output='zarrflow' gives DLPack tensors without either")
        if output == "numpy" and on_gpu:
            raise LoaderError("output='numpy' needs device='cpu'")
        if output in _OUTPUT_PACKAGES:
            module, how = _OUTPUT_PACKAGES[output]
            if not _installed(module):
                raise LoaderError(f"output={output!r} needs {module}, which is not installed "
                                  f"({how}); output='numpy' gives NumPy arrays on the CPU")
        return output

    def resolve_layout(self, input_steps: int, target_steps: int) -> str:
        """The layout ``"auto"`` stands for with these time steps; checks ``"BCHW"`` fits.

        Parameters
        ----------
        input_steps, target_steps : int
            The dataset spec's time steps of ``x`` and ``y``.

        Returns
        -------
        str
            ``"BCHW"`` or ``"BTCHW"``.

        Raises
        ------
        LoaderError
            ``layout="BCHW"`` with more than one input or target step.
        """
        one_step = input_steps == 1 and target_steps <= 1
        if self.layout == "auto":
            return "BCHW" if one_step else "BTCHW"
        if self.layout == "BCHW" and not one_step:
            raise LoaderError("layout 'BCHW' holds one time step: use 'BTCHW' (or 'auto') for "
                              "input_steps or target_steps > 1")
        return self.layout


def _choice(name: str, value: object, choices: tuple) -> None:
    if not isinstance(value, str) or value not in choices:
        raise LoaderError(f"{name} must be one of {list(choices)}, got {value!r}")


def _count(name: str, value: object, *, minimum: int, also: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise LoaderError(f"{name} must be an integer >= {minimum}{' ' + also if also else ''}, "
                          f"got {value!r}")


def _installed(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _current_cuda_device() -> int:
    """PyTorch's current CUDA device when PyTorch has initialised CUDA in this process, else 0
    (zarrflow never initialises PyTorch's CUDA itself)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except (AttributeError, RuntimeError):
        pass
    return 0
