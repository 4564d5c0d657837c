// Codecs without a native decoder, decoded by an implementation from outside the library.
//
// The Python binding installs a factory that builds the numcodecs codec of that name (pcodec,
// zfpy, any codec numcodecs knows) and calls its decode(); the codec layer knows nothing of
// Python. CodecRegistry::create consults the factory for names it does not know: every Zarr v2
// compressor/filter id, and Zarr v3 names "numcodecs.<id>" (array→bytes for zarr-python's
// `numcodecs.pcodec` and `numcodecs.zfpy`, bytes→bytes otherwise). Without a factory, or when the
// factory declines, the name stays unsupported (kUnimplemented with the factory's reason).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

struct ForeignCodecRequest {
  std::string name;                           // as stored: "numcodecs.pcodec" (v3) or "pcodec" (v2)
  std::string id;                             // the numcodecs id: "pcodec"
  int zarr_format = 3;                        // 2 or 3
  nlohmann::json config;                      // the numcodecs configuration, with "id"
  CodecKind kind = CodecKind::kBytesToBytes;  // kBytesToBytes or kArrayToBytes
  ChunkSpec spec;  // the chunk on the codec's decoded side (meaningful for kArrayToBytes)
};

// Decodes chunks for one codec. Called from many threads at once.
class ForeignDecoder {
 public:
  // Where a decode puts its result: called once with the decoded size, it returns the memory to
  // fill (the caller's destination, or scratch of that size), or the error when the size is wrong
  // for the chunk.
  using Output = std::function<Result<ByteSpan>(std::size_t decoded_size)>;

  virtual ~ForeignDecoder() = default;
  // Decodes `in` into the memory `output` gives: bytes for bytes→bytes codecs; for array→bytes
  // codecs the chunk's elements in C order and native byte order. A failure is kCorruptData (or
  // another code) whose message names the codec and says why.
  virtual Status decode(ConstByteSpan in, const Output& output) const = 0;
  // Short form for `inspect`: "numcodecs.pcodec(level=8) [numcodecs]".
  [[nodiscard]] virtual std::string describe() const = 0;
};

using ForeignCodecFactory = std::function<Result<std::shared_ptr<const ForeignDecoder>>(
    const ForeignCodecRequest& request)>;

// Installs the factory (replacing any; an empty function removes it). Thread-safe.
void set_foreign_codec_factory(ForeignCodecFactory factory);

// The codec for `request` through the installed factory, wrapped as a codec of request.kind.
// kUnimplemented naming the codec when there is no factory.
Result<std::shared_ptr<const Codec>> make_foreign_codec(const ForeignCodecRequest& request);

}  // namespace zarrflow
