// The numcodecs 32-bit checksum codecs (bytes→bytes): a checksum of the payload stored as 4
// little-endian bytes before it (location "start") or after it ("end"). Decoding verifies it and
// returns a view of the payload: no copy. A mismatch is kChecksumMismatch.
// Spec: https://numcodecs.readthedocs.io/en/stable/checksum32.html (numcodecs/checksum32.py)
// The codecs, one per file: crc32.cc, adler32.cc, fletcher32.cc, jenkins_lookup3.cc (crc32c.cc is
// the Zarr v3 `crc32c`, which also serves numcodecs' CRC32C).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// HDF5's Fletcher-32 (H5_checksum_fletcher32): big-endian 16-bit words, an odd last byte as the
// high byte of a word; numcodecs.fletcher32.
std::uint32_t fletcher32(ConstByteSpan data);
// Bob Jenkins' lookup3 hashlittle() reading bytes in little-endian order (HDF5's
// H5_checksum_lookup3); numcodecs.checksum32.JenkinsLookup3.
std::uint32_t jenkins_lookup3(ConstByteSpan data, std::uint32_t initval);

class Checksum32Codec final : public BytesToBytesCodec {
 public:
  using Function = std::function<std::uint32_t(ConstByteSpan)>;
  // `options` is what describe() adds in parentheses ("" for none).
  Checksum32Codec(std::string name, Function checksum, bool at_start, std::string options)
      : name_(std::move(name)),
        checksum_(std::move(checksum)),
        at_start_(at_start),
        options_(std::move(options)) {}

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] std::string describe() const override {
    return options_.empty() ? name_ : name_ + "(" + options_ + ")";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    return decoded + 4;
  }
  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override;

 private:
  std::string name_;
  Function checksum_;
  bool at_start_;
  std::string options_;
};

// numcodecs' `location` field: true for "start", false for "end", `default_at_start` when absent.
Result<bool> parse_checksum_location(const nlohmann::json& cfg, bool default_at_start);

}  // namespace zarrflow
