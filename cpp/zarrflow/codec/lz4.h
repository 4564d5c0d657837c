// The numcodecs `lz4` bytes→bytes codec (Zarr v2 id `lz4`, v3 `numcodecs.lz4`).
#pragma once

#include <memory>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// An LZ4 decoder for numcodecs framing; `acceleration` only describes how the data was written.
std::shared_ptr<const BytesToBytesCodec> make_lz4_codec(int acceleration);

}  // namespace zarrflow
