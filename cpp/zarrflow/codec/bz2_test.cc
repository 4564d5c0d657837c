#include <gtest/gtest.h>

#include <bzlib.h>

#include <climits>
#include <random>

#include "zarrflow/codec/codec_test_util.h"

namespace zarrflow {
namespace {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;
using codec_test::from_hex;
using codec_test::sample;

// The data the numcodecs golden streams hold: np.arange(300, dtype="<i4") % 17.
Bytes golden_data() {
  Bytes b(1200);
  for (std::uint32_t i = 0; i < 300; ++i)
    for (int k = 0; k < 4; ++k) b[4 * i + k] = static_cast<std::byte>(((i % 17) >> (8 * k)) & 255);
  return b;
}

std::shared_ptr<const BytesToBytesCodec> make(const json& cfg,
                                              const CodecRegistry& reg = CodecRegistry::v2()) {
  auto c = reg.create(cfg.contains("id") ? cfg["id"].get<std::string>() : "", cfg, ChunkSpec{});
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// Decodes with the size known (decode_into and decode) and unknown; all must give `want`.
void expect_decodes(const BytesToBytesCodec& codec, const Bytes& enc, const Bytes& want) {
  Bytes out(want.size());
  Status s = codec.decode_into(enc, out);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(out, want);
  for (std::optional<std::size_t> size :
       {std::optional<std::size_t>(want.size()), std::optional<std::size_t>()}) {
    Buffer scratch;
    auto r = codec.decode(enc, size, scratch);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(std::equal(r->begin(), r->end(), want.begin(), want.end()));
  }
}

ErrorCode decode_error(const BytesToBytesCodec& codec, const Bytes& enc,
                       std::optional<std::size_t> size, std::string* message = nullptr) {
  Buffer scratch;
  auto r = codec.decode(enc, size, scratch);
  if (message) *message = r.ok() ? "" : r.status().message();
  return r.ok() ? ErrorCode::kOk : r.status().code();
}

Bytes concat(const Bytes& a, const Bytes& b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Bytes bz2_compress(const Bytes& src, int level = 9) {
  unsigned int n = static_cast<unsigned int>(src.size() + src.size() / 100 + 600);
  Bytes out(n);
  char none = 0;  // libbz2 wants a source pointer even for 0 bytes
  char* in = src.empty() ? &none : const_cast<char*>(reinterpret_cast<const char*>(src.data()));
  EXPECT_EQ(BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n, in,
                                     static_cast<unsigned int>(src.size()), level, 0, 0),
            BZ_OK);
  out.resize(n);
  return out;
}

// numcodecs.BZ2(level=9).encode(golden_data()).
constexpr const char* kNumcodecsStream =
    "425a68393141592653595055b953000001e0007fffc00020007050d34c00052a42304f51a7583c863546c8d21e"
    "91ed1ba384728e91da3b87c8661f61fa1e4324a19861287f1772453850905055b953";

TEST(Bz2Codec, DecodesNumcodecsOutput) {
  auto codec = make({{"id", "bz2"}, {"level", 9}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "bz2(level=9)");
  expect_decodes(*codec, from_hex(kNumcodecsStream), golden_data());
}

TEST(Bz2Codec, RoundTripsThroughLibbz2AtEverySize) {
  auto codec = *CodecRegistry::v3().create("numcodecs.bz2", json::object(), {});
  const auto& bz = static_cast<const BytesToBytesCodec&>(*codec);
  for (std::size_t n : {0, 1, 100, 4096, 200000, 1000000}) {
    SCOPED_TRACE(n);
    const Bytes raw = sample(n, static_cast<unsigned>(n));
    expect_decodes(bz, bz2_compress(raw, n % 9 + 1), raw);
  }
}

TEST(Bz2Codec, ConcatenatedStreamsAndTrailingBytesLikePython) {
  auto codec = make({{"id", "bz2"}});
  const Bytes a = sample(5000, 1), b = sample(3000, 2);
  const Bytes sa = bz2_compress(a), sb = bz2_compress(b);
  expect_decodes(*codec, concat(sa, sb), concat(a, b));
  // Bytes after a complete stream that are not a stream are ignored, as bz2.decompress does...
  expect_decodes(*codec, concat(sa, from_hex("00000000deadbeef")), a);
  // ...but a second stream cut short is an error, as is anything that starts badly.
  std::string message;
  const Bytes cut(sb.begin(), sb.end() - 10);
  EXPECT_EQ(decode_error(*codec, concat(sa, cut), std::nullopt, &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_EQ(decode_error(*codec, from_hex("00000000deadbeef"), std::nullopt, &message),
            ErrorCode::kCorruptData);
  EXPECT_NE(message.find("not a bzip2 stream"), std::string::npos) << message;
  // Empty input decodes to nothing, like bz2.decompress(b"").
  expect_decodes(*codec, Bytes{}, Bytes{});
}

TEST(Bz2Codec, CorruptTruncatedAndWrongSizeStreams) {
  auto codec = make({{"id", "bz2"}});
  const Bytes raw = sample(50000, 3);
  const Bytes enc = bz2_compress(raw);
  std::string message;
  Bytes flipped = enc;
  flipped[enc.size() / 2] ^= std::byte{0x40};
  EXPECT_EQ(decode_error(*codec, flipped, raw.size(), &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("bz2: "), std::string::npos) << message;
  const Bytes truncated(enc.begin(), enc.end() - 1);
  EXPECT_EQ(decode_error(*codec, truncated, raw.size()), ErrorCode::kCorruptData);
  EXPECT_EQ(decode_error(*codec, truncated, std::nullopt), ErrorCode::kCorruptData);
  EXPECT_EQ(decode_error(*codec, enc, raw.size() - 1, &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("more than the expected"), std::string::npos) << message;
  EXPECT_EQ(decode_error(*codec, enc, raw.size() + 1), ErrorCode::kCorruptData);
}

TEST(Bz2Codec, RandomInputNeverCrashes) {
  auto codec = make({{"id", "bz2"}});
  std::mt19937 rng(5);
  const Bytes enc = bz2_compress(sample(20000, 9));
  for (int i = 0; i < 300; ++i) {
    Bytes in = enc;
    for (int k = 0; k < 1 + i % 4; ++k) in[rng() % in.size()] = static_cast<std::byte>(rng());
    in.resize(rng() % 2 ? in.size() : rng() % in.size());
    const ErrorCode c =
        decode_error(*codec, in, i % 2 ? std::optional<std::size_t>(20000) : std::nullopt);
    EXPECT_TRUE(c == ErrorCode::kOk || c == ErrorCode::kCorruptData) << static_cast<int>(c);
  }
}

TEST(Bz2Codec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  EXPECT_TRUE(v2.create("bz2", {{"id", "bz2"}}, {}).ok());
  EXPECT_EQ(v2.create("bz2", {{"id", "bz2"}, {"level", 0}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v2.create("bz2", {{"id", "bz2"}, {"blocksize", 9}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
