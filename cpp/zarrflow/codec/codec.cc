#include "zarrflow/codec/codec.h"

#include <climits>
#include <new>

namespace zarrflow {

std::string LeafRead::where() const { return "inner chunk " + format_coords(inner); }

std::int64_t ChunkSpec::num_elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;  // bounded at metadata validation time
  return n;
}

Status ArrayToBytesCodec::partial_decode_into(const ByteReader&, const ChunkSpec&, const Selection&,
                                              const StridedView&, const DecodeContext&,
                                              bool&) const {
  return internal_error(name() + " does not support partial reads");
}

Status ArrayToBytesCodec::plan_partial_read(const ByteReader&, const ChunkSpec&, const Selection&,
                                            const StridedView&, const DecodeContext&,
                                            std::vector<LeafRead>&, std::vector<StridedView>&,
                                            bool&) const {
  return internal_error(name() + " does not support partial reads");
}

std::optional<std::uint64_t> ArrayToBytesCodec::max_encoded_size(const ChunkSpec& spec) const {
  const auto fixed = encoded_size(spec);
  if (!fixed || *fixed < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*fixed);
}

std::optional<std::uint64_t> BytesToBytesCodec::max_encoded_size(std::uint64_t decoded) const {
  if (decoded > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  const auto fixed = encoded_size(static_cast<std::int64_t>(decoded));
  if (!fixed || *fixed < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*fixed);
}

std::optional<std::uint64_t> add_bounds(std::optional<std::uint64_t> a,
                                        std::optional<std::uint64_t> b) {
  std::uint64_t sum = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &sum)) return std::nullopt;
  return sum;
}

Status BytesToBytesCodec::decode_into(ConstByteSpan in, ByteSpan out) const {
  Buffer scratch;
  ZF_ASSIGN_OR_RETURN(ConstByteSpan decoded, decode(in, out.size(), scratch));
  ZF_RETURN_IF_ERROR(check_decoded_size(name(), decoded.size(), out.size()));
  if (!decoded.empty()) std::copy(decoded.begin(), decoded.end(), out.begin());
  return {};
}

Status resize_scratch(std::string_view codec, Buffer& scratch, std::size_t n) {
  try {
    scratch.resize(n);
  } catch (const std::bad_alloc&) {
    return resource_exhausted(std::string(codec) + ": out of memory allocating " +
                              std::to_string(n) + " bytes for the output");
  }
  return {};
}

Result<ConstByteSpan> decode_known_size(const BytesToBytesCodec& codec, ConstByteSpan in,
                                        std::size_t n, Buffer& scratch) {
  ZF_RETURN_IF_ERROR(resize_scratch(codec.name(), scratch, n));
  ZF_RETURN_IF_ERROR(codec.decode_into(in, scratch.span()));
  return ConstByteSpan(scratch.span());
}

Status check_decoded_size(std::string_view codec, std::size_t actual, std::size_t expected) {
  if (actual == expected) return {};
  return corrupt_data(std::string(codec) + ": decoded " + std::to_string(actual) +
                      " bytes, expected " + std::to_string(expected));
}

}  // namespace zarrflow
