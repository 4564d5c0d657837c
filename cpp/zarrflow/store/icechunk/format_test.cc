#include "zarrflow/store/icechunk/format.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <mutex>
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

// A snapshot with a root group and one array "a" (chunk grid 1 x 3) of one manifest, and that
// manifest with one native chunk [0, 0], one inline chunk [0, 1] and one virtual chunk [0, 2]
// whose location is kLocation.
constexpr std::string_view kLocation = "file:///nowhere/LOCATION.nc";

struct TinyRepo {
  std::vector<std::byte> snapshot, manifest;
  std::vector<std::byte> manifest_payload;  // the FlatBuffers buffer, uncompressed
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
      auto virt = CreateChunkRef(b, b.CreateVector<std::uint32_t>({0, 2}), 0, 0, 4, nullptr,
                                 b.CreateString(kLocation.data(), kLocation.size()));
      ObjectId8 nid{flatbuffers::span<const std::uint8_t, 8>(node)};
      auto am = CreateArrayManifest(
          b, &nid, b.CreateVector(std::vector<flatbuffers::Offset<ChunkRef>>{native, inl, virt}));
      ObjectId12 mid{flatbuffers::span<const std::uint8_t, 12>(manifest_id)};
      b.Finish(CreateManifest(b, &mid,
                              b.CreateVector(std::vector<flatbuffers::Offset<ArrayManifest>>{am})));
      manifest_payload = bytes_of(b.GetBufferPointer(), b.GetSize());
      manifest = frame(FileType::kManifest, manifest_payload);
    }
    {
      flatbuffers::FlatBufferBuilder b;
      const std::array<std::uint8_t, 8> root_id{9, 9, 9, 9, 9, 9, 9, 9};
      ObjectId8 rid{flatbuffers::span<const std::uint8_t, 8>(root_id)};
      auto root =
          CreateNodeSnapshot(b, &rid, b.CreateString("/"), b.CreateVector<std::uint8_t>({'{', '}'}),
                             NodeData::Group, CreateGroupNodeData(b).Union());
      ObjectId12 mid{flatbuffers::span<const std::uint8_t, 12>(manifest_id)};
      std::vector<ChunkIndexRange> extents{{0, 1}, {0, 3}};
      auto mref = CreateManifestRef(b, &mid, b.CreateVectorOfStructs(extents));
      std::vector<DimensionShape> shape{{1, 1}, {3, 1}};
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
  EXPECT_EQ((*s)->chunk_counts("a")->virtual_, 1u);
  // The virtual chunk is outside every authorised container (there are none): refused.
  EXPECT_EQ((*s)->get("a/c/0/2").status().code(), ErrorCode::kPathEscape);
}

// A store that records the keys read from it, over a MemoryStore.
class RecordingStore final : public Store {
 public:
  explicit RecordingStore(std::shared_ptr<MemoryStore> inner) : inner_(std::move(inner)) {}
  Result<std::optional<Buffer>> get(std::string_view key, std::uint64_t max_size) const override {
    record(key);
    return inner_->get(key, max_size);
  }
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override {
    record(key);
    return inner_->get_ranges(key, ranges);
  }
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override {
    return inner_->size(key);
  }
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override {
    return inner_->list_dir(prefix);
  }
  Status set(std::string_view key, ConstByteSpan value) override { return inner_->set(key, value); }
  std::string describe_key(std::string_view key) const override {
    return inner_->describe_key(key);
  }
  // How many reads of keys starting with `prefix` there were.
  int reads(std::string_view prefix) const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& k : keys_) n += k.starts_with(prefix);
    return n;
  }

 private:
  void record(std::string_view key) const {
    std::lock_guard lock(mu_);
    keys_.emplace_back(key);
  }
  std::shared_ptr<MemoryStore> inner_;
  mutable std::mutex mu_;
  mutable std::vector<std::string> keys_;
};

// Opening a snapshot and its arrays' metadata reads no manifest; the first chunk read loads the
// manifest that covers it, once.
TEST(IcechunkFormat, ManifestsAreReadWhenTheirChunksAreNotAtOpen) {
  TinyRepo repo;
  auto storage = std::make_shared<RecordingStore>(repo.store());
  auto r = Repository::open(storage);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->get("zarr.json")->has_value());
  ASSERT_TRUE((*s)->get("a/zarr.json")->has_value());
  EXPECT_EQ((*s)->list_dir("a")->size(), 2u);  // zarr.json, c
  EXPECT_EQ(storage->reads("snapshots/"), 1);
  EXPECT_EQ(storage->reads("manifests/"), 0);
  EXPECT_EQ((*s)->manifests_loaded(), 0u);
  ASSERT_TRUE((*s)->get("a/c/0/1")->has_value());
  ASSERT_TRUE((*s)->get("a/c/0/0")->has_value());
  EXPECT_EQ(storage->reads("manifests/"), 1);
  EXPECT_EQ((*s)->manifests_loaded(), 1u);
  EXPECT_EQ(storage->reads("chunks/"), 1);
}

// Where `needle` is in `haystack` (it must be).
std::size_t find_bytes(const std::vector<std::byte>& haystack, std::string_view needle) {
  const auto* h = reinterpret_cast<const char*>(haystack.data());
  const std::string_view all(h, haystack.size());
  const std::size_t at = all.find(needle);
  EXPECT_NE(at, std::string_view::npos);
  return at;
}

// A chunk reference is verified when a read reaches it: a manifest whose third reference is
// corrupt opens and serves the other two; reading the third, or counting all, is an error naming
// the manifest.
TEST(IcechunkFormat, ChunkReferencesAreVerifiedWhenReached) {
  TinyRepo repo;
  std::vector<std::byte> payload = repo.manifest_payload;
  const std::size_t at = find_bytes(payload, kLocation);
  const std::uint32_t huge = 0x7ffffff0;  // the location's length prefix, now past the end
  std::memcpy(payload.data() + at - 4, &huge, 4);
  auto store = repo.store();
  ASSERT_TRUE(
      store->set("manifests/" + encode_id(repo.manifest_id), frame(FileType::kManifest, payload))
          .ok());
  auto r = Repository::open(store);
  ASSERT_TRUE(r.ok());
  auto s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE((*s)->get("a/c/0/0")->has_value());
  EXPECT_TRUE((*s)->get("a/c/0/1")->has_value());
  for (auto st : {(*s)->get("a/c/0/2").status(), (*s)->chunk_counts("a").status()}) {
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
    EXPECT_NE(st.message().find("manifest"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(encode_id(repo.manifest_id)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("FlatBuffers verification failed"), std::string::npos);
  }
  // The same buffer fails the whole-buffer verifier, and passes the tables-only one.
  EXPECT_FALSE(verify(payload, FileType::kManifest, "m").ok());
  EXPECT_TRUE(verify_manifest_tables(payload, "m").ok());
  EXPECT_TRUE(verify_manifest_tables(repo.manifest_payload, "m").ok());
  // A corrupt table above the chunk references fails at once.
  std::vector<std::byte> root_broken = repo.manifest_payload;
  const std::uint32_t out_of_bounds = 0x7fffff00;
  std::memcpy(root_broken.data(), &out_of_bounds, 4);
  EXPECT_FALSE(verify_manifest_tables(root_broken, "m").ok());
  EXPECT_FALSE(verify_manifest_tables(ConstByteSpan(repo.manifest_payload).first(6), "m").ok());
}

// An Icechunk file of `payload` (stored, uncompressed).
std::vector<std::byte> stored_file(FileType type, ConstByteSpan payload) {
  std::vector<std::byte> out = frame(type, {});
  out.resize(kHeaderSize);
  out[38] = std::byte(0);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A zstd frame that declares `declared` bytes of content and holds one raw block of one byte.
std::vector<std::byte> frame_declaring(std::uint64_t declared) {
  std::vector<std::uint8_t> z{0x28, 0xB5, 0x2F, 0xFD, 0xE0};  // single segment, 8-byte size
  for (int i = 0; i < 8; ++i) z.push_back(std::uint8_t(declared >> (8 * i)));
  z.insert(z.end(), {0x09, 0x00, 0x00, 0x41});  // last block, raw, 1 byte: 'A'
  std::vector<std::byte> out = frame(FileType::kManifest, {});
  out.resize(kHeaderSize);
  for (auto b : z) out.push_back(std::byte(b));
  return out;
}

// The decompressed size is checked against the cap before the payload is allocated: a frame
// declaring a terabyte is refused at once, a frame that does not declare its size is refused
// when it passes the cap, and a stored payload larger than the cap is refused.
TEST(IcechunkFormat, PayloadSizeIsCappedBeforeAllocation) {
  const SizeCap cap{1000, "max_manifest_bytes"};
  const auto tera = frame_declaring(std::uint64_t{1} << 40);
  auto h = parse_header(tera, FileType::kManifest, "m");
  ASSERT_TRUE(h.ok());
  auto p = payload(tera, *h, "manifests/X", cap);
  EXPECT_EQ(p.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(p.status().message().find("manifests/X: the payload declares 1099511627776 bytes"),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("max_manifest_bytes"), std::string::npos);
  EXPECT_FALSE(payload(tera, *h, "m").ok());  // above the FlatBuffers ceiling too

  // 64 KiB of zeros, compressed without recording the size.
  std::vector<std::byte> zeros(64 << 10), z(ZSTD_compressBound(zeros.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_outBuffer o{z.data(), z.size(), 0};
  ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
  ASSERT_EQ(ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(cctx);
  std::vector<std::byte> file = frame(FileType::kManifest, {});
  file.resize(kHeaderSize);
  file.insert(file.end(), z.begin(), z.begin() + static_cast<std::ptrdiff_t>(o.pos));
  ASSERT_EQ(ZSTD_getFrameContentSize(file.data() + kHeaderSize, o.pos), ZSTD_CONTENTSIZE_UNKNOWN);
  h = parse_header(file, FileType::kManifest, "m");
  auto small = payload(file, *h, "m", cap);
  EXPECT_EQ(small.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(small.status().message().find("more than the 1000 bytes allowed (the "
                                          "max_manifest_bytes limit)"),
            std::string::npos)
      << small.status().message();
  auto fits = payload(file, *h, "m", {64 << 10, "max_manifest_bytes"});
  ASSERT_TRUE(fits.ok()) << fits.status().to_string();
  EXPECT_EQ(fits->size(), zeros.size());

  // Trailing bytes after the frame, and a truncated frame.
  auto trailing = file;
  trailing.push_back(std::byte(0));
  EXPECT_FALSE(payload(trailing, *h, "m").ok());
  auto cut = ConstByteSpan(file).first(file.size() - 3);
  EXPECT_FALSE(payload(cut, *h, "m").ok());

  const auto stored = stored_file(FileType::kManifest, zeros);
  auto stored_header = parse_header(stored, FileType::kManifest, "m");
  ASSERT_TRUE(stored_header.ok());
  EXPECT_EQ(payload(stored, *stored_header, "m", cap).status().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(payload(stored, *stored_header, "m").ok());
}

// Every metadata file is read within its cap: the snapshot and the repo info file within
// max_metadata_bytes, manifests within max_manifest_bytes (stored and decompressed), ref files
// within kMaxRefFileBytes; the error names the file and the limit.
TEST(IcechunkFormat, MetadataFilesAreReadWithinTheirCaps) {
  TinyRepo repo;
  auto r = Repository::open(repo.store(), {.max_metadata_bytes = 100});
  ASSERT_TRUE(r.ok());
  auto s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("snapshots/" + encode_id(repo.snapshot_id)),
            std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("max_metadata_bytes"), std::string::npos);

  r = Repository::open(repo.store(), {.max_manifest_bytes = 100});
  s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->get("a/zarr.json")->has_value());
  auto chunk = (*s)->get("a/c/0/0");
  ASSERT_FALSE(chunk.ok());
  EXPECT_NE(chunk.status().message().find("manifests/" + encode_id(repo.manifest_id)),
            std::string::npos)
      << chunk.status().message();
  EXPECT_NE(chunk.status().message().find("max_manifest_bytes"), std::string::npos);

  // A manifest whose stored size alone exceeds the cap is refused before it is read whole.
  auto store = repo.store();
  std::vector<std::byte> big = repo.manifest;
  big.resize(stored_size_cap(100) + 1);
  ASSERT_TRUE(store->set("manifests/" + encode_id(repo.manifest_id), big).ok());
  r = Repository::open(store, {.max_manifest_bytes = 100});
  chunk = (*IcechunkStore::open(*r, "main", {}, "tiny"))->get("a/c/0/0");
  ASSERT_FALSE(chunk.ok());
  EXPECT_NE(chunk.status().message().find("max_manifest_bytes"), std::string::npos)
      << chunk.status().message();

  store = repo.store();
  const std::string padded = "{\"snapshot\":\"" + encode_id(repo.snapshot_id) + "\"" +
                             std::string(kMaxRefFileBytes, ' ') + "}";
  ASSERT_TRUE(store->set("refs/branch.main/ref.json", std::string_view(padded)).ok());
  r = Repository::open(store);
  ASSERT_TRUE(r.ok());
  s = IcechunkStore::open(*r, "main", {}, "tiny");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("refs/branch.main/ref.json"), std::string::npos)
      << s.status().message();
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
      for (const char* k : {"a/c/0/0", "a/c/0/1", "a/c/0/2", "a/zarr.json", "zarr.json"})
        (void)(*s)->get(k);
      (void)(*s)->list("");
      (void)(*s)->chunk_counts("a");
    }
  }
}

}  // namespace
}  // namespace zarrflow::icechunk
