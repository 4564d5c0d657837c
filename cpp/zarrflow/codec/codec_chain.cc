#include "zarrflow/codec/codec_chain.h"

#include <nlohmann/json.hpp>

#include "zarrflow/codec/numcodecs_v3.h"
#include "zarrflow/codec/registry.h"

namespace zarrflow {

Result<CodecChain> CodecChain::from_v3_json(const nlohmann::json& stored, const ChunkSpec& spec) {
  ZF_ASSIGN_OR_RETURN(const nlohmann::json codecs, lower_numcodecs_filters(stored, spec));
  if (!codecs.is_array())
    return invalid_metadata("'codecs' must be an array, got " + codecs.dump());
  std::vector<std::shared_ptr<const Codec>> built;
  ChunkSpec current = spec;
  for (std::size_t i = 0; i < codecs.size(); ++i) {
    const auto& c = codecs[i];
    std::string name;
    nlohmann::json cfg = nlohmann::json::object();
    if (c.is_string()) {
      name = c.get<std::string>();
    } else if (c.is_object() && c.contains("name") && c["name"].is_string()) {
      name = c["name"].get<std::string>();
      for (const auto& [k, v] : c.items()) {
        if (k == "name") continue;
        if (k == "configuration") {
          if (!v.is_object() && !v.is_null())
            return invalid_metadata("codec '" + name + "': 'configuration' must be an object");
          if (v.is_object()) cfg = v;
        } else if (k == "must_understand") {
          if (!v.is_boolean())
            return invalid_metadata("codec '" + name + "': 'must_understand' must be a boolean");
        } else {
          return invalid_metadata("codec '" + name + "': unknown member '" + k + "'");
        }
      }
    } else {
      return invalid_metadata("codecs[" + std::to_string(i) +
                              "] must be a name or an object with a 'name', got " + c.dump());
    }
    ZF_ASSIGN_OR_RETURN(auto codec, CodecRegistry::v3().create(name, cfg, current));
    if (codec->kind() == CodecKind::kArrayToArray)
      current = static_cast<const ArrayToArrayCodec&>(*codec).encoded_spec(current);
    built.push_back(std::move(codec));
  }
  return from_codecs(std::move(built), spec);
}

Result<CodecChain> CodecChain::from_codecs(std::vector<std::shared_ptr<const Codec>> codecs,
                                           const ChunkSpec& spec) {
  CodecChain chain;
  chain.spec_ = spec;
  ChunkSpec current = spec;
  for (auto& c : codecs) {
    switch (c->kind()) {
      case CodecKind::kArrayToArray:
        if (chain.a2b_)
          return invalid_metadata("codec '" + c->name() +
                                  "' (array→array) comes after the array→bytes codec");
        chain.a2a_.push_back(std::static_pointer_cast<const ArrayToArrayCodec>(c));
        current = chain.a2a_.back()->encoded_spec(current);
        break;
      case CodecKind::kArrayToBytes:
        if (chain.a2b_)
          return invalid_metadata("more than one array→bytes codec ('" + chain.a2b_->name() +
                                  "' and '" + c->name() + "')");
        chain.a2b_ = std::static_pointer_cast<const ArrayToBytesCodec>(c);
        chain.a2b_spec_ = current;
        break;
      case CodecKind::kBytesToBytes:
        if (!chain.a2b_)
          return invalid_metadata("codec '" + c->name() +
                                  "' (bytes→bytes) comes before the array→bytes codec");
        chain.b2b_.push_back(std::static_pointer_cast<const BytesToBytesCodec>(c));
        break;
    }
  }
  if (!chain.a2b_) return invalid_metadata("no array→bytes codec (such as 'bytes') in 'codecs'");
  return chain;
}

bool CodecChain::supports_partial_read() const {
  return b2b_.empty() && a2b_->supports_partial_read();
}

std::optional<std::int64_t> CodecChain::encoded_size() const {
  auto size = a2b_->encoded_size(a2b_spec_);
  for (const auto& c : b2b_) {
    if (!size) return std::nullopt;
    size = c->encoded_size(*size);
  }
  return size;
}

std::optional<std::uint64_t> CodecChain::max_encoded_size() const {
  auto size = a2b_->max_encoded_size(a2b_spec_);
  for (const auto& c : b2b_) {
    if (!size) return std::nullopt;
    size = c->max_encoded_size(*size);
  }
  return size;
}

std::uint64_t stored_size_cap(std::uint64_t bound) {
  const auto cap = add_bounds(bound, add_bounds(bound / 16, std::uint64_t{64} << 10));
  return cap.value_or(UINT64_MAX);
}

bool CodecChain::is_identity() const {
  return a2a_.empty() && b2b_.empty() && a2b_->is_native_layout(a2b_spec_) &&
         a2b_->encoded_size(a2b_spec_) == a2b_spec_.nbytes();
}

std::string CodecChain::describe() const {
  std::string s;
  auto add = [&](const Codec& c) { s += (s.empty() ? "" : " | ") + c.describe(); };
  for (const auto& c : a2a_) add(*c);
  add(*a2b_);
  for (const auto& c : b2b_) add(*c);
  return s;
}

void CodecChain::to_encoded(Selection& sel, StridedView& dest) const {
  for (const auto& c : a2a_) c->to_encoded(sel, dest);
}

Status CodecChain::plan_partial_read(const ByteReader& reader, const Selection& sel,
                                     const StridedView& dest, const DecodeContext& ctx,
                                     std::vector<LeafRead>& reads, std::vector<StridedView>& fills,
                                     bool& found) const {
  if (!supports_partial_read()) return internal_error(describe() + " cannot read partially");
  Selection s = sel;
  StridedView d = dest;
  to_encoded(s, d);
  return a2b_->plan_partial_read(reader, a2b_spec_, s, d, ctx, reads, fills, found);
}

Status CodecChain::decode_into(ConstByteSpan stored, const Selection& sel, const StridedView& dest,
                               const DecodeContext& ctx) const {
  Selection s = sel;
  StridedView d = dest;
  to_encoded(s, d);
  if (b2b_.empty()) return a2b_->decode_into(stored, a2b_spec_, s, d, ctx);

  // Exact output size of each bytes→bytes codec where the chain fixes it: the array→bytes size,
  // then each codec's encoded_size of the one before (crc32c +4, v2 filters, ...).
  const std::size_t n = b2b_.size();
  std::vector<std::optional<std::size_t>> expected(n);
  if (auto fixed = a2b_->encoded_size(a2b_spec_)) expected[0] = static_cast<std::size_t>(*fixed);
  for (std::size_t i = 1; i < n; ++i) {
    if (!expected[i - 1]) break;
    if (auto e = b2b_[i - 1]->encoded_size(static_cast<std::int64_t>(*expected[i - 1])))
      expected[i] = static_cast<std::size_t>(*e);
  }
  // Two scratch buffers alternate; a codec may return a view of its input (crc32c), so the next
  // output always goes to the buffer that does not hold the current bytes.
  Buffer scratch[2];
  ConstByteSpan cur = stored;
  auto free_buffer = [&]() -> Buffer& {
    const std::byte* p = cur.data();
    const bool in0 = scratch[0].data() != nullptr && p >= scratch[0].data() &&
                     p < scratch[0].data() + scratch[0].capacity();
    return in0 ? scratch[1] : scratch[0];
  };
  for (std::size_t i = n; i-- > 1;) {
    Buffer& out = free_buffer();
    if (expected[i]) out = ctx.acquire(*expected[i]);
    ZF_ASSIGN_OR_RETURN(cur, b2b_[i]->decode(cur, expected[i], out));
  }
  // Decompress straight into the destination when it is the chunk's dense native layout.
  if (expected[0] && a2b_->is_native_layout(a2b_spec_) && s.is_full(a2b_spec_.shape) &&
      d.is_c_contiguous(a2b_spec_.dtype.size))
    return b2b_[0]->decode_into(cur, ByteSpan(d.data, *expected[0]));
  Buffer& last = free_buffer();
  if (expected[0]) last = ctx.acquire(*expected[0]);
  ZF_ASSIGN_OR_RETURN(cur, b2b_[0]->decode(cur, expected[0], last));
  return a2b_->decode_into(cur, a2b_spec_, s, d, ctx);
}

Status CodecChain::partial_decode_into(const ByteReader& reader, const Selection& sel,
                                       const StridedView& dest, const DecodeContext& ctx,
                                       bool& found) const {
  if (supports_partial_read()) {
    Selection s = sel;
    StridedView d = dest;
    to_encoded(s, d);
    return a2b_->partial_decode_into(reader, a2b_spec_, s, d, ctx, found);
  }
  ZF_ASSIGN_OR_RETURN(auto size, reader.size());
  found = size.has_value();
  if (!found) return {};
  const ByteRange all = ByteRange::of(0, *size);
  ZF_ASSIGN_OR_RETURN(auto parts, reader.read({&all, 1}));
  if (!parts) {
    found = false;
    return {};
  }
  return decode_into((*parts)[0].span(), sel, dest, ctx);
}

}  // namespace zarrflow
