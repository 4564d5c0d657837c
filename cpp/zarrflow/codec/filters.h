// numcodecs filters as bytes→bytes codecs: `delta`, `fixedscaleoffset`, `astype` and `shuffle`
// (Zarr v2 filter ids; `shuffle` also as Zarr v3 `numcodecs.shuffle`).
#pragma once

#include <cstdint>

namespace zarrflow {

// IEEE 754 binary16 <-> binary64, exactly as NumPy converts: half→double is exact; double→half
// rounds to nearest even, overflows to ±inf, and keeps a NaN's sign and top payload bits.
double half_to_double(std::uint16_t h);
std::uint16_t double_to_half(double d);

}  // namespace zarrflow
