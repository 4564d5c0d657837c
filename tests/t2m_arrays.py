"""The (time, latitude, longitude) float32 array "t2m" that the loader tests read: one time step a
chunk, fill value 0, written with zarr-python."""

from __future__ import annotations

import numpy as np


def create_t2m(root, values: np.ndarray) -> None:
    """Creates "t2m" in the zarr-python group `root`, shaped like `values`, and writes them."""
    a = root.create_array("t2m", shape=values.shape, chunks=(1, *values.shape[1:]),
                          dtype="float32", dimension_names=["time", "latitude", "longitude"],
                          fill_value=0)
    a[...] = values
