#include "zarrflow/store/icechunk/format.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <random>

#include "zarrflow/store/icechunk/icechunk_store.h"
#include "zarrflow/store/icechunk/manifest_generated.h"
#include "zarrflow/store/icechunk/snapshot_generated.h"
#include "zarrflow/store/memory_store.h"

namespace zarrflow::icechunk {
namespace {

std::vector<std::byte> bytes_of(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  return {b, b + n};
}

// An Icechunk file: header + zstd payload.
std::vector<std::byte> frame(FileType type, const std::vector<std::byte>& flatbuffer,
                             int spec = 1) {
  std::vector<std::byte> out(kHeaderSize);
  const unsigned char magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                   0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};
  std::memcpy(out.data(), magic, 12);
  std::memset(out.data() + 12, ' ', 24);
  std::memcpy(out.data() + 12, "test", 4);
  out[36] = std::byte(spec);
  out[37] = std::byte(static_cast<int>(type));
  out[38] = std::byte(1);
  std::vector<std::byte> z(ZSTD_compressBound(flatbuffer.size()));
  const std::size_t n = ZSTD_compress(z.data(), z.size(), flatbuffer.data(), flatbuffer.size(), 1);
  out.insert(out.end(), z.begin(), z.begin() + static_cast<std::ptrdiff_t>(n));
  return out;
}

std::array<std::uint8_t, 12> id12(std::uint8_t seed) {
  std::array<std::uint8_t, 12> id{};
  for (std::size_t i = 0; i < 12; ++i) id[i] = std::uint8_t(seed + i * 7);
  return id;
}

// A snapshot with a root group and one array "a" of one manifest, and that manifest with one
// native chunk [0, 0] and one inline chunk [0, 1].
struct TinyRepo {
  std::vector<std::byte> snapshot, manifest;
  std::array<std::uint8_t, 12> snapshot_id = id12(1), manifest_id = id12(2);

  TinyRepo() {
    using namespace generated;
    const std::array<std::uint8_t, 8> node{1, 2, 3, 4, 5, 6, 7, 8};
    {
      flatbuffers::FlatBufferBuilder b;
      ObjectId12 chunk(flatbuffers::span<const std::uint8_t, 12>(id12(3)));
      auto native = CreateChunkRef(b, b.CreateVector<std::uint32_t>({0, 0}), 0, 4, 8, &chunk);
      auto inl = CreateChunkRef(b, b.CreateVector<std::uint32_t>({0, 1}),
                                b.CreateVector<std::uint8_t>({9, 9, 9}));
      ObjectId8 nid{flatbuffers::span<const std::uint8_t, 8>(node)};
      auto am = CreateArrayManifest(
          b, &nid, b.CreateVector(std::vector<flatbuffers::Offset<ChunkRef>>{native, inl}));
      ObjectId12 mid{flatbuffers::span<const std::uint8_t, 12>(manifest_id)};
      b.Finish(CreateManifest(b, &mid,
                              b.CreateVector(std::vector<flatbuffers::Offset<ArrayManifest>>{am})));
      manifest = frame(FileType::kManifest, bytes_of(b.GetBufferPointer(), b.GetSize()));
    }
    {
      flatbuffers::FlatBufferBuilder b;
      const std::array<std::uint8_t, 8> root_id{9, 9, 9, 9, 9, 9, 9, 9};
      ObjectId8 rid{flatbuffers::span<const std::uint8_t, 8>(root_id)};
      auto root =
          CreateNodeSnapshot(b, &rid, b.CreateString("/"), b.CreateVector<std::uint8_t>({'{', '}'}),
                             NodeData::Group, CreateGroupNodeData(b).Union());
      ObjectId12 mid{flatbuffers::span<const std::uint8_t, 12>(manifest_id)};
      std::vector<ChunkIndexRange> extents{{0, 1}, {0, 2}};
      auto mref = CreateManifestRef(b, &mid, b.CreateVectorOfStructs(extents));
      std::vector<DimensionShape> shape{{1, 1}, {2, 1}};
      auto array =
          CreateArrayNodeData(b, b.CreateVectorOfStructs(shape), 0,
                              b.CreateVector(std::vector<flatbuffers::Offset<ManifestRef>>{mref}));
      ObjectId8 nid{flatbuffers::span<const std::uint8_t, 8>(node)};
      auto a = CreateNodeSnapshot(b, &nid, b.CreateString("/a"),
                                  b.CreateVector<std::uint8_t>({'{', '}'}), NodeData::Array,
                                  array.Union());
      ObjectId12 sid{flatbuffers::span<const std::uint8_t, 12>(snapshot_id)};
      std::vector<ManifestFileInfo> files;
      b.Finish(CreateSnapshot(
          b, &sid, nullptr, b.CreateVector(std::vector<flatbuffers::Offset<NodeSnapshot>>{root, a}),
          0, b.CreateString("tiny"),
          b.CreateVector(std::vector<flatbuffers::Offset<MetadataItem>>{}),
          b.CreateVectorOfStructs(files)));
      snapshot = frame(FileType::kSnapshot, bytes_of(b.GetBufferPointer(), b.GetSize()));
    }
  }

  std::shared_ptr<MemoryStore> store() const {
    auto s = std::make_shared<MemoryStore>("repo");
    const std::string ref = "{\"snapshot\":\"" + encode_id(snapshot_id) + "\"}";
    EXPECT_TRUE(s->set("refs/branch.main/ref.json", std::string_view(ref)).ok());
    EXPECT_TRUE(s->set("snapshots/" + encode_id(snapshot_id), snapshot).ok());
    EXPECT_TRUE(s->set("manifests/" + encode_id(manifest_id), manifest).ok());
    EXPECT_TRUE(s->set("chunks/" + encode_id(id12(3)), std::string_view("0123456789abcdef")).ok());
    return s;
  }
};

TEST(IcechunkFormat, CrockfordIds) {
  const std::array<std::uint8_t, 12> first{0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
                                           0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
  EXPECT_EQ(encode_id(first), "1CECHNKREP0F1RSTCMT0");
  EXPECT_EQ(*decode_id12("1CECHNKREP0F1RSTCMT0"), first);
  EXPECT_EQ(*decode_id12("1cechnkrep0f1rstcmt0"), first);
  EXPECT_EQ(encode_id(std::array<std::uint8_t, 8>{}).size(), 13u);
  EXPECT_FALSE(decode_id12("1CECHNKREP0F1RSTCMT").ok());   // 19 characters
  EXPECT_FALSE(decode_id12("1CECHNKREP0F1RSTCMTU").ok());  // U is not Crockford
  EXPECT_FALSE(decode_id12("1CECHNKREP0F1RSTCMT1").ok());  // non-zero padding bits
}

TEST(IcechunkFormat, HeaderFieldsAreChecked) {
  TinyRepo repo;
  const auto& good = repo.snapshot;
  EXPECT_TRUE(parse_header(good, FileType::kSnapshot, "s").ok());
  EXPECT_EQ(parse_header(good, FileType::kManifest, "s").status().code(), ErrorCode::kCorruptData);
  auto bad = good;
  bad[0] = std::byte('X');
  EXPECT_NE(parse_header(bad, FileType::kSnapshot, "s").status().message().find("magic"),
            std::string::npos);
  bad = good;
  bad[36] = std::byte(3);
  EXPECT_EQ(parse_header(bad, FileType::kSnapshot, "s").status().code(), ErrorCode::kUnimplemented);
  bad = good;
  bad[38] = std::byte(7);
  EXPECT_EQ(parse_header(bad, FileType::kSnapshot, "s").status().code(), ErrorCode::kCorruptData);
  EXPECT_FALSE(parse_header(ConstByteSpan(good).first(20), FileType::kSnapshot, "s").ok());
}

TEST(IcechunkFormat, ReadsATinyRepository) {
  TinyRepo repo;
  auto r = Repository::open(repo.store());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->spec_version(), 1);
  auto s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->message(), "tiny");
  auto native = (*s)->get("a/c/0/0");
  ASSERT_TRUE(native.ok()) << native.status().to_string();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((**native).data()), (**native).size()),
            "456789ab");
  auto inl = (*s)->get("a/c/0/1");
  ASSERT_TRUE(inl.ok());
  EXPECT_EQ((**inl).size(), 3u);
  EXPECT_FALSE((*s)->get("a/c/1/0")->has_value());  // outside every manifest: missing
  EXPECT_FALSE((*s)->get("b/zarr.json")->has_value());
  EXPECT_TRUE((*s)->get("a/zarr.json")->has_value());
  EXPECT_EQ(*(*s)->list_dir(""), (std::vector<std::string>{"a", "zarr.json"}));
  EXPECT_EQ((*s)->chunk_counts("a")->native, 1u);
  EXPECT_EQ((*s)->chunk_counts("a")->inline_, 1u);
}

// Every truncation and many byte flips of the snapshot and manifest payloads: errors, never
// a crash (the verifier runs before any field is read).
TEST(IcechunkFormat, CorruptPayloadsAreRefusedNotRead) {
  TinyRepo repo;
  std::mt19937 rng(7);
  for (const bool snapshot : {true, false}) {
    const auto& file = snapshot ? repo.snapshot : repo.manifest;
    const std::string key = snapshot ? "snapshots/" + encode_id(repo.snapshot_id)
                                     : "manifests/" + encode_id(repo.manifest_id);
    const ConstByteSpan body = ConstByteSpan(file).subspan(kHeaderSize);
    std::vector<std::byte> raw(ZSTD_getFrameContentSize(body.data(), body.size()));
    ZSTD_decompress(raw.data(), raw.size(), body.data(), body.size());
    for (int trial = 0; trial < 400; ++trial) {
      std::vector<std::byte> broken = raw;
      if (trial < 100) {
        broken.resize(raw.size() * std::size_t(trial) / 100);
      } else {
        for (int k = 0; k < 1 + trial % 4; ++k)
          broken[rng() % broken.size()] = std::byte(rng() & 0xff);
      }
      auto store = repo.store();
      ASSERT_TRUE(
          store->set(key, frame(snapshot ? FileType::kSnapshot : FileType::kManifest, broken))
              .ok());
      auto r = Repository::open(store);
      ASSERT_TRUE(r.ok());
      auto s = IcechunkStore::open(*r, "main", {}, "tiny");
      if (!s.ok()) continue;  // refused: fine
      for (const char* k : {"a/c/0/0", "a/c/0/1", "a/zarr.json", "zarr.json"}) (void)(*s)->get(k);
      (void)(*s)->list("");
    }
  }
}

}  // namespace
}  // namespace zarrflow::icechunk
