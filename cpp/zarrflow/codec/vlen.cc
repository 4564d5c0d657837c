#include "zarrflow/codec/vlen.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

constexpr std::size_t kHeader = 4;  // uint32 item count, and uint32 length before each item

// Length of the valid UTF-8 sequence starting at text[i] (0 when invalid), per RFC 3629.
std::size_t utf8_sequence(const unsigned char* p, std::size_t left) {
  const unsigned c = p[0];
  auto cont = [&](std::size_t k) { return k < left && (p[k] & 0xc0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && p[1] < 0xa0) return 0;   // overlong
    if (c == 0xed && p[1] >= 0xa0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xf4 && p[1] >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

Result<std::shared_ptr<const Codec>> make(VlenCodec::Content content, const char* name,
                                          DTypeKind expected, const nlohmann::json& cfg,
                                          const ChunkSpec& spec, bool v2) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  if (content == VlenCodec::Content::kArray) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "dtype"}));
  } else if (v2) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id"}));
  } else {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {}));
  }
  if (spec.dtype.kind != expected)
    return invalid_metadata("encodes " + DataType{expected, 0}.v3_name() +
                            " elements, the array's data type is " + spec.dtype.v3_name());
  DataType element;
  if (content == VlenCodec::Content::kArray) {
    ZF_ASSIGN_OR_RETURN(std::string typestr, config::get_string(cfg, "dtype"));
    ZF_ASSIGN_OR_RETURN(TypedEndian te, parse_numpy_typestr(typestr));
    if (!te.dtype.is_numeric())
      return unimplemented("field 'dtype': arrays of " + typestr + " are not supported");
    element = te.dtype;
  }
  return std::shared_ptr<const Codec>(std::make_shared<VlenCodec>(content, name, element));
}

}  // namespace

std::size_t utf8_invalid_at(ConstByteSpan text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time.
    if (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const std::size_t len = utf8_sequence(p + i, n - i);
    if (len == 0) return i;
    i += len;
  }
  return n;
}

std::string VlenCodec::describe() const {
  if (content_ == Content::kArray) return name_ + "(" + element_.numpy_str() + ")";
  return name_;
}

Status VlenCodec::decode_into(ConstByteSpan, const ChunkSpec& spec, const Selection&,
                              const StridedView&, const DecodeContext&) const {
  return unimplemented(name_ + ": " + spec.dtype.v3_name() +
                       " elements have no fixed size; they are read with read_vlen");
}

Status VlenCodec::split(ConstByteSpan encoded, std::int64_t count,
                        std::vector<VlenItem>& items) const {
  const std::size_t total = encoded.size();
  if (total < kHeader)
    return corrupt_data(name_ + ": chunk of " + std::to_string(total) +
                        " bytes is too short for its 4-byte item count");
  const std::uint32_t stored = load_le32(encoded.data());
  if (static_cast<std::int64_t>(stored) != count)
    return corrupt_data(name_ + ": chunk holds " + std::to_string(stored) +
                        " items, the chunk shape has " + std::to_string(count) + " elements");
  // Every item needs at least its 4-byte length: a count the bytes cannot hold is rejected before
  // anything is allocated for it.
  if ((total - kHeader) / kHeader < stored)
    return corrupt_data(name_ + ": chunk of " + std::to_string(total) + " bytes cannot hold " +
                        std::to_string(stored) + " items");
  items.resize(stored);
  std::size_t pos = kHeader;
  for (std::uint32_t i = 0; i < stored; ++i) {
    if (total - pos < kHeader)
      return corrupt_data(name_ + ": item " + std::to_string(i) + " of " + std::to_string(stored) +
                          ": its length lies past the end of the chunk");
    const std::uint32_t len = load_le32(encoded.data() + pos);
    pos += kHeader;
    if (len > total - pos)
      return corrupt_data(name_ + ": item " + std::to_string(i) + " of " + std::to_string(stored) +
                          " claims " + std::to_string(len) + " bytes, only " +
                          std::to_string(total - pos) + " are left");
    const ConstByteSpan bytes = encoded.subspan(pos, len);
    if (content_ == Content::kUtf8) {
      const std::size_t bad = utf8_invalid_at(bytes);
      if (bad != len)
        return corrupt_data(name_ + ": item " + std::to_string(i) +
                            " is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
    } else if (content_ == Content::kArray && len % element_.size != 0) {
      return corrupt_data(name_ + ": item " + std::to_string(i) + " has " + std::to_string(len) +
                          " bytes, not a whole number of " + element_.numpy_str() + " elements");
    }
    items[i] = {bytes.data(), len};
    pos += len;
  }
  if (pos != total)
    return corrupt_data(name_ + ": " + std::to_string(total - pos) + " bytes follow the last item");
  return {};
}

const VlenCodec* as_vlen_codec(const ArrayToBytesCodec& codec) {
  return dynamic_cast<const VlenCodec*>(&codec);
}

void register_vlen_codecs(CodecRegistry& v3, CodecRegistry& v2) {
  using C = VlenCodec::Content;
  v3.add("vlen-utf8", [](const nlohmann::json& cfg, const ChunkSpec& spec) {
    return make(C::kUtf8, "vlen-utf8", DTypeKind::kVlenString, cfg, spec, false);
  });
  v3.add("vlen-bytes", [](const nlohmann::json& cfg, const ChunkSpec& spec) {
    return make(C::kBytes, "vlen-bytes", DTypeKind::kVlenBytes, cfg, spec, false);
  });
  v2.add("vlen-utf8", [](const nlohmann::json& cfg, const ChunkSpec& spec) {
    return make(C::kUtf8, "vlen-utf8", DTypeKind::kVlenString, cfg, spec, true);
  });
  v2.add("vlen-bytes", [](const nlohmann::json& cfg, const ChunkSpec& spec) {
    return make(C::kBytes, "vlen-bytes", DTypeKind::kVlenBytes, cfg, spec, true);
  });
  v2.add("vlen-array", [](const nlohmann::json& cfg, const ChunkSpec& spec) {
    return make(C::kArray, "vlen-array", DTypeKind::kVlenArray, cfg, spec, true);
  });
}

}  // namespace zarrflow
