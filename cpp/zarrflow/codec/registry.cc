#include "zarrflow/codec/registry.h"

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/foreign.h"

namespace zarrflow {
namespace {

struct Registries {
  CodecRegistry v3{3}, v2{2};
  Registries() {
    register_bytes_codec(v3, v2);
    register_transpose_codec(v3, v2);
    register_sharding_codec(v3, v2);
    register_crc32c_codec(v3, v2);
    register_zstd_codec(v3, v2);
    register_deflate_codecs(v3, v2);
    register_lz4_codec(v3, v2);
    register_blosc_codec(v3, v2);
    register_delta_codec(v3, v2);
    register_fixedscaleoffset_codec(v3, v2);
    register_astype_codec(v3, v2);
    register_shuffle_codec(v3, v2);
    register_quantize_codec(v3, v2);
    register_bitround_codec(v3, v2);
    register_packbits_codec(v3, v2);
    register_bz2_codec(v3, v2);
    register_lzma_codec(v3, v2);
    register_crc32_codec(v3, v2);
    register_adler32_codec(v3, v2);
    register_fletcher32_codec(v3, v2);
    register_jenkins_lookup3_codec(v3, v2);
    register_vlen_codecs(v3, v2);
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
  if (it == factories_.end()) return create_foreign(name, configuration, spec);  // names itself
  auto made = it->second(configuration, spec);
  if (!made.ok())
    return std::move(made).take_status().annotate("codec '" + std::string(name) + "'");
  return made;
}

Result<std::shared_ptr<const Codec>> CodecRegistry::create_foreign(
    std::string_view name, const nlohmann::json& configuration, const ChunkSpec& spec) const {
  constexpr std::string_view kPrefix = "numcodecs.";
  if (zarr_format_ == 3 && !name.starts_with(kPrefix))
    return unimplemented("codec '" + std::string(name) + "' is not supported");
  ForeignCodecRequest request;
  request.name = std::string(name);
  request.id = std::string(zarr_format_ == 3 ? name.substr(kPrefix.size()) : name);
  request.zarr_format = zarr_format_;
  request.config = configuration.is_object() ? configuration : nlohmann::json::object();
  request.config["id"] = request.id;
  // zarr-python's numcodecs codecs that turn arrays into bytes; every other is bytes→bytes.
  const bool array_to_bytes = zarr_format_ == 3 && (request.id == "pcodec" || request.id == "zfpy");
  request.kind = array_to_bytes ? CodecKind::kArrayToBytes : CodecKind::kBytesToBytes;
  request.spec = spec;
  return make_foreign_codec(request);
}

const CodecRegistry& CodecRegistry::v3() { return registries().v3; }
const CodecRegistry& CodecRegistry::v2() { return registries().v2; }

}  // namespace zarrflow
