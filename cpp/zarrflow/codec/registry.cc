#include "zarrflow/codec/registry.h"

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"

namespace zarrflow {
namespace {

struct Registries {
  CodecRegistry v3, v2;
  Registries() {
    register_bytes_codec(v3, v2);
    register_transpose_codec(v3, v2);
    register_sharding_codec(v3, v2);
    register_crc32c_codec(v3, v2);
    register_zstd_codec(v3, v2);
    register_deflate_codecs(v3, v2);
    register_lz4_codec(v3, v2);
    register_blosc_codec(v3, v2);
    register_vlen_codecs(v3, v2);
    register_v2_filters(v3, v2);
  }
};

const Registries& registries() {
  static const Registries r;
  return r;
}

}  // namespace

void CodecRegistry::add(std::string name, Factory factory) {
  factories_[std::move(name)] = std::move(factory);
}

bool CodecRegistry::contains(std::string_view name) const {
  return factories_.find(name) != factories_.end();
}

Result<std::shared_ptr<const Codec>> CodecRegistry::create(std::string_view name,
                                                           const nlohmann::json& configuration,
                                                           const ChunkSpec& spec) const {
  auto it = factories_.find(name);
  if (it == factories_.end())
    return unimplemented("codec '" + std::string(name) + "' is not supported");
  auto made = it->second(configuration, spec);
  if (!made.ok())
    return std::move(made).take_status().annotate("codec '" + std::string(name) + "'");
  return made;
}

const CodecRegistry& CodecRegistry::v3() { return registries().v3; }
const CodecRegistry& CodecRegistry::v2() { return registries().v2; }

}  // namespace zarrflow
