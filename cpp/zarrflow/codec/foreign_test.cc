#include "zarrflow/codec/foreign.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;

// Stands in for numcodecs: "reverse" reverses the bytes; "fail" refuses every chunk; "elements"
// turns each stored byte into one little-endian uint16.
class FakeDecoder final : public ForeignDecoder {
 public:
  explicit FakeDecoder(std::string id) : id_(std::move(id)) {}
  Status decode(ConstByteSpan in, const Output& output) const override {
    if (id_ == "fail") return corrupt_data("fail (numcodecs): RuntimeError: checksum mismatch");
    if (id_ == "elements") {
      ZF_ASSIGN_OR_RETURN(ByteSpan out, output(in.size() * 2));
      for (std::size_t i = 0; i < in.size(); ++i) {
        out[2 * i] = in[i];
        out[2 * i + 1] = std::byte{0};
      }
      return {};
    }
    ZF_ASSIGN_OR_RETURN(ByteSpan out, output(in.size()));
    std::reverse_copy(in.begin(), in.end(), out.data());
    return {};
  }
  [[nodiscard]] std::string describe() const override { return id_ + " [fake]"; }

 private:
  std::string id_;
};

// Installs a factory recording its requests; removes it again at the end of the test.
class ForeignCodecs : public testing::Test {
 protected:
  void SetUp() override {
    set_foreign_codec_factory(
        [this](const ForeignCodecRequest& r) -> Result<std::shared_ptr<const ForeignDecoder>> {
          requests_.push_back(r);
          if (r.id == "missing") return unimplemented("codec 'missing': pip install missing");
          return std::shared_ptr<const ForeignDecoder>(std::make_shared<FakeDecoder>(r.id));
        });
  }
  void TearDown() override { set_foreign_codec_factory({}); }
  std::vector<ForeignCodecRequest> requests_;
};

ChunkSpec u16(Shape shape) {
  return {DataType{DTypeKind::kUInt, 2}, std::move(shape), Bytes(2, std::byte{0})};
}

TEST(ForeignCodecsWithoutFactory, StayUnsupportedNamingTheCodec) {
  auto v2 = CodecRegistry::v2().create("pcodec", {{"id", "pcodec"}}, {});
  EXPECT_EQ(v2.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(v2.status().message().find("codec 'pcodec' is not supported natively"),
            std::string::npos)
      << v2.status().message();
  auto v3 = CodecRegistry::v3().create("numcodecs.pcodec", json::object(), {});
  EXPECT_EQ(v3.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(v3.status().message().find("numcodecs.pcodec"), std::string::npos);
}

TEST_F(ForeignCodecs, V2IdsAreBytesToBytes) {
  auto made = CodecRegistry::v2().create("reverse", {{"id", "reverse"}, {"x", 1}}, u16({4}));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].name, "reverse");
  EXPECT_EQ(requests_[0].id, "reverse");
  EXPECT_EQ(requests_[0].zarr_format, 2);
  EXPECT_EQ(requests_[0].config, json({{"id", "reverse"}, {"x", 1}}));
  EXPECT_EQ(requests_[0].kind, CodecKind::kBytesToBytes);
  const auto& codec = static_cast<const BytesToBytesCodec&>(**made);
  EXPECT_EQ(codec.name(), "reverse");
  EXPECT_EQ(codec.describe(), "reverse [fake]");
  const Bytes in = {std::byte{1}, std::byte{2}, std::byte{3}};
  Buffer scratch;
  auto r = codec.decode(in, 3, scratch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Bytes(r->begin(), r->end()), (Bytes{std::byte{3}, std::byte{2}, std::byte{1}}));
  EXPECT_EQ(codec.decode(in, 4, scratch).status().code(), ErrorCode::kCorruptData);
}

TEST_F(ForeignCodecs, V3NamesInAChain) {
  // zarr-python's array→bytes numcodecs codecs decode a chunk of elements; a selection of it
  // lands in the destination.
  const auto spec = u16({2, 3});
  auto chain =
      CodecChain::from_v3_json(json::parse(R"([{"name": "numcodecs.elements", "configuration": {}},
                      {"name": "numcodecs.reverse"}])"),
                               spec);
  // Only zarr-python's numcodecs.pcodec and numcodecs.zfpy are array→bytes; another name in that
  // place would be an array→array codec, which the fallback does not take.
  EXPECT_EQ(chain.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(chain.status().message().find("array→array codec 'numcodecs.elements'"),
            std::string::npos)
      << chain.status().message();

  requests_.clear();
  auto pcodec_chain = CodecChain::from_v3_json(
      json::parse(R"([{"name": "numcodecs.pcodec", "configuration": {"level": 8}},
                      {"name": "numcodecs.reverse"}])"),
      spec);
  // (the fake "pcodec" reverses, so the test can check which codec ran where)
  ASSERT_TRUE(pcodec_chain.ok()) << pcodec_chain.status().to_string();
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_EQ(requests_[0].id, "pcodec");
  EXPECT_EQ(requests_[0].kind, CodecKind::kArrayToBytes);
  EXPECT_EQ(requests_[0].config, json({{"level", 8}, {"id", "pcodec"}}));
  EXPECT_EQ(requests_[0].spec.shape, (Shape{2, 3}));
  EXPECT_EQ(requests_[1].kind, CodecKind::kBytesToBytes);
  EXPECT_EQ(pcodec_chain->describe(), "pcodec [fake] | reverse [fake]");
  // Stored: the 12 element bytes reversed twice over is the identity.
  Bytes stored(12);
  for (int i = 0; i < 6; ++i) stored[2 * i] = static_cast<std::byte>(10 + i);
  std::vector<std::uint16_t> out(2, 0);
  StridedView view{reinterpret_cast<std::byte*>(out.data()), {1, 2}, {4, 2}};
  Selection sel{{1, 0}, {1, 2}, {1, 2}};  // row 1, columns 0 and 2
  ASSERT_TRUE(pcodec_chain->decode_into(stored, sel, view, DecodeContext{}).ok());
  EXPECT_EQ(out, (std::vector<std::uint16_t>{13, 15}));
  // A chunk of the wrong size is corrupt.
  const Bytes short_chunk(10);
  EXPECT_EQ(pcodec_chain->decode_into(short_chunk, sel, view, DecodeContext{}).code(),
            ErrorCode::kCorruptData);
  // Names outside numcodecs are not the fallback's to take.
  requests_.clear();
  EXPECT_EQ(CodecRegistry::v3().create("zfp", json::object(), spec).status().code(),
            ErrorCode::kUnimplemented);
  EXPECT_TRUE(requests_.empty());
}

TEST_F(ForeignCodecs, ErrorsPassThrough) {
  auto missing = CodecRegistry::v2().create("missing", {{"id", "missing"}}, {});
  EXPECT_EQ(missing.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(missing.status().message().find("pip install missing"), std::string::npos);
  auto fail = CodecRegistry::v2().create("fail", {{"id", "fail"}}, {});
  ASSERT_TRUE(fail.ok());
  Buffer scratch;
  auto r = static_cast<const BytesToBytesCodec&>(**fail).decode(Bytes(4), std::nullopt, scratch);
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("RuntimeError: checksum mismatch"), std::string::npos);
}

}  // namespace
}  // namespace zarrflow
