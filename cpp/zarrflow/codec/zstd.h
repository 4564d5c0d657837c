// The `zstd` bytes→bytes codec (Zarr v3 `zstd`, numcodecs `zstd`).
#pragma once

#include <memory>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// A zstd decoder; `level` and `checksum` only describe how the data was written.
std::shared_ptr<const BytesToBytesCodec> make_zstd_codec(int level, bool checksum);

}  // namespace zarrflow
