"""The command-line tools and what they are made of: ``zarrflow inspect``, ``synth``,
``rechunk`` and ``bench`` (cli.py), the synthetic ERA5-like stores (synth.py, synthetic.py),
the rechunker (rechunk.py, _rechunk_commit.py) and the read benchmark (bench.py).

They write stores through zarr-python or tensorstore (``pip install zarrflow[tools]``); the
runtime package (``zarrflow.open``, ``Loader``, ``zarrflow.torch``, the xarray engine) imports
none of them.
"""
