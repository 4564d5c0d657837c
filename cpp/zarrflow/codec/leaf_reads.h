// Fetching and decoding the leaf reads of a partial read (ArrayToBytesCodec::plan_partial_read):
// nested shards each through a window of the value (they read their own index first), all other
// leaves in coalesced requests, one per group of nearby ranges. The sharding codec decodes its
// leaves into fixed-size elements; the variable-length reader (zarr/vlen_read.h) into its slots.
#pragma once

#include <functional>
#include <span>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// Decodes a nested shard's leaf through `window`, a reader of the leaf's range of the value.
using ReadNestedLeaf = std::function<Status(const LeafRead& leaf, const ByteReader& window)>;
// Decodes a leaf from its stored bytes.
using DecodeLeaf = std::function<Status(const LeafRead& leaf, ConstByteSpan stored)>;

// Reads and decodes `leaves` (all of one value behind `reader`, through one chain) in parallel
// on ctx.pool: through `read_nested` when their chain reads partially (nested shards), else
// ranges coalesced with ctx.coalesce and each leaf's bytes to `decode`. An error names the leaf
// ("inner chunk [0,3]").
Status read_leaves(const ByteReader& reader, std::span<const LeafRead> leaves,
                   const DecodeContext& ctx, const ReadNestedLeaf& read_nested,
                   const DecodeLeaf& decode);

}  // namespace zarrflow
