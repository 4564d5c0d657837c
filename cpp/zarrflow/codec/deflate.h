// The DEFLATE-based bytes→bytes codecs: `gzip` (Zarr v3 and numcodecs) and numcodecs `zlib`.
#pragma once

#include <memory>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

enum class DeflateWrapper : std::uint8_t { kGzip, kZlib };

// A gzip or zlib decoder; `level` only describes how the data was written.
std::shared_ptr<const BytesToBytesCodec> make_deflate_codec(DeflateWrapper wrapper, int level);

}  // namespace zarrflow
