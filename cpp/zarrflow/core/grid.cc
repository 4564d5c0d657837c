#include "zarrflow/core/grid.h"

namespace zarrflow {

Selection Selection::full(const Shape& shape) {
  return {Shape(shape.size(), 0), shape, Shape(shape.size(), 1)};
}

bool Selection::is_full(const Shape& shape) const {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (start[i] != 0 || count[i] != shape[i] || (step[i] != 1 && shape[i] > 1)) return false;
  return true;
}

std::string format_coords(const Shape& c) {
  std::string s = "[";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? "," : "") + std::to_string(c[i]);
  return s + "]";
}

bool Selection::empty() const {
  for (auto c : count)
    if (c == 0) return true;
  return false;
}

std::vector<DimPiece> split_dim(std::int64_t start, std::int64_t count, std::int64_t step,
                                std::int64_t chunk_size) {
  std::vector<DimPiece> out;
  if (count <= 0) return out;
  if (step == 1) {
    const std::int64_t first = start / chunk_size, last = (start + count - 1) / chunk_size;
    out.reserve(static_cast<std::size_t>(last - first + 1));
    for (std::int64_t c = first; c <= last; ++c) {
      const std::int64_t lo = std::max(start, c * chunk_size);
      const std::int64_t hi = std::min(start + count, (c + 1) * chunk_size);
      out.push_back({c, lo - c * chunk_size, hi - lo, lo - start});
    }
    return out;
  }
  // Strided: walk chunk by chunk from the first selected element.
  std::int64_t k = 0;
  while (k < count) {
    const std::int64_t pos = start + k * step;
    const std::int64_t c = pos / chunk_size;
    const std::int64_t chunk_end = (c + 1) * chunk_size;  // exclusive
    const std::int64_t n = std::min(count - k, (chunk_end - 1 - pos) / step + 1);
    out.push_back({c, pos - c * chunk_size, n, k});
    k += n;
  }
  return out;
}

std::vector<ChunkBlock> chunk_blocks(const Selection& sel, const Shape& chunk_shape) {
  const std::size_t nd = chunk_shape.size();
  std::vector<std::vector<DimPiece>> pieces(nd);
  std::size_t total = 1;
  for (std::size_t i = 0; i < nd; ++i) {
    pieces[i] = split_dim(sel.start[i], sel.count[i], sel.step[i], chunk_shape[i]);
    total *= pieces[i].size();
  }
  std::vector<ChunkBlock> out;
  if (total == 0) return out;
  out.reserve(total);
  std::vector<std::size_t> idx(nd, 0);
  for (;;) {
    ChunkBlock b;
    b.chunk.resize(nd);
    b.out_offset.resize(nd);
    b.in_chunk.start.resize(nd);
    b.in_chunk.count.resize(nd);
    b.in_chunk.step = sel.step;
    for (std::size_t i = 0; i < nd; ++i) {
      const DimPiece& p = pieces[i][idx[i]];
      b.chunk[i] = p.chunk;
      b.in_chunk.start[i] = p.start_in_chunk;
      b.in_chunk.count[i] = p.count;
      b.out_offset[i] = p.out_offset;
    }
    out.push_back(std::move(b));
    std::size_t d = nd;
    while (d > 0) {
      --d;
      if (++idx[d] < pieces[d].size()) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
    if (nd == 0) return out;
  }
}

StridedView block_view(const StridedView& dest, const ChunkBlock& block) {
  StridedView v;
  v.data = dest.data;
  for (std::size_t i = 0; i < block.out_offset.size(); ++i)
    v.data += block.out_offset[i] * dest.strides[i];
  v.shape = block.in_chunk.count;
  v.strides = dest.strides;
  return v;
}

}  // namespace zarrflow
