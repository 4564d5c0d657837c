// Variable-length elements (array→bytes): `vlen-utf8` and `vlen-bytes` (Zarr v3, as zarr-python 3
// writes them) and numcodecs' object codecs `vlen-utf8`, `vlen-bytes`, `vlen-array` (Zarr v2,
// where the filter or compressor with that id turns the object array into bytes).
// v3 example: "data_type": "string", "codecs": [{"name": "vlen-utf8"}, {"name": "zstd", ...}]
// v2 example: "dtype": "|O", "filters": [{"id": "vlen-utf8"}]
//
// Encoded chunk (numcodecs' format): a little-endian uint32 item count, then per element in C order
// of the (encoded) chunk a little-endian uint32 byte length and that many bytes: UTF-8 text, raw
// bytes, or the elements of a 1-d array of the configured NumPy dtype ("vlen-array").
//
// Elements have no fixed size, so these codecs do not decode into strided element memory:
// split() turns a decoded chunk into one (pointer, length) item per element, after checking the
// item count against the chunk, every length against the bytes left, UTF-8 for text and whole
// elements for arrays. zarr/vlen_read.h reads arrays through it.
#pragma once

#include <vector>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// One element of a decoded chunk: bytes inside the buffer split() was given.
struct VlenItem {
  const std::byte* data = nullptr;
  std::uint32_t size = 0;
};

class VlenCodec final : public ArrayToBytesCodec {
 public:
  enum class Content : std::uint8_t { kUtf8, kBytes, kArray };
  // `element` is the array element type of kArray content (else unused).
  VlenCodec(Content content, std::string name, DataType element)
      : content_(content), name_(std::move(name)), element_(element) {}

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::optional<std::int64_t> encoded_size(const ChunkSpec&) const override {
    return std::nullopt;
  }
  [[nodiscard]] Content content() const { return content_; }

  // Always kUnimplemented: variable-length elements are read with read_vlen (zarr/vlen_read.h).
  Status decode_into(ConstByteSpan encoded, const ChunkSpec& spec, const Selection& sel,
                     const StridedView& dest, const DecodeContext& ctx) const override;

  // The `count` items of the decoded chunk `encoded` (kCorruptData naming what is wrong).
  Status split(ConstByteSpan encoded, std::int64_t count, std::vector<VlenItem>& items) const;

 private:
  Content content_;
  std::string name_;
  DataType element_;
};

// The codec's variable-length codec when it is one, else null.
const VlenCodec* as_vlen_codec(const ArrayToBytesCodec& codec);

// Byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates and code
// points past U+10FFFF are invalid, as for Python's decoder), or text.size() when it is valid.
std::size_t utf8_invalid_at(ConstByteSpan text);

}  // namespace zarrflow
