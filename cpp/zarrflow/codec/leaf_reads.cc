#include "zarrflow/codec/leaf_reads.h"

#include <vector>

#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/store/range_coalescer.h"

namespace zarrflow {

Status read_leaves(const ByteReader& reader, std::span<const LeafRead> leaves,
                   const DecodeContext& ctx, const ReadNestedLeaf& read_nested,
                   const DecodeLeaf& decode) {
  if (leaves.empty()) return {};
  if (leaves.front().chain->supports_partial_read()) {
    return parallel_for(ctx.pool, leaves.size(), [&](std::size_t i) -> Status {
      const LeafRead& it = leaves[i];
      WindowReader window(reader, it.range.offset, it.range.length);
      return read_nested(it, window).annotate(it.where());
    });
  }
  std::vector<ByteRange> ranges;
  ranges.reserve(leaves.size());
  for (const auto& it : leaves) ranges.push_back(it.range);
  const std::vector<MergedRange> groups = coalesce_ranges(ranges, ctx.coalesce);
  return parallel_for(ctx.pool, groups.size(), [&](std::size_t gi) -> Status {
    const MergedRange& g = groups[gi];
    const ByteRange whole = ByteRange::of(g.offset, g.length);
    ZF_ASSIGN_OR_RETURN(auto parts, reader.read({&whole, 1}));
    if (!parts) return corrupt_data("shard disappeared while it was being read");
    const ConstByteSpan bytes = (*parts)[0].span();
    for (std::size_t i : g.parts) {
      const LeafRead& it = leaves[i];
      ZF_RETURN_IF_ERROR_CTX(decode(it, bytes.subspan(it.range.offset - g.offset, it.range.length)),
                             it.where());
    }
    return {};
  });
}

}  // namespace zarrflow
