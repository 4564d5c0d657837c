#include "zarrflow/store/icechunk/icechunk_store.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "flatbuffers/flexbuffers.h"
#include "zarrflow/store/icechunk/format.h"
#include "zarrflow/store/icechunk/manifest_generated.h"
#include "zarrflow/store/icechunk/repo_generated.h"
#include "zarrflow/store/icechunk/snapshot_generated.h"

namespace zarrflow::icechunk {

namespace {

using json = nlohmann::json;

constexpr std::uint64_t kMaxLocationBytes = 64 << 10;  // a decompressed virtual chunk URL

// Reads and checks one metadata file within `cap` (its stored size, then its decompressed
// size, each before the buffer is allocated) and decompresses it; nullopt when it does not
// exist. The payload is verified by the caller (verify(), or verify_manifest_tables()).
Result<std::optional<Buffer>> read_file(const Store& storage, const std::string& key, FileType type,
                                        const SizeCap& cap) {
  const std::string what = storage.describe_key(key);
  const std::uint64_t stored_cap = stored_size_cap(cap.bytes);
  auto raw = storage.get(key, stored_cap);
  if (!raw.ok())
    return std::move(raw).take_status().annotate(
        "reading the " + std::string(file_type_name(type)) + " within the " +
        std::string(cap.name) + " limit (" + std::to_string(cap.bytes) +
        " bytes decompressed, at most " + std::to_string(stored_cap) + " stored)");
  if (!*raw) return std::optional<Buffer>();
  ZF_ASSIGN_OR_RETURN(FileHeader header, parse_header((*raw)->span(), type, what));
  ZF_ASSIGN_OR_RETURN(Buffer body, payload((*raw)->span(), header, what, cap));
  return std::optional(std::move(body));
}

Result<std::optional<Buffer>> read_verified_file(const Store& storage, const std::string& key,
                                                 FileType type, const SizeCap& cap) {
  ZF_ASSIGN_OR_RETURN(auto body, read_file(storage, key, type, cap));
  if (body) ZF_RETURN_IF_ERROR(verify(body->span(), type, storage.describe_key(key)));
  return body;
}

SizeCap metadata_cap(const IcechunkLimits& limits) {
  return {limits.max_metadata_bytes, "max_metadata_bytes"};
}

template <std::size_t N, typename Id>
std::array<std::uint8_t, N> id_bytes(const Id* id) {
  std::array<std::uint8_t, N> out{};
  std::memcpy(out.data(), id->bytes()->Data(), N);
  return out;
}

std::string_view view(const flatbuffers::String* s) {
  return s == nullptr ? std::string_view() : std::string_view(s->c_str(), s->size());
}

json flex_to_json(const flexbuffers::Reference& r, int depth = 0) {
  if (depth > 64) return nullptr;
  if (r.IsNull()) return nullptr;
  if (r.IsBool()) return r.AsBool();
  if (r.IsUntypedVector() || r.IsTypedVector() || r.IsFixedTypedVector()) {
    json a = json::array();
    const auto v = r.AsVector();
    for (std::size_t i = 0; i < v.size(); ++i) a.push_back(flex_to_json(v[i], depth + 1));
    return a;
  }
  if (r.IsMap()) {
    json o = json::object();
    const auto m = r.AsMap();
    const auto keys = m.Keys();
    const auto values = m.Values();
    for (std::size_t i = 0; i < keys.size(); ++i)
      o[keys[i].AsString().str()] = flex_to_json(values[i], depth + 1);
    return o;
  }
  if (r.IsUInt()) return r.AsUInt64();
  if (r.IsInt()) return r.AsInt64();
  if (r.IsFloat()) return r.AsDouble();
  if (r.IsString() || r.IsKey()) return r.AsString().str();
  if (r.IsBlob()) {
    const auto b = r.AsBlob();
    return json::binary(std::vector<std::uint8_t>(b.data(), b.data() + b.size()));
  }
  return nullptr;
}

// "<path>/c/<i>/<j>" → (path, coords): the last "c" segment followed only by numbers.
bool parse_chunk_key(std::string_view key, std::string_view& path,
                     std::vector<std::uint32_t>& coords) {
  std::vector<std::string_view> segs;
  for (std::size_t pos = 0;;) {
    const std::size_t end = key.find('/', pos);
    segs.push_back(key.substr(pos, end == std::string_view::npos ? end : end - pos));
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  for (std::size_t c = segs.size(); c-- > 0;) {
    if (segs[c] != "c") {
      const auto& s = segs[c];
      if (s.empty() || s.size() > 10 ||
          !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        return false;
      continue;
    }
    coords.clear();
    for (std::size_t i = c + 1; i < segs.size(); ++i) {
      const std::uint64_t v = std::stoull(std::string(segs[i]));
      if (v > UINT32_MAX) return false;
      coords.push_back(static_cast<std::uint32_t>(v));
    }
    const std::size_t path_len =
        c == 0 ? 0 : static_cast<std::size_t>(segs[c].data() - key.data()) - 1;
    path = key.substr(0, path_len);
    return true;
  }
  return false;
}

std::string chunk_key_of(std::string_view path, std::span<const std::uint32_t> coords) {
  std::string k(path);
  if (!k.empty()) k += '/';
  k += 'c';
  for (std::uint32_t c : coords) k += '/' + std::to_string(c);
  return k;
}

int compare_index(const flatbuffers::Vector<std::uint32_t>* index,
                  std::span<const std::uint32_t> coords) {
  const std::size_t n = std::min<std::size_t>(index->size(), coords.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = index->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (a != coords[i]) return a < coords[i] ? -1 : 1;
  }
  if (index->size() == coords.size()) return 0;
  return index->size() < coords.size() ? -1 : 1;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Repository

Result<std::shared_ptr<const Repository>> Repository::open(std::shared_ptr<const Store> storage,
                                                           IcechunkLimits limits) {
  std::shared_ptr<Repository> repo(new Repository());
  repo->storage_ = storage;
  repo->limits_ = limits;
  ZF_ASSIGN_OR_RETURN(
      auto info, read_verified_file(*storage, "repo", FileType::kRepoInfo, metadata_cap(limits)));
  if (info) {
    const auto* root = generated::GetRepo(info->data());
    if (root->spec_version() != 2)
      return unimplemented(storage->describe_key("repo") + ": repo info of spec version " +
                           std::to_string(root->spec_version()) + " (zarrflow reads 1 and 2)");
    repo->spec_version_ = 2;
    if (root->config() != nullptr && root->config()->size() > 0)
      repo->config_ = flex_to_json(root->config_flexbuffer_root());
    repo->repo_info_ = std::move(*info);
    return std::shared_ptr<const Repository>(std::move(repo));
  }
  ZF_ASSIGN_OR_RETURN(auto main, storage->size("refs/branch.main/ref.json"));
  if (!main)
    return not_found(storage->describe_key("") +
                     " is not an Icechunk repository (neither a 'repo' file nor "
                     "refs/branch.main/ref.json)");
  repo->spec_version_ = 1;
  return std::shared_ptr<const Repository>(std::move(repo));
}

Result<std::optional<std::string>> Repository::read_ref_file(const std::string& key) const {
  const std::string what = storage_->describe_key(key);
  auto got = storage_->get(key, kMaxRefFileBytes);
  if (!got.ok())
    return std::move(got).take_status().annotate("ref file (at most " +
                                                 std::to_string(kMaxRefFileBytes) + " bytes)");
  auto& raw = *got;
  if (!raw) return std::optional<std::string>();
  json doc = json::parse(reinterpret_cast<const char*>(raw->data()),
                         reinterpret_cast<const char*>(raw->data()) + raw->size(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("snapshot") ||
      !doc["snapshot"].is_string())
    return corrupt_data(what + ": not a ref file ({\"snapshot\": \"<id>\"})");
  const std::string id = doc["snapshot"].get<std::string>();
  ZF_RETURN_IF_ERROR_CTX(decode_id12(id), what);
  return std::optional(id);
}

Result<std::vector<std::string>> Repository::branches() const {
  std::vector<std::string> out;
  if (spec_version_ == 2) {
    const auto* root = generated::GetRepo(repo_info_.data());
    for (const auto* r : *root->branches()) out.emplace_back(view(r->name()));
    return out;
  }
  ZF_ASSIGN_OR_RETURN(auto names, storage_->list_dir("refs"));
  for (const auto& n : names)
    if (n.starts_with("branch.")) out.push_back(n.substr(7));
  return out;
}

Result<std::vector<std::string>> Repository::tags() const {
  std::vector<std::string> out;
  if (spec_version_ == 2) {
    const auto* root = generated::GetRepo(repo_info_.data());
    for (const auto* r : *root->tags()) out.emplace_back(view(r->name()));
    return out;
  }
  ZF_ASSIGN_OR_RETURN(auto names, storage_->list_dir("refs"));
  for (const auto& n : names) {
    if (!n.starts_with("tag.")) continue;
    ZF_ASSIGN_OR_RETURN(auto deleted, storage_->size("refs/" + n + "/ref.json.deleted"));
    if (!deleted) out.push_back(n.substr(4));
  }
  return out;
}

Result<ResolvedRef> Repository::resolve(std::string_view ref) const {
  const std::string name(ref);
  if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
    return invalid_argument("'" + name + "' is not a branch, tag or snapshot id");
  if (spec_version_ == 2) {
    const auto* root = generated::GetRepo(repo_info_.data());
    const auto* snapshots = root->snapshots();
    auto from = [&](const flatbuffers::Vector<flatbuffers::Offset<generated::Ref>>* refs,
                    const char* kind) -> Result<std::optional<ResolvedRef>> {
      for (const auto* r : *refs) {
        if (view(r->name()) != name) continue;
        if (r->snapshot_index() >= snapshots->size())
          return corrupt_data(storage_->describe_key("repo") + ": " + kind + " '" + name +
                              "' points past the list of snapshots");
        const auto* info = snapshots->Get(r->snapshot_index());
        return std::optional(ResolvedRef{encode_id(id_bytes<12>(info->id())), kind, name});
      }
      return std::optional<ResolvedRef>();
    };
    ZF_ASSIGN_OR_RETURN(auto branch, from(root->branches(), "branch"));
    if (branch) return *branch;
    bool deleted = false;
    for (const auto* t : *root->deleted_tags()) deleted = deleted || view(t) == name;
    if (!deleted) {
      ZF_ASSIGN_OR_RETURN(auto tag, from(root->tags(), "tag"));
      if (tag) return *tag;
    }
    if (auto id = decode_id12(name); id.ok()) {
      for (const auto* info : *snapshots)
        if (std::memcmp(info->id()->bytes()->Data(), id->data(), 12) == 0)
          return ResolvedRef{encode_id(*id), "snapshot", encode_id(*id)};
    }
  } else {
    ZF_ASSIGN_OR_RETURN(auto branch, read_ref_file("refs/branch." + name + "/ref.json"));
    if (branch) return ResolvedRef{*branch, "branch", name};
    ZF_ASSIGN_OR_RETURN(auto deleted, storage_->size("refs/tag." + name + "/ref.json.deleted"));
    if (!deleted) {
      ZF_ASSIGN_OR_RETURN(auto tag, read_ref_file("refs/tag." + name + "/ref.json"));
      if (tag) return ResolvedRef{*tag, "tag", name};
    }
    if (auto id = decode_id12(name); id.ok()) {
      ZF_ASSIGN_OR_RETURN(auto exists, storage_->size("snapshots/" + encode_id(*id)));
      if (exists) return ResolvedRef{encode_id(*id), "snapshot", encode_id(*id)};
    }
  }
  std::string known;
  if (auto b = branches(); b.ok())
    for (const auto& n : *b) known += (known.empty() ? "branches: " : ", ") + n;
  if (auto t = tags(); t.ok() && !t->empty()) {
    known += known.empty() ? "tags: " : "; tags: ";
    for (std::size_t i = 0; i < t->size(); ++i) known += (i ? ", " : "") + (*t)[i];
  }
  return not_found(storage_->describe_key("") + ": no branch, tag or snapshot '" + name + "'" +
                   (known.empty() ? "" : " (" + known + ")"));
}

// ---------------------------------------------------------------------------------------------
// IcechunkStore

struct IcechunkStore::Manifest {
  Buffer payload;
  const generated::Manifest* root = nullptr;
  ZSTD_DDict* dictionary = nullptr;  // for compressed virtual chunk locations
  ~Manifest() {
    if (dictionary) ZSTD_freeDDict(dictionary);
  }
  const generated::ArrayManifest* array(const std::array<std::uint8_t, 8>& node) const {
    const auto* arrays = root->arrays();
    std::size_t lo = 0, hi = arrays->size();
    while (lo < hi) {  // sorted by node id
      const std::size_t mid = (lo + hi) / 2;
      const auto* a = arrays->Get(static_cast<flatbuffers::uoffset_t>(mid));
      const int c = std::memcmp(a->node_id()->bytes()->Data(), node.data(), 8);
      if (c == 0) return a;
      if (c < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    return nullptr;
  }
};

IcechunkStore::IcechunkStore(std::shared_ptr<const Repository> repo,
                             VirtualChunkContainers containers, std::string display)
    : ReferenceStore(repo->storage(), std::move(containers)),
      repo_(std::move(repo)),
      display_(std::move(display)) {}

Result<std::shared_ptr<IcechunkStore>> IcechunkStore::open(std::shared_ptr<const Repository> repo,
                                                           std::string_view ref,
                                                           VirtualChunkContainers containers,
                                                           std::string display) {
  ZF_ASSIGN_OR_RETURN(ResolvedRef resolved, repo->resolve(ref));
  std::shared_ptr<IcechunkStore> store(
      new IcechunkStore(std::move(repo), std::move(containers), std::move(display)));
  store->ref_ = resolved;
  ZF_RETURN_IF_ERROR(store->load_snapshot(resolved.snapshot_id));
  return store;
}

Status IcechunkStore::load_snapshot(const std::string& id) {
  const std::string key = "snapshots/" + id;
  const Store& storage = *repo_->storage();
  ZF_ASSIGN_OR_RETURN(auto body, read_verified_file(storage, key, FileType::kSnapshot,
                                                    metadata_cap(repo_->limits())));
  if (!body)
    return not_found(storage.describe_key(key) + ": the snapshot of " + ref_.kind + " '" +
                     ref_.name + "' does not exist");
  auto payload = std::make_shared<Buffer>(std::move(*body));
  const auto* snap = generated::GetSnapshot(payload->data());
  const std::string what = storage.describe_key(key);
  if (encode_id(id_bytes<12>(snap->id())) != id)
    return corrupt_data(what + ": the file holds snapshot " + encode_id(id_bytes<12>(snap->id())));
  message_ = std::string(view(snap->message()));
  flushed_at_ = snap->flushed_at();
  nodes_.reserve(snap->nodes()->size());
  for (const auto* n : *snap->nodes()) {
    Node node;
    const std::string_view p = view(n->path());
    if (p.empty() || p.front() != '/')
      return corrupt_data(what + ": node path '" + std::string(p) + "' is not absolute");
    node.path = std::string(p.substr(1));
    if (!node.path.empty()) ZF_RETURN_IF_ERROR_CTX(validate_key(node.path), what);
    node.id = id_bytes<8>(n->id());
    node.user_data = {reinterpret_cast<const std::byte*>(n->user_data()->data()),
                      n->user_data()->size()};
    if (const auto* a = n->node_data_as_Array()) {
      node.is_array = true;
      for (const auto* m : *a->manifests()) {
        ManifestPointer mp;
        mp.id = id_bytes<12>(m->object_id());
        for (const auto* e : *m->extents()) mp.extents.push_back({e->from(), e->to()});
        node.manifests.push_back(std::move(mp));
      }
    } else if (n->node_data_as_Group() == nullptr) {
      return corrupt_data(what + ": node '" + std::string(p) + "' is neither an array nor a group");
    }
    if (!node_index_.emplace(node.path, nodes_.size()).second)
      return corrupt_data(what + ": node '" + std::string(p) + "' appears twice");
    nodes_.push_back(std::move(node));
  }
  snapshot_ = std::move(payload);
  return {};
}

const IcechunkStore::Node* IcechunkStore::find_node(std::string_view path) const {
  auto it = node_index_.find(std::string(path));
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

Result<std::shared_ptr<const IcechunkStore::Manifest>> IcechunkStore::manifest(
    const std::array<std::uint8_t, 12>& id) const {
  std::shared_ptr<ManifestSlot> slot;
  {
    std::lock_guard lock(manifests_mu_);
    auto& s = manifests_[id];
    if (!s) s = std::make_shared<ManifestSlot>();
    slot = s;
  }
  std::call_once(slot->once, [&] {
    const std::string key = "manifests/" + encode_id(id);
    const Store& storage = *repo_->storage();
    const std::string what = storage.describe_key(key);
    auto body = read_file(storage, key, FileType::kManifest,
                          {repo_->limits().max_manifest_bytes, "max_manifest_bytes"});
    if (!body.ok()) {
      slot->status = std::move(body).take_status();
      return;
    }
    if (!*body) {
      slot->status =
          not_found(what + ": a manifest of snapshot " + ref_.snapshot_id + " does not exist");
      return;
    }
    // The tables down to the chunk references; each of those is verified when a read reaches
    // it (find_chunk_ref, for_each_chunk).
    if (Status v = verify_manifest_tables((*body)->span(), what); !v.ok()) {
      slot->status = std::move(v);
      return;
    }
    manifests_loaded_.fetch_add(1, std::memory_order_relaxed);
    auto m = std::make_shared<Manifest>();
    m->payload = std::move(**body);
    m->root = generated::GetManifest(m->payload.data());
    if (std::memcmp(m->root->id()->bytes()->Data(), id.data(), 12) != 0) {
      slot->status = corrupt_data(what + ": the file holds manifest " +
                                  encode_id(id_bytes<12>(m->root->id())));
      return;
    }
    if (const auto* dict = m->root->location_dictionary(); dict != nullptr && dict->size() > 0) {
      m->dictionary = ZSTD_createDDict(dict->data(), dict->size());
      if (m->dictionary == nullptr) {
        slot->status = corrupt_data(what + ": unusable location dictionary");
        return;
      }
    }
    slot->manifest = std::move(m);
  });
  if (!slot->status.ok()) return slot->status;
  return slot->manifest;
}

std::size_t IcechunkStore::manifests_loaded() const {
  return manifests_loaded_.load(std::memory_order_relaxed);
}

Result<const generated::ChunkRef*> IcechunkStore::find_chunk_ref(
    const Manifest& m, const Node& node, std::span<const std::uint32_t> coords) const {
  const auto* am = m.array(node.id);
  if (am == nullptr) return nullptr;
  const auto* refs = am->refs();
  std::size_t lo = 0, hi = refs->size();
  while (lo < hi) {  // sorted by index
    const std::size_t mid = (lo + hi) / 2;
    const auto* r = refs->Get(static_cast<flatbuffers::uoffset_t>(mid));
    if (!chunk_ref_verified(m.payload.span(), r))
      return corrupt_data("chunk reference " + std::to_string(mid) +
                          " of the manifest is corrupt (FlatBuffers verification failed)");
    const int c = compare_index(r->index(), coords);
    if (c == 0) return r;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return nullptr;
}

Result<std::optional<ChunkReference>> IcechunkStore::chunk_reference(
    const Node& node, std::span<const std::uint32_t> coords, std::string_view key) const {
  const ManifestPointer* ptr = nullptr;
  for (const auto& m : node.manifests) {
    if (m.extents.size() != coords.size()) continue;
    bool inside = true;
    for (std::size_t d = 0; d < coords.size() && inside; ++d)
      inside = coords[d] >= m.extents[d].from && coords[d] < m.extents[d].to;
    if (inside) {
      ptr = &m;
      break;
    }
  }
  if (ptr == nullptr) return std::optional<ChunkReference>();
  ZF_ASSIGN_OR_RETURN(auto m, manifest(ptr->id));
  // Named only when something is wrong: a read builds no message.
  auto where = [&] { return describe_key(key) + " (manifest " + encode_id(ptr->id) + ")"; };
  auto found = find_chunk_ref(*m, node, coords);
  if (!found.ok()) return std::move(found).take_status().annotate(where());
  const generated::ChunkRef* ref = *found;
  if (ref == nullptr) return std::optional<ChunkReference>();
  if (const auto* data = ref->inline_()) {
    return std::optional(
        ChunkReference::of_inline({reinterpret_cast<const std::byte*>(data->data()), data->size()},
                                  std::shared_ptr<const void>(m, m.get())));
  }
  std::uint64_t end = 0;
  if (__builtin_add_overflow(ref->offset(), ref->length(), &end))
    return corrupt_data(where() + ": offset + length overflows");
  if (const auto* chunk = ref->chunk_id())
    return std::optional(ChunkReference::of_key("chunks/" + encode_id(id_bytes<12>(chunk)),
                                                ref->offset(), ref->length()));
  std::string location;
  if (const auto* loc = ref->location()) {
    location = std::string(view(loc));
  } else if (const auto* packed = ref->compressed_location()) {
    if (m->dictionary == nullptr)
      return corrupt_data(where() + ": a compressed location without a location dictionary");
    std::unique_ptr<ZSTD_DCtx, void (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                          [](ZSTD_DCtx* d) { ZSTD_freeDCtx(d); });
    location.resize(kMaxLocationBytes);
    const std::size_t n = ZSTD_decompress_usingDDict(dctx.get(), location.data(), location.size(),
                                                     packed->data(), packed->size(), m->dictionary);
    if (ZSTD_isError(n))
      return corrupt_data(where() + ": compressed location: " + ZSTD_getErrorName(n));
    location.resize(n);
  } else {
    return corrupt_data(where() + ": a chunk reference that is neither inline, native nor virtual");
  }
  if (location.starts_with("vcc://"))
    return unimplemented(where() + ": container-relative location '" + location +
                         "' (vcc://) is not supported");
  ChunkReference out =
      ChunkReference::of_location(std::move(location), ref->offset(), ref->length());
  if (const auto* etag = ref->checksum_etag()) out.etag = std::string(view(etag));
  if (ref->checksum_last_modified() != 0) out.modified_s = ref->checksum_last_modified();
  return std::optional(std::move(out));
}

Result<std::optional<ChunkReference>> IcechunkStore::reference(std::string_view key) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  std::string_view path;
  if (key == "zarr.json" || key.ends_with("/zarr.json")) {
    path = key.substr(0, key.size() == 9 ? 0 : key.size() - 10);
    const Node* node = find_node(path);
    if (node == nullptr) return std::optional<ChunkReference>();
    return std::optional(ChunkReference::of_inline(node->user_data, snapshot_));
  }
  std::vector<std::uint32_t> coords;
  if (!parse_chunk_key(key, path, coords)) return std::optional<ChunkReference>();
  const Node* node = find_node(path);
  if (node == nullptr || !node->is_array) return std::optional<ChunkReference>();
  return chunk_reference(*node, coords, key);
}

Status IcechunkStore::for_each_chunk(
    const Node& node, const std::function<void(std::span<const std::uint32_t>, int)>& fn) const {
  std::set<std::array<std::uint8_t, 12>> seen;
  std::vector<std::uint32_t> coords;
  for (const auto& ptr : node.manifests) {
    ZF_ASSIGN_OR_RETURN(auto m, manifest(ptr.id));
    const auto* am = m->array(node.id);
    if (am == nullptr) continue;
    for (const auto* r : *am->refs()) {
      if (!chunk_ref_verified(m->payload.span(), r))
        return corrupt_data(repo_->storage()->describe_key("manifests/" + encode_id(ptr.id)) +
                            ": a chunk reference of array '" + node.path +
                            "' is corrupt (FlatBuffers verification failed)");
      coords.assign(r->index()->begin(), r->index()->end());
      if (coords.size() != ptr.extents.size()) continue;
      bool inside = true;
      for (std::size_t d = 0; d < coords.size() && inside; ++d)
        inside = coords[d] >= ptr.extents[d].from && coords[d] < ptr.extents[d].to;
      if (!inside) continue;
      fn(coords, r->inline_() ? 1 : r->chunk_id() ? 0 : 2);
    }
  }
  return {};
}

Result<ChunkCounts> IcechunkStore::chunk_counts(std::string_view path) const {
  const Node* node = find_node(path);
  if (node == nullptr || !node->is_array)
    return not_found(describe_key(path) + " is not an array of snapshot " + ref_.snapshot_id);
  ChunkCounts counts;
  ZF_RETURN_IF_ERROR(for_each_chunk(*node, [&](std::span<const std::uint32_t>, int kind) {
    (kind == 0 ? counts.native : kind == 1 ? counts.inline_ : counts.virtual_) += 1;
  }));
  return counts;
}

Result<std::vector<ListEntry>> IcechunkStore::list(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::vector<ListEntry> out;
  for (const auto& node : nodes_) {
    if (!p.empty() && node.path != p && !node.path.starts_with(p + "/")) continue;
    out.push_back(
        {node.path.empty() ? "zarr.json" : node.path + "/zarr.json", node.user_data.size()});
    if (!node.is_array) continue;
    Status inner;
    ZF_RETURN_IF_ERROR(for_each_chunk(node, [&](std::span<const std::uint32_t> coords, int) {
      std::string key = chunk_key_of(node.path, coords);
      auto ref = reference(key);
      std::uint64_t size = 0;
      if (ref.ok() && ref->has_value())
        size = (*ref)->kind == ChunkReference::Kind::kInline ? (*ref)->inline_bytes.size()
                                                             : (*ref)->length.value_or(0);
      out.push_back({std::move(key), size});
    }));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

Result<std::vector<std::string>> IcechunkStore::list_dir(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::set<std::string> names;
  if (const Node* node = find_node(p)) {
    names.insert("zarr.json");
    if (node->is_array && !node->manifests.empty()) names.insert("c");
  }
  const std::string below = p.empty() ? "" : p + "/";
  for (const auto& node : nodes_) {
    if (node.path.empty() || !node.path.starts_with(below) || node.path.size() == below.size())
      continue;
    const std::string_view rest = std::string_view(node.path).substr(below.size());
    names.emplace(rest.substr(0, rest.find('/')));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::string IcechunkStore::describe_key(std::string_view key) const {
  std::string s = display_ + "@" + ref_.snapshot_id;
  if (!key.empty()) s += "/" + std::string(key);
  return s;
}

}  // namespace zarrflow::icechunk
