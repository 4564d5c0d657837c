// numcodecs `jenkins_lookup3` (bytes→bytes): Bob Jenkins' lookup3 hash of the payload (HDF5's
// H5_checksum_lookup3), stored as 4 little-endian bytes after it.
// Spec: https://numcodecs.readthedocs.io/en/stable/checksum32.html#jenkinslookup3
//       (numcodecs/checksum32.py, numcodecs/jenkins.pyx)
// Examples:
//   Zarr v2: {"id": "jenkins_lookup3", "initval": 0, "prefix": null}
//   Zarr v3 (zarr-python): {"name": "numcodecs.jenkins_lookup3", "configuration": {}}
//
// `initval` seeds the hash; `prefix` (a list of byte values) is hashed before the payload.
// The hash reads the data in 12-byte blocks of three little-endian 32-bit words (hashlittle's
// byte-at-a-time path, so alignment does not matter), mixing after each full block but the last;
// the last 1..12 bytes are added and finalised. Empty data hashes to the initial state.
#include <bit>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

// The first min(n, 4) bytes at k as a little-endian word (missing bytes are zero).
std::uint32_t word_le(const std::uint8_t* k, std::size_t n) {
  if (n >= 4) return load_le32(k);
  std::uint32_t w = 0;
  for (std::size_t i = 0; i < n; ++i) w |= std::uint32_t{k[i]} << (8 * i);
  return w;
}

void mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) {
  a -= c, a ^= std::rotl(c, 4), c += b;
  b -= a, b ^= std::rotl(a, 6), a += c;
  c -= b, c ^= std::rotl(b, 8), b += a;
  a -= c, a ^= std::rotl(c, 16), c += b;
  b -= a, b ^= std::rotl(a, 19), a += c;
  c -= b, c ^= std::rotl(b, 4), b += a;
}

std::uint32_t final_mix(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  c ^= b, c -= std::rotl(b, 14);
  a ^= c, a -= std::rotl(c, 11);
  b ^= a, b -= std::rotl(a, 25);
  c ^= b, c -= std::rotl(b, 16);
  a ^= c, a -= std::rotl(c, 4);
  b ^= a, b -= std::rotl(a, 14);
  c ^= b, c -= std::rotl(b, 24);
  return c;
}

class JenkinsConfig {
 public:
  static Result<JenkinsConfig> parse(const nlohmann::json& cfg) {
    JenkinsConfig j;
    ZF_ASSIGN_OR_RETURN(std::int64_t initval, config::get_int(cfg, "initval", 0));
    if (initval < 0 || initval > UINT32_MAX)
      return invalid_metadata("field 'initval': expected 0..2^32-1, got " +
                              std::to_string(initval));
    j.initval = static_cast<std::uint32_t>(initval);
    const auto it = cfg.is_object() ? cfg.find("prefix") : cfg.end();
    if (it != cfg.end() && !it->is_null()) {
      if (!it->is_array())
        return invalid_metadata("field 'prefix': expected a list of byte values, got " +
                                it->dump());
      for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 255)
          return invalid_metadata("field 'prefix': expected byte values 0..255, got " + v.dump());
        j.prefix.push_back(static_cast<std::byte>(v.get<int>()));
      }
    }
    return j;
  }
  std::uint32_t initval = 0;
  std::vector<std::byte> prefix;
};

Result<std::shared_ptr<const Codec>> make_jenkins(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "initval", "prefix"}));
  ZF_ASSIGN_OR_RETURN(JenkinsConfig j, JenkinsConfig::parse(cfg));
  std::string options;
  if (j.initval != 0) options = "initval=" + std::to_string(j.initval);
  if (!j.prefix.empty())
    options += (options.empty() ? "" : ", ") + std::to_string(j.prefix.size()) + "-byte prefix";
  Checksum32Codec::Function hash;
  if (j.prefix.empty()) {
    hash = [initval = j.initval](ConstByteSpan d) { return jenkins_lookup3(d, initval); };
  } else {
    hash = [j](ConstByteSpan d) {
      std::vector<std::byte> all(j.prefix);
      all.insert(all.end(), d.begin(), d.end());
      return jenkins_lookup3(all, j.initval);
    };
  }
  return std::shared_ptr<const Codec>(
      std::make_shared<Checksum32Codec>("jenkins_lookup3", hash, /*at_start=*/false, options));
}

}  // namespace

std::uint32_t jenkins_lookup3(ConstByteSpan data, std::uint32_t initval) {
  std::size_t length = data.size();
  std::uint32_t a = 0xDEADBEEFu + static_cast<std::uint32_t>(length) + initval;
  std::uint32_t b = a, c = a;
  if (length == 0) return c;
  const auto* k = reinterpret_cast<const std::uint8_t*>(data.data());
  for (; length > 12; length -= 12, k += 12) {
    a += word_le(k, 4);
    b += word_le(k + 4, 4);
    c += word_le(k + 8, 4);
    mix(a, b, c);
  }
  // The last 1..12 bytes; words past the end contribute nothing.
  a += word_le(k, length);
  if (length > 4) b += word_le(k + 4, length - 4);
  if (length > 8) c += word_le(k + 8, length - 8);
  return final_mix(a, b, c);
}

void register_jenkins_lookup3_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("jenkins_lookup3", make_jenkins);
  v3.add("numcodecs.jenkins_lookup3", make_jenkins);
}

}  // namespace zarrflow
