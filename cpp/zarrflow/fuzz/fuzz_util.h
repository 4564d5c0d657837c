// Shared pieces of the libFuzzer targets in this folder (see docs/fuzzing.md).
//
// Every target reads its input front to back with InputReader: a few fixed-size fields that pick
// a configuration, then the bytes under test. make_seeds.py writes seed inputs in the same
// layouts. A broken guarantee (a decode that succeeds with the wrong size, an internal error, a
// plan pointing outside its chunk) aborts through require(), which libFuzzer records as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec.h"
#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/core/status.h"

namespace zarrflow::fuzz {

// The largest decoded size a target asks a decoder for: keeps every execution small and fast.
constexpr std::size_t kMaxDecodedBytes = std::size_t{1} << 18;

class InputReader {
 public:
  InputReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  // Fixed-size little-endian fields; past the end of the input they read as zero.
  std::uint8_t u8();
  std::uint16_t u16();
  std::uint32_t u32();
  // Everything not read yet.
  [[nodiscard]] ConstByteSpan rest() const;
  [[nodiscard]] std::string_view rest_text() const;

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Aborts with `what` when `ok` is false.
void require(bool ok, const char* what);
// Aborts with `what` and the status message when `s` is not OK.
void require_ok(const Status& s, const char* what);
// A status a malformed input may produce: anything but kInternal (which marks a zarrflow bug).
void require_not_internal(const Status& s);
// With ZARRFLOW_FUZZ_VERBOSE=1 in the environment, prints "what: OK" or "what: <error>" (to see
// what an input reaches when writing seeds); otherwise does nothing.
void note(const char* what, const Status& s);
// Reads every byte of `bytes` (so ASan checks the span lies inside live memory).
void touch(ConstByteSpan bytes);
// `data` split at NUL bytes (JSON text cannot contain one): the documents of a metadata input.
std::vector<std::string_view> split_documents(const std::uint8_t* data, std::size_t size);

// The bytes→bytes decoder contract, for an input laid out as
//   u8 flags (bit 0: pass the declared size to decode()) | u32 declared size | encoded bytes.
// decode() and decode_into() must each either fail with a zarrflow error or produce exactly the
// declared size (decode() without a size: anything, as long as the result is readable).
void check_bytes_to_bytes_decoder(const BytesToBytesCodec& codec, InputReader& in);

// The bytes→bytes codec of the Zarr v2 registry built from `config` (numcodecs form, with "id"),
// or null when the configuration is rejected.
std::shared_ptr<const BytesToBytesCodec> make_v2_codec(const nlohmann::json& config);

// Shapes and selections for the targets that decode chunks of an array:
//   shape: u8 ndim (1 + n % max_ndim) | per dimension u8 extent (1 + n % max_extent)
//   selection: per dimension u8 start | u8 step (1 + n % 3) | u8 count (1 + n % what fits), so
//   always non-empty and inside the shape.
Shape read_shape(InputReader& in, int max_ndim, int max_extent);
Selection read_selection(InputReader& in, const Shape& shape);
// A destination of `count` elements of `elem` bytes held in exactly its bytes (so ASan reports
// any write outside it): C order, or reversed strides (Fortran order) when `reversed_strides`.
struct Destination {
  std::vector<std::byte> bytes;
  StridedView view;
};
Destination make_destination(const Shape& count, std::int64_t elem, bool reversed_strides);
// Decodes `sel` of the chunk stored as `stored` through `chain` into `dest`; returns the status
// (never kInternal).
Status decode_selection(const CodecChain& chain, ConstByteSpan stored, const Selection& sel,
                        Destination& dest);

// Zarr v3 data type names the array-level targets choose from.
extern const char* const kV3DataTypes[];
extern const std::size_t kNumV3DataTypes;

// NumPy typestrs the filter targets choose from (index = a byte of the input modulo the count).
extern const char* const kTypestrs[];
extern const std::size_t kNumTypestrs;

}  // namespace zarrflow::fuzz
