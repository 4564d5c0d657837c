// Name → factory registries for Zarr v3 codecs and Zarr v2 compressors/filters.
//
// Each codec file defines one `register_<name>_codec(CodecRegistry&)` function; builtin.cc calls
// them all (explicit calls, not static initialisers, so a static library keeps every codec).
// Factories validate their configuration and bind to the ChunkSpec the codec will decode to; a
// bad configuration is kInvalidMetadata naming the codec and the field.
// Names no registry knows go to the foreign-codec factory when one is installed (foreign.h).
// Thread-safety: registries are filled once, on first use, then only read.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

class CodecRegistry {
 public:
  // `configuration` is the codec's "configuration" object (v3) or the whole numcodecs config
  // object including "id" (v2); `spec` is the chunk on the codec's decoded side.
  using Factory = std::function<Result<std::shared_ptr<const Codec>>(
      const nlohmann::json& configuration, const ChunkSpec& spec)>;

  // The registry of Zarr v3 names (3) or numcodecs ids for Zarr v2 (2).
  explicit CodecRegistry(int zarr_format = 3) : zarr_format_(zarr_format) {}

  void add(std::string name, Factory factory);
  [[nodiscard]] bool contains(std::string_view name) const;
  // Unknown names go to the foreign-codec factory (v2 ids, v3 "numcodecs.<id>"), else are
  // kUnimplemented: "codec 'x' is not supported".
  Result<std::shared_ptr<const Codec>> create(std::string_view name,
                                              const nlohmann::json& configuration,
                                              const ChunkSpec& spec) const;

  // The registries with every built-in codec.
  static const CodecRegistry& v3();
  static const CodecRegistry& v2();

 private:
  Result<std::shared_ptr<const Codec>> create_foreign(std::string_view name,
                                                      const nlohmann::json& configuration,
                                                      const ChunkSpec& spec) const;

  int zarr_format_;
  std::map<std::string, Factory, std::less<>> factories_;
};

}  // namespace zarrflow
