// numcodecs `bz2` (bytes→bytes): bzip2 streams, decoded with libbz2.
// Spec: https://numcodecs.readthedocs.io/en/stable/compression/bz2.html (numcodecs/bz2.py, which
//       calls Python's bz2.decompress)
// Examples:
//   Zarr v2: {"id": "bz2", "level": 1}
//   Zarr v3 (zarr-python): {"name": "numcodecs.bz2", "configuration": {"level": 3}}
//
// Like bz2.decompress: the input may hold several concatenated streams; once one stream has been
// decoded, bytes after it that are not a valid stream are ignored (a stream that starts validly
// but is cut short is still an error), and empty input decodes to nothing. Each block's CRC and
// the stream CRC are verified by libbz2.
#include <bzlib.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/stream_output.h"

namespace zarrflow {
namespace {

// Output limit when the decoded size is unknown (the buffer grows only as data is produced).
constexpr std::uint64_t kMaxOutput = std::uint64_t{1} << 40;

std::string bz2_error(int code) {
  switch (code) {
    case BZ_DATA_ERROR_MAGIC:
      return "not a bzip2 stream (bad magic bytes)";
    case BZ_DATA_ERROR:
      return "corrupt stream (bad block or CRC)";
    case BZ_MEM_ERROR:
      return "out of memory";
    default:
      return "libbz2 error " + std::to_string(code);
  }
}

struct Bz2Stream {
  bz_stream s{};
  bool live = false;
  ~Bz2Stream() {
    if (live) BZ2_bzDecompressEnd(&s);
  }
};

enum class StreamEnd : std::uint8_t { kComplete, kInvalid };

// Decodes one stream starting at in[pos]; advances pos and produced. kInvalid when the bytes are
// not a valid stream (`message` says why); a truncated stream and a full fixed output are errors.
Result<StreamEnd> decode_stream(ConstByteSpan in, std::size_t& pos, StreamOutput& out,
                                std::size_t& produced, std::string& message) {
  Bz2Stream z;
  if (const int r = BZ2_bzDecompressInit(&z.s, 0, 0); r != BZ_OK)
    return out_of_range("bz2: cannot start a decoder: " + bz2_error(r));
  z.live = true;
  char spare = 0;  // probes a full fixed output for more data
  for (;;) {
    const std::size_t in_left = in.size() - pos;
    const std::size_t room = out.capacity() - produced;
    z.s.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data() + pos));
    z.s.avail_in = static_cast<unsigned>(std::min<std::size_t>(in_left, UINT_MAX));
    z.s.next_out = room ? reinterpret_cast<char*>(out.at(produced)) : &spare;
    z.s.avail_out = room ? static_cast<unsigned>(std::min<std::size_t>(room, UINT_MAX)) : 1;
    const unsigned in_before = z.s.avail_in, out_before = z.s.avail_out;
    const int r = BZ2_bzDecompress(&z.s);
    pos += in_before - z.s.avail_in;
    const std::size_t wrote = out_before - z.s.avail_out;
    if (room == 0 && wrote > 0) {
      ZF_RETURN_IF_ERROR(out.grow());  // an error for a fixed output
      *out.at(produced) = static_cast<std::byte>(spare);
    }
    produced += wrote;
    if (r == BZ_STREAM_END) return StreamEnd::kComplete;
    if (r != BZ_OK) {
      message = bz2_error(r);
      if (r == BZ_MEM_ERROR) return out_of_range("bz2: " + message);
      return StreamEnd::kInvalid;
    }
    if (pos == in.size() && z.s.avail_out > 0)
      return corrupt_data("bz2: stream ends before its end-of-stream marker (truncated)");
    if (out.capacity() == produced && !out.fixed()) ZF_RETURN_IF_ERROR(out.grow());
  }
}

Result<std::size_t> decompress(ConstByteSpan in, StreamOutput& out) {
  ZF_RETURN_IF_ERROR(out.start());
  std::size_t pos = 0, produced = 0;
  bool first = true;
  while (pos < in.size()) {
    const std::size_t stream_start = produced;
    std::string why;
    ZF_ASSIGN_OR_RETURN(StreamEnd end, decode_stream(in, pos, out, produced, why));
    if (end == StreamEnd::kInvalid) {
      if (first) return corrupt_data("bz2: " + why);
      produced = stream_start;  // trailing bytes that are not a stream: ignored, like Python
      break;
    }
    first = false;
  }
  return produced;
}

class Bz2Codec final : public BytesToBytesCodec {
 public:
  explicit Bz2Codec(int level) : level_(level) {}

  [[nodiscard]] std::string name() const override { return "bz2"; }
  [[nodiscard]] std::string describe() const override {
    return "bz2(level=" + std::to_string(level_) + ")";
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) return decode_known_size(*this, in, *decoded_size, scratch);
    StreamOutput out("bz2", scratch, std::max<std::uint64_t>(4096, std::uint64_t{in.size()} * 4),
                     kMaxOutput);
    ZF_ASSIGN_OR_RETURN(std::size_t produced, decompress(in, out));
    return out.finish(produced);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    StreamOutput sink("bz2", out);
    ZF_ASSIGN_OR_RETURN(std::size_t produced, decompress(in, sink));
    return sink.finish(produced).status();
  }

 private:
  int level_;
};

Result<std::shared_ptr<const Codec>> make_bz2(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "level"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t level, config::get_int(cfg, "level", 1));
  if (level < 1 || level > 9)
    return invalid_metadata("field 'level': expected 1..9, got " + std::to_string(level));
  return std::shared_ptr<const Codec>(std::make_shared<Bz2Codec>(static_cast<int>(level)));
}

}  // namespace

void register_bz2_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("bz2", make_bz2);
  v3.add("numcodecs.bz2", make_bz2);
}

}  // namespace zarrflow
