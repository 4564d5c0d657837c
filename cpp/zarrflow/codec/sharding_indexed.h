// Queries on the sharding codec that the array layer needs (the codec itself is internal).
#pragma once

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// The inner chunk shape when `codec` is sharding_indexed, else null.
const Shape* sharding_inner_shape(const ArrayToBytesCodec& codec);

}  // namespace zarrflow
