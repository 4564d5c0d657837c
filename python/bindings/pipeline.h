// What the batch bindings share (pipeline.cc: read_batch, caches; engine.cc: the loader's
// engine).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "gpu.h"
#include "zarrflow/pipeline/batch_request.h"

namespace zarrflow::py {

using MeanStd =
    nanobind::ndarray<const float, nanobind::ndim<2>, nanobind::c_contig, nanobind::device::cpu>;
// CF decoding of one array as Python passes it: (packed, scale_factor, add_offset, raw values to
// mask as the source type's bits).
using CfTuple = std::tuple<bool, double, double, std::vector<std::uint64_t>>;

std::optional<std::vector<CfDecoding>> cf_decoding(const std::optional<std::vector<CfTuple>>& cf);

#ifdef ZARRFLOW_HAVE_CUDA
// The chunk cache `h` holds, made for `reader` (its buffers go back to that reader's pools), or
// null for None; raises for a cache of another reader.
gpu::ChunkCache* cache_of(nanobind::handle h, const GpuReader& reader);
#endif

}  // namespace zarrflow::py
