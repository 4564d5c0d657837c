"""The CF decoding rules of zarrflow._cf against xarray: for stores xarray writes in Zarr v2 and
v3 (packed int16 with and without _FillValue and missing_value, _Unsigned, float32 with NaN or an
explicit fill, int32 with a fill of 0 or none) and a few attributes other writers set, the rules'
decoded values are ``xr.open_dataset(engine="zarr")``'s, bit for bit and in xarray's dtype, with
each setting of ``use_zarr_fill_value_as_mask``; and rechunk's copies read back the same in
xarray, decoded or kept, in either format."""

from __future__ import annotations

import base64
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import errors
from zarrflow._cf import CFAttributeError, carry_fill, cf_decoding, unpack_decoding, xarray_decoding
from zarrflow.tools.rechunk import Options, rechunk

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

X = np.array([[280.5, np.nan, 281.0, 279.25], [0.0, 1.5, np.nan, 282.0],
              [280.0, 280.01, 279.99, 283.0]])
ZEROS = np.array([[0, 7, -3, 0], [12, 0, 5, -1], [2, 3, 0, 4]], "int32")
PACKED = dict(dtype="int16", scale_factor=0.01, add_offset=280.0)

# name: (values, to_zarr encoding)
XARRAY_WRITTEN = {
    "packed_fill": (X, dict(PACKED, _FillValue=-32768)),
    "packed_nofill": (np.nan_to_num(X), dict(dtype="int16", scale_factor=0.5, add_offset=10.0)),
    "packed_missing": (X, dict(PACKED, missing_value=-999)),
    "packed_fill_and_missing": (X, dict(PACKED, _FillValue=-32767, missing_value=-32767)),
    "unsigned": (np.array([[0, 255, 3, 200], [255, 1, 2, 3], [4, 5, 6, 7]], "uint8"),
                 dict(dtype="int8", _Unsigned="true", _FillValue=255)),
    "float_nan": (X.astype("float32"), {}),
    "float_fill": (X.astype("float32"), dict(_FillValue=-9999.0)),
    "int_fill_zero": (ZEROS, dict(_FillValue=0)),
    "int_default_fill": (ZEROS, {}),
}
# Written with zarr-python: name -> (stored values, fill_value, attributes)
F32_1E20 = np.float32(1e20)
WITH_1E20 = np.where(ZEROS == 0, F32_1E20, ZEROS).astype("float32")
OTHER_WRITERS = {
    # v2 only: a fill_value of 0 and no attribute (zarr-python's default for integers)
    "int_zarr_fill_zero": (ZEROS, 0, {}),
    # a float32 missing_value JSON holds as 1e20: xarray compares in float64, float32(1e20) stays
    "float_missing_1e20": (WITH_1E20, np.nan,
                           {"missing_value": 1e20}),
    # ... and one the float32 holds exactly
    "float_missing_exact": (WITH_1E20, np.nan,
                            {"missing_value": float(F32_1E20)}),
    "int_missing_list": (ZEROS, 0, {"missing_value": [7, -3, 1e10, 2.5]}),
    "int_missing_string": (ZEROS, 0, {"missing_value": "abc"}),
    "packed_zero_fill": (ZEROS.astype("int16"), 0, {"scale_factor": 0.25}),
}


def _b64(value: float) -> str:
    return base64.standard_b64encode(struct.pack("<d", value)).decode()


def _write(path: Path, fmt: int) -> None:
    ds = xr.Dataset({k: (("t", "x"), v) for k, (v, _) in XARRAY_WRITTEN.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fill given as the unsigned value, no fill for NaN
        ds.to_zarr(path, zarr_format=fmt, mode="w", consolidated=False,
                   encoding={k: enc for k, (_, enc) in XARRAY_WRITTEN.items()})
    g = zarr.open_group(str(path), mode="a", zarr_format=fmt)
    for name, (values, fill, attrs) in OTHER_WRITERS.items():
        if fmt == 3 and name == "int_zarr_fill_zero":
            continue
        if fmt == 3 and "_FillValue" in attrs and values.dtype.kind == "f":
            attrs = dict(attrs, _FillValue=_b64(attrs["_FillValue"]))
        kw = ({"dimension_names": ["t", "x"]} if fmt == 3
              else {"attributes": {"_ARRAY_DIMENSIONS": ["t", "x"]}})
        a = g.create_array(name, shape=values.shape, dtype=values.dtype, fill_value=fill, **kw)
        a[...] = values
        a.attrs.update(attrs)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("cf")
    out = {}
    for fmt in (2, 3):
        out[fmt] = root / f"v{fmt}.zarr"
        _write(out[fmt], fmt)
    return out


def _xarray(path: Path, use_zarr_fill_value_as_mask: bool | None = None) -> xr.Dataset:
    """``xr.open_dataset(path, engine="zarr")``. Its ``use_zarr_fill_value_as_mask`` does not
    reach the store (xarray passes None on), so a setting goes to the store here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # multiple fill values, non-conforming missing_value
        if use_zarr_fill_value_as_mask is None:
            return xr.open_dataset(path, engine="zarr", consolidated=False).load()
        from xarray.backends.zarr import ZarrStore

        store = ZarrStore.open_group(str(path), mode="r", consolidated=False,
                                     use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        return xr.open_dataset(store).load()


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


NAMES = list(XARRAY_WRITTEN) + list(OTHER_WRITERS)


@pytest.mark.parametrize("as_mask", [None, True, False])
@pytest.mark.parametrize("fmt", [2, 3])
def test_decoded_values_are_xarrays_bit_for_bit(stores, fmt, as_mask):
    want = _xarray(stores[fmt], use_zarr_fill_value_as_mask=as_mask)
    group = zarrflow.open_group(stores[fmt])
    masked_some = False
    for name in NAMES:
        if name not in group.keys():
            continue
        arr = group[name]
        raw = arr[...]
        d = xarray_decoding(arr.attrs, arr.dtype, arr.zarr_format, arr.fill_value,
                            use_zarr_fill_value_as_mask=as_mask)
        got = raw if d is None else d.decode(raw, d.decoded_dtype)
        w = want[name].values
        assert got.dtype == w.dtype, name
        assert np.array_equal(_bits(got), _bits(w)), (name, got, w)
        masked_some |= d is not None and bool(d.masked)
    assert masked_some


@pytest.mark.parametrize("fmt", [2, 3])
def test_what_xarray_masks(stores, fmt):
    """The divergent cases, named: an unpacked v2 integer array with only a fill_value is masked,
    the v2 fill_value wins over a _FillValue attribute, float32 compares in float64."""
    group = zarrflow.open_group(stores[fmt])

    def masked(name, **kw):
        a = group[name]
        d = xarray_decoding(dict(a.attrs, **kw), a.dtype, a.zarr_format, a.fill_value)
        return None if d is None else sorted(float(v) for v in d.masked)

    if fmt == 2:
        assert masked("int_zarr_fill_zero") == [0.0]
        assert masked("int_fill_zero", _FillValue=5) == [0.0]
    else:
        assert masked("int_default_fill") is None  # the v3 fill_value is storage only
        assert masked("int_fill_zero") == [0.0]
    assert masked("float_missing_1e20") == []
    assert masked("float_missing_exact") == [float(F32_1E20)]
    assert masked("int_missing_list") == ([-3.0, 0.0, 7.0] if fmt == 2 else [-3.0, 7.0])
    assert masked("unsigned") == [255.0]


def test_loader_limits():
    i8 = np.dtype("int8")
    with pytest.raises(CFAttributeError, match="_Unsigned 'true'"):
        cf_decoding({"_Unsigned": "true"}, i8, 3, np.int8(0))
    with pytest.raises(CFAttributeError, match="at most 4"):
        cf_decoding({"missing_value": [1, 2, 3, 4, 5]}, i8, 3, np.int8(0))
    # masks nothing the stored values could hold: read as stored
    assert cf_decoding({"missing_value": [1000]}, i8, 3, np.int8(0)) is None
    with pytest.raises(CFAttributeError, match="scale_factor"):
        xarray_decoding({"scale_factor": "0.5"}, i8, 3, np.int8(0))
    with pytest.raises(CFAttributeError, match="_FillValue"):
        xarray_decoding({"_FillValue": "not base64!"}, np.dtype("float32"), 3, np.float32(0))


def test_rechunk_names_the_array_whose_attributes_it_cannot_use():
    f4 = np.dtype("float32")
    with pytest.raises(errors.MetadataError, match="'group/t'.*scale_factor"):
        unpack_decoding("group/t", {"scale_factor": [1.0, 2.0]}, f4, 2, None)
    with pytest.raises(errors.MetadataError, match="'group/t'.*_FillValue"):
        carry_fill("group/t", {"_FillValue": "AAAA"}, f4, np.float32(0), 3, 2)
    with pytest.raises(errors.MetadataError, match="'group/t'.*several values"):
        carry_fill("group/t", {"_FillValue": [1, 2]}, f4, None, 2, 3)


@pytest.mark.parametrize("decode", [False, True])
@pytest.mark.parametrize("src_fmt, out_fmt", [(2, 2), (2, 3), (3, 2), (3, 3)])
def test_rechunk_copies_read_back_as_the_source(stores, tmp_path, src_fmt, out_fmt, decode):
    dst = tmp_path / "out.zarr"
    rechunk(stores[src_fmt], dst, Options(zarr_format=out_fmt, decode_cf=decode),
            progress=False)
    want, got = _xarray(stores[src_fmt]), _xarray(dst)
    for name in want.data_vars:
        g, w = got[name].values, want[name].values
        if decode:
            assert np.array_equal(_bits(g), _bits(w.astype(g.dtype))), name
        else:
            assert g.dtype == w.dtype and np.array_equal(_bits(g), _bits(w)), name
