// libFuzzer target: the Icechunk snapshot and manifest readers — file header checks, zstd or
// stored payloads, FlatBuffers verification, then everything a read does with a verified buffer
// (node paths and metadata, manifest pointers and extents, the binary searches over array
// manifests and chunk references, inline / native / virtual references, compressed locations)
// — on arbitrary bytes, as a corrupt or hostile repository could hold them.
// Input: u8 mode | the file.
//   mode bit 0: 0 the file is snapshots/<id> of a spec-1 repository whose main branch points at
//   <id> (a fixed id), 1 the file is the manifest of a fixed valid snapshot (array "a",
//   2-d, one manifest covering the whole grid). Other bits: which chunk coordinates to read.
#include <flatbuffers/flatbuffers.h>

#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/icechunk/format.h"
#include "zarrflow/store/icechunk/icechunk_store.h"
#include "zarrflow/store/icechunk/snapshot_generated.h"
#include "zarrflow/store/memory_store.h"

namespace {

using namespace zarrflow;
using namespace zarrflow::icechunk;

constexpr std::array<std::uint8_t, 12> kSnapshotId{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
constexpr std::array<std::uint8_t, 12> kManifestId{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

std::vector<std::byte> with_header(FileType type, ConstByteSpan payload) {
  std::vector<std::byte> out(kHeaderSize);
  const unsigned char magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                   0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};
  std::memcpy(out.data(), magic, 12);
  std::memset(out.data() + 12, ' ', 24);
  out[36] = std::byte(1);
  out[37] = std::byte(static_cast<int>(type));
  out[38] = std::byte(0);  // stored: the fuzzer mutates the FlatBuffers bytes themselves
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A valid snapshot: the root group and a 2-d array "a" whose one manifest covers the grid.
std::vector<std::byte> fixed_snapshot() {
  using namespace generated;
  flatbuffers::FlatBufferBuilder b;
  const std::array<std::uint8_t, 8> root_id{9, 9, 9, 9, 9, 9, 9, 9};
  const std::array<std::uint8_t, 8> node_id{1, 2, 3, 4, 5, 6, 7, 8};
  ObjectId8 rid{flatbuffers::span<const std::uint8_t, 8>(root_id)};
  auto root = CreateNodeSnapshot(b, &rid, b.CreateString("/"), b.CreateVector<std::uint8_t>({}),
                                 NodeData::Group, CreateGroupNodeData(b).Union());
  ObjectId12 mid{flatbuffers::span<const std::uint8_t, 12>(kManifestId)};
  std::vector<ChunkIndexRange> extents{{0, UINT32_MAX}, {0, UINT32_MAX}};
  auto mref = CreateManifestRef(b, &mid, b.CreateVectorOfStructs(extents));
  std::vector<DimensionShape> shape{{4, 1}, {4, 1}};
  auto array =
      CreateArrayNodeData(b, b.CreateVectorOfStructs(shape), 0,
                          b.CreateVector(std::vector<flatbuffers::Offset<ManifestRef>>{mref}));
  ObjectId8 nid{flatbuffers::span<const std::uint8_t, 8>(node_id)};
  auto a = CreateNodeSnapshot(b, &nid, b.CreateString("/a"), b.CreateVector<std::uint8_t>({}),
                              NodeData::Array, array.Union());
  ObjectId12 sid{flatbuffers::span<const std::uint8_t, 12>(kSnapshotId)};
  std::vector<ManifestFileInfo> files;
  b.Finish(CreateSnapshot(
      b, &sid, nullptr, b.CreateVector(std::vector<flatbuffers::Offset<NodeSnapshot>>{root, a}), 0,
      b.CreateString(""), b.CreateVector(std::vector<flatbuffers::Offset<MetadataItem>>{}),
      b.CreateVectorOfStructs(files)));
  const auto* p = reinterpret_cast<const std::byte*>(b.GetBufferPointer());
  return with_header(FileType::kSnapshot, {p, b.GetSize()});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::byte> snapshot = fixed_snapshot();
  fuzz::InputReader in(data, size);
  const std::uint8_t mode = in.u8();
  const bool manifest_mode = mode & 1;
  auto storage = std::make_shared<MemoryStore>("fuzz");
  const std::string ref = "{\"snapshot\":\"" + encode_id(kSnapshotId) + "\"}";
  fuzz::require_ok(storage->set("refs/branch.main/ref.json", std::string_view(ref)), "ref");
  const auto file =
      with_header(manifest_mode ? FileType::kManifest : FileType::kSnapshot, in.rest());
  fuzz::require_ok(
      storage->set("snapshots/" + encode_id(kSnapshotId), manifest_mode ? snapshot : file),
      "snapshot");
  if (manifest_mode)
    fuzz::require_ok(storage->set("manifests/" + encode_id(kManifestId), file), "manifest");
  fuzz::require_ok(storage->set("chunks/" + encode_id(kManifestId), std::string_view("0123456789")),
                   "chunk");

  auto repo = Repository::open(storage);
  fuzz::require_ok(repo.status(), "repository");
  auto store = IcechunkStore::open(*repo, "main", {}, "fuzz");
  if (!store.ok()) {
    fuzz::require_not_internal(store.status());
    return 0;
  }
  const unsigned i = (mode >> 1) & 7, j = (mode >> 4) & 7;
  for (const std::string& key :
       {std::string("zarr.json"), std::string("a/zarr.json"),
        "a/c/" + std::to_string(i) + "/" + std::to_string(j), std::string("a/c/0/0")}) {
    auto value = (*store)->get(key);
    if (value.ok()) {
      if (*value) fuzz::touch((**value).span());
    } else {
      fuzz::require_not_internal(value.status());
    }
  }
  if (auto listing = (*store)->list(""); !listing.ok())
    fuzz::require_not_internal(listing.status());
  if (auto counts = (*store)->chunk_counts("a"); !counts.ok())
    fuzz::require_not_internal(counts.status());
  return 0;
}
