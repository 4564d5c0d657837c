// CRC-32C (Castagnoli) checksums: the `crc32c` bytes→bytes codec and the helper it is built on.
#pragma once

#include <cstdint>

#include "zarrflow/core/buffer.h"

namespace zarrflow {

// CRC-32C of `data` as the Zarr `crc32c` codec stores it (crc32c("123456789") == 0xE3069283).
// Uses ISA-L's hardware-accelerated implementation; any length.
std::uint32_t crc32c(ConstByteSpan data);

}  // namespace zarrflow
