// zarr-python 3 writes numcodecs filters (`numcodecs.delta`, `numcodecs.fixedscaleoffset`,
// `numcodecs.astype`, `numcodecs.quantize`, `numcodecs.bitround`, `numcodecs.packbits`) into a
// Zarr v3 "codecs" list as array→array codecs, before `bytes`:
//   [{"name": "numcodecs.delta", "configuration": {"dtype": "int32", "astype": "int16"}},
//    {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", ...}]
// Each only maps a flat run of elements to another (same count, or bits for packbits), so the
// chain decodes the same as one where `bytes` serialises the array's own dtype natively and the
// filters run after it as bytes→bytes codecs, in their original order, the last one reading the
// stored byte order:
//   [{"name": "bytes", "configuration": {"endian": "little"}},
//    {"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i2"}}, zstd ...]
// The zarrflow codecs of those names are these bytes→bytes forms (delta.cc, ...). Transposes stay
// where they are: the element-wise filters commute with them; delta and packbits, which depend on
// element order, may not be followed by one.
#pragma once

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// The "codecs" list with zarr-python's numcodecs filters moved after the array→bytes codec as
// above, for chunks like `spec` (the array's decoded side); unchanged when it has none. A filter
// zarrflow cannot move (before `sharding_indexed`, delta before a transpose) or an unknown
// `numcodecs.*` array→array codec is kUnimplemented naming it; a dtype that contradicts the chain
// is kInvalidMetadata.
Result<nlohmann::json> lower_numcodecs_filters(const nlohmann::json& codecs, const ChunkSpec& spec);

}  // namespace zarrflow
