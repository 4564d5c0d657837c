// The transpose codec, also used directly for Zarr v2 arrays stored in Fortran order.
#pragma once

#include <memory>
#include <vector>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// A transpose codec for a `ndim`-d chunk; kInvalidMetadata unless `order` is a permutation.
Result<std::shared_ptr<const Codec>> make_transpose(std::vector<std::int64_t> order,
                                                    std::size_t ndim);

}  // namespace zarrflow
