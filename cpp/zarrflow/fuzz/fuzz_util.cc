#include "zarrflow/fuzz/fuzz_util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "zarrflow/codec/registry.h"

namespace zarrflow::fuzz {

const char* const kTypestrs[] = {"|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4",
                                 ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8",
                                 "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"};
const std::size_t kNumTypestrs = sizeof(kTypestrs) / sizeof(kTypestrs[0]);

const char* const kV3DataTypes[] = {"bool",    "int8",    "int16",    "int32",     "int64",
                                    "uint8",   "uint16",  "uint32",   "uint64",    "float16",
                                    "float32", "float64", "bfloat16", "complex64", "complex128",
                                    "r8",      "r24",     "r40"};
const std::size_t kNumV3DataTypes = sizeof(kV3DataTypes) / sizeof(kV3DataTypes[0]);

std::uint8_t InputReader::u8() { return pos_ < size_ ? data_[pos_++] : 0; }

std::uint16_t InputReader::u16() {
  const std::uint16_t lo = u8();
  return static_cast<std::uint16_t>(lo | u8() << 8);
}

std::uint32_t InputReader::u32() {
  const std::uint32_t lo = u16();
  return lo | std::uint32_t{u16()} << 16;
}

ConstByteSpan InputReader::rest() const {
  return {reinterpret_cast<const std::byte*>(data_) + pos_, size_ - pos_};
}

std::string_view InputReader::rest_text() const {
  return {reinterpret_cast<const char*>(data_) + pos_, size_ - pos_};
}

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz target: guarantee broken: %s\n", what);
  std::abort();
}

void require_ok(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "fuzz target: guarantee broken: %s: %s\n", what, s.message().c_str());
  std::abort();
}

void require_not_internal(const Status& s) {
  if (s.code() != ErrorCode::kInternal) return;
  std::fprintf(stderr, "fuzz target: internal error on malformed input: %s\n", s.message().c_str());
  std::abort();
}

void note(const char* what, const Status& s) {
  static const bool verbose = std::getenv("ZARRFLOW_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "%s: %s\n", what, s.ok() ? "OK" : s.message().c_str());
}

void touch(ConstByteSpan bytes) {
  unsigned sum = 0;
  for (std::byte b : bytes) sum += static_cast<unsigned>(b);
  // An empty asm statement that "uses" the sum keeps the loop from being optimised away.
  asm volatile("" : : "r"(sum));
}

std::vector<std::string_view> split_documents(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string_view> docs;
  std::string_view all(reinterpret_cast<const char*>(data), size);
  while (true) {
    const std::size_t nul = all.find('\0');
    docs.push_back(all.substr(0, nul));
    if (nul == std::string_view::npos) break;
    all.remove_prefix(nul + 1);
  }
  return docs;
}

void check_bytes_to_bytes_decoder(const BytesToBytesCodec& codec, InputReader& in) {
  const bool pass_size = (in.u8() & 1) != 0;
  const std::size_t declared = in.u32() % (kMaxDecodedBytes + 1);
  const ConstByteSpan encoded = in.rest();

  Buffer scratch;
  auto decoded = codec.decode(encoded, pass_size ? std::optional(declared) : std::nullopt, scratch);
  note("decode", decoded.status());
  if (decoded.ok()) {
    if (pass_size) require(decoded->size() == declared, "decode() succeeded with another size");
    touch(*decoded);
  } else {
    require_not_internal(decoded.status());
  }

  Buffer out(declared);
  const Status s = codec.decode_into(encoded, out.span());
  note("decode_into", s);
  require_not_internal(s);
  if (s.ok()) touch(out.span());
}

Shape read_shape(InputReader& in, int max_ndim, int max_extent) {
  Shape shape(static_cast<std::size_t>(1 + in.u8() % max_ndim));
  for (auto& n : shape) n = 1 + in.u8() % max_extent;
  return shape;
}

Selection read_selection(InputReader& in, const Shape& shape) {
  Selection sel;
  for (const std::int64_t n : shape) {
    const std::int64_t start = in.u8() % n;
    const std::int64_t step = 1 + in.u8() % 3;
    const std::int64_t most = (n - 1 - start) / step + 1;  // elements from start to the end
    sel.start.push_back(start);
    sel.step.push_back(step);
    sel.count.push_back(1 + in.u8() % most);
  }
  return sel;
}

Destination make_destination(const Shape& count, std::int64_t elem, bool reversed_strides) {
  std::int64_t n = 1;
  for (const std::int64_t c : count) n *= c;
  Destination d;
  d.bytes.resize(static_cast<std::size_t>(n * elem));
  d.view = StridedView{d.bytes.data(), count, c_strides(count, elem)};
  if (reversed_strides) {
    std::int64_t stride = elem;
    for (std::size_t i = 0; i < count.size(); ++i) {
      d.view.strides[i] = stride;
      stride *= count[i];
    }
  }
  return d;
}

Status decode_selection(const CodecChain& chain, ConstByteSpan stored, const Selection& sel,
                        Destination& dest) {
  const Status s = chain.decode_into(stored, sel, dest.view, DecodeContext{});
  note("decode_into", s);
  require_not_internal(s);
  return s;
}

std::shared_ptr<const BytesToBytesCodec> make_v2_codec(const nlohmann::json& config) {
  const ChunkSpec spec{DataType{DTypeKind::kUInt, 1}, {1}, {std::byte{0}}};
  auto codec = CodecRegistry::v2().create(config["id"].get<std::string>(), config, spec);
  if (!codec.ok()) return nullptr;
  auto b2b = std::dynamic_pointer_cast<const BytesToBytesCodec>(std::move(codec).value());
  require(b2b != nullptr, "a numcodecs compressor or filter that is not bytes-to-bytes");
  return b2b;
}

}  // namespace zarrflow::fuzz
