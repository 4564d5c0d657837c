"""The loader's errors (raised by the spec, the sampler, the options and the Loader)."""

from __future__ import annotations

from ..errors import ZarrflowError


class LoaderError(ZarrflowError, ValueError):
    """A dataset spec or loader setting that cannot work (unknown variable, window too large...)."""


class MissingChunkError(ZarrflowError, LookupError):
    """``missing="error"`` and a batch touched chunks that are not stored."""
