// numcodecs `lzma` (bytes→bytes): .xz, .lzma ("alone") or raw LZMA streams, decoded with liblzma.
// Spec: https://numcodecs.readthedocs.io/en/stable/compression/lzma.html (numcodecs/lzma.py, which
//       calls Python's lzma.decompress(buf, format=format, filters=filters))
// Examples:
//   Zarr v2: {"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null}
//   Zarr v3 (zarr-python): {"name": "numcodecs.lzma", "configuration": {"preset": 2}}
//   Raw: {"id": "lzma", "format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}
//
// `format` is Python's lzma.FORMAT_*: 0 auto (.xz or .lzma), 1 xz (the default), 2 alone, 3 raw
// (which needs `filters`, Python's filter specifications: "id" plus the LZMA options "preset",
// "dict_size", "lc", "lp", "pb", "mode", "nice_len", "mf", "depth", the delta filter's "dist" or
// a branch filter's "start_offset"). `check` and `preset` only matter when encoding.
// Like lzma.decompress: the input may hold several concatenated streams; once one stream has been
// decoded, bytes after it that are not a valid stream are ignored (a stream cut short is still an
// error). Integrity checks (CRC32, CRC64, SHA-256) are verified by liblzma. Decoders are refused
// more than kMemLimit bytes of memory (a valid stream needs at most its 1.5 GiB dictionary).
#include <lzma.h>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/stream_output.h"

namespace zarrflow {
namespace {

constexpr std::uint64_t kMaxOutput = std::uint64_t{1} << 40;
constexpr std::uint64_t kMemLimit = (std::uint64_t{3} << 29) + (std::uint64_t{64} << 20);
constexpr std::uint32_t kMaxDictSize = (std::uint32_t{1} << 30) + (std::uint32_t{1} << 29);

enum Format : int { kAuto = 0, kXz = 1, kAlone = 2, kRaw = 3 };

const char* format_name(int f) {
  switch (f) {
    case kAuto:
      return "auto";
    case kXz:
      return "xz";
    case kAlone:
      return "alone";
    default:
      return "raw";
  }
}

std::string lzma_error(lzma_ret r) {
  switch (r) {
    case LZMA_FORMAT_ERROR:
      return "not an lzma stream of this format (bad header)";
    case LZMA_OPTIONS_ERROR:
      return "the stream uses unsupported options";
    case LZMA_DATA_ERROR:
      return "corrupt stream (bad data or integrity check)";
    case LZMA_BUF_ERROR:
      return "stream ends before its end marker (truncated)";
    case LZMA_MEM_ERROR:
      return "out of memory";
    case LZMA_MEMLIMIT_ERROR:
      return "the stream needs more than " + std::to_string(kMemLimit) + " bytes of decoder memory";
    default:
      return "liblzma error " + std::to_string(static_cast<int>(r));
  }
}

// A raw filter chain: the filters with their options, terminated by LZMA_VLI_UNKNOWN.
struct FilterChain {
  std::vector<lzma_filter> filters;
  std::vector<std::unique_ptr<lzma_options_lzma>> lzma;
  std::vector<std::unique_ptr<lzma_options_delta>> delta;
  std::vector<std::unique_ptr<lzma_options_bcj>> bcj;
};

Result<std::uint32_t> get_u32(const nlohmann::json& f, const char* field, std::uint32_t dflt) {
  ZF_ASSIGN_OR_RETURN(std::int64_t v, config::get_int(f, field, dflt));
  if (v < 0 || v > UINT32_MAX)
    return invalid_metadata(std::string("field '") + field + "': " + std::to_string(v) +
                            " is out of range");
  return static_cast<std::uint32_t>(v);
}

Status parse_filter(const nlohmann::json& f, std::size_t i, FilterChain& chain) {
  if (!f.is_object())
    return invalid_metadata("filters[" + std::to_string(i) + "] must be an object, got " +
                            f.dump());
  ZF_ASSIGN_OR_RETURN(std::int64_t id, config::get_int(f, "id"));
  const auto vid = static_cast<lzma_vli>(id);
  lzma_filter out{vid, nullptr};
  if (vid == LZMA_FILTER_LZMA1 || vid == LZMA_FILTER_LZMA2) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(
        f, {"id", "preset", "dict_size", "lc", "lp", "pb", "mode", "nice_len", "mf", "depth"}));
    auto o = std::make_unique<lzma_options_lzma>();
    ZF_ASSIGN_OR_RETURN(std::uint32_t preset, get_u32(f, "preset", LZMA_PRESET_DEFAULT));
    if (lzma_lzma_preset(o.get(), preset))
      return invalid_metadata("filters[" + std::to_string(i) + "]: invalid preset " +
                              std::to_string(preset));
    ZF_ASSIGN_OR_RETURN(o->dict_size, get_u32(f, "dict_size", o->dict_size));
    ZF_ASSIGN_OR_RETURN(o->lc, get_u32(f, "lc", o->lc));
    ZF_ASSIGN_OR_RETURN(o->lp, get_u32(f, "lp", o->lp));
    ZF_ASSIGN_OR_RETURN(o->pb, get_u32(f, "pb", o->pb));
    ZF_ASSIGN_OR_RETURN(std::uint32_t mode, get_u32(f, "mode", o->mode));
    ZF_ASSIGN_OR_RETURN(o->nice_len, get_u32(f, "nice_len", o->nice_len));
    ZF_ASSIGN_OR_RETURN(std::uint32_t mf, get_u32(f, "mf", o->mf));
    ZF_ASSIGN_OR_RETURN(o->depth, get_u32(f, "depth", o->depth));
    o->mode = static_cast<lzma_mode>(mode);
    o->mf = static_cast<lzma_match_finder>(mf);
    if (o->dict_size < LZMA_DICT_SIZE_MIN || o->dict_size > kMaxDictSize || o->lc > 4 ||
        o->lp > 4 || o->lc + o->lp > LZMA_LCLP_MAX || o->pb > LZMA_PB_MAX)
      return invalid_metadata("filters[" + std::to_string(i) +
                              "]: invalid LZMA options (dict_size, lc, lp, pb)");
    out.options = o.get();
    chain.lzma.push_back(std::move(o));
  } else if (vid == LZMA_FILTER_DELTA) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(f, {"id", "dist"}));
    auto o = std::make_unique<lzma_options_delta>();
    o->type = LZMA_DELTA_TYPE_BYTE;
    ZF_ASSIGN_OR_RETURN(o->dist, get_u32(f, "dist", 1));
    if (o->dist < LZMA_DELTA_DIST_MIN || o->dist > LZMA_DELTA_DIST_MAX)
      return invalid_metadata("filters[" + std::to_string(i) + "]: 'dist' must be 1..256");
    out.options = o.get();
    chain.delta.push_back(std::move(o));
  } else if (vid == LZMA_FILTER_X86 || vid == LZMA_FILTER_POWERPC || vid == LZMA_FILTER_IA64 ||
             vid == LZMA_FILTER_ARM || vid == LZMA_FILTER_ARMTHUMB || vid == LZMA_FILTER_SPARC) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(f, {"id", "start_offset"}));
    auto o = std::make_unique<lzma_options_bcj>();
    ZF_ASSIGN_OR_RETURN(o->start_offset, get_u32(f, "start_offset", 0));
    out.options = o.get();
    chain.bcj.push_back(std::move(o));
  } else {
    return invalid_metadata("filters[" + std::to_string(i) + "]: unknown filter id " +
                            std::to_string(id));
  }
  chain.filters.push_back(out);
  return {};
}

// One liblzma stream per thread, reused so its allocations (the dictionary) are too.
struct ThreadStream {
  lzma_stream s = LZMA_STREAM_INIT;
  ~ThreadStream() { lzma_end(&s); }
};

lzma_stream& thread_stream() {
  thread_local ThreadStream t;
  return t.s;
}

class LzmaCodec final : public BytesToBytesCodec {
 public:
  LzmaCodec(int format, std::int64_t preset, std::shared_ptr<const FilterChain> filters)
      : format_(format), preset_(preset), filters_(std::move(filters)) {}

  [[nodiscard]] std::string name() const override { return "lzma"; }
  [[nodiscard]] std::string describe() const override {
    std::string s = "lzma(format=" + std::string(format_name(format_));
    if (preset_ >= 0) s += ", preset=" + std::to_string(preset_);
    if (filters_) s += ", " + std::to_string(filters_->filters.size() - 1) + " filters";
    return s + ")";
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) return decode_known_size(*this, in, *decoded_size, scratch);
    StreamOutput out("lzma", scratch, std::max<std::uint64_t>(4096, std::uint64_t{in.size()} * 4),
                     kMaxOutput);
    ZF_ASSIGN_OR_RETURN(std::size_t produced, decompress(in, out));
    return out.finish(produced);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    StreamOutput sink("lzma", out);
    ZF_ASSIGN_OR_RETURN(std::size_t produced, decompress(in, sink));
    return sink.finish(produced).status();
  }

 private:
  lzma_ret start(lzma_stream& s) const {
    switch (format_) {
      case kAuto:
        return lzma_auto_decoder(&s, kMemLimit, 0);
      case kXz:
        return lzma_stream_decoder(&s, kMemLimit, 0);
      case kAlone:
        return lzma_alone_decoder(&s, kMemLimit);
      default:
        return lzma_raw_decoder(&s, filters_->filters.data());
    }
  }

  enum class End : std::uint8_t { kComplete, kInvalid };

  // Decodes one stream from in[pos]; kInvalid (with `why`) when the bytes are not a valid stream.
  Result<End> decode_stream(ConstByteSpan in, std::size_t& pos, StreamOutput& out,
                            std::size_t& produced, lzma_ret& why) const {
    lzma_stream& s = thread_stream();
    if (const lzma_ret r = start(s); r != LZMA_OK) {
      if (r == LZMA_MEM_ERROR) return out_of_range("lzma: cannot start a decoder: out of memory");
      return internal_error("lzma: cannot start a decoder: " + lzma_error(r));
    }
    std::byte spare{};  // probes a full fixed output for more data
    for (;;) {
      const std::size_t room = out.capacity() - produced;
      s.next_in = reinterpret_cast<const std::uint8_t*>(in.data() + pos);
      s.avail_in = in.size() - pos;
      s.next_out = reinterpret_cast<std::uint8_t*>(room ? out.at(produced) : &spare);
      s.avail_out = room ? room : 1;
      const std::size_t in_before = s.avail_in, out_before = s.avail_out;
      const lzma_ret r = lzma_code(&s, LZMA_RUN);
      pos += in_before - s.avail_in;
      const std::size_t wrote = out_before - s.avail_out;
      if (room == 0 && wrote > 0) {
        ZF_RETURN_IF_ERROR(out.grow());  // an error for a fixed output
        *out.at(produced) = spare;
      }
      produced += wrote;
      if (r == LZMA_STREAM_END) return End::kComplete;
      if (r == LZMA_MEM_ERROR || r == LZMA_MEMLIMIT_ERROR)
        return out_of_range("lzma: " + lzma_error(r));
      if (r != LZMA_OK) {
        why = r;
        return End::kInvalid;
      }
      if (pos == in.size() && s.avail_out > 0)
        return corrupt_data("lzma: stream ends before its end marker (truncated)");
      if (out.capacity() == produced && !out.fixed()) ZF_RETURN_IF_ERROR(out.grow());
    }
  }

  Result<std::size_t> decompress(ConstByteSpan in, StreamOutput& out) const {
    ZF_RETURN_IF_ERROR(out.start());
    std::size_t pos = 0, produced = 0;
    bool first = true;
    while (pos < in.size()) {
      const std::size_t stream_start = produced;
      lzma_ret why = LZMA_OK;
      ZF_ASSIGN_OR_RETURN(End end, decode_stream(in, pos, out, produced, why));
      if (end == End::kInvalid) {
        if (first) return corrupt_data("lzma: " + lzma_error(why));
        produced = stream_start;  // trailing bytes that are not a stream: ignored, like Python
        break;
      }
      first = false;
    }
    return produced;
  }

  int format_;
  std::int64_t preset_;                         // -1 when not given
  std::shared_ptr<const FilterChain> filters_;  // raw format only
};

Result<std::shared_ptr<const Codec>> make_lzma(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(
      config::reject_unknown_fields(cfg, {"id", "format", "check", "preset", "filters"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t format, config::get_int(cfg, "format", kXz));
  if (format < kAuto || format > kRaw)
    return invalid_metadata(
        "field 'format': expected 0 (auto), 1 (xz), 2 (alone) or 3 (raw), got " +
        std::to_string(format));
  ZF_RETURN_IF_ERROR(config::get_int(cfg, "check", -1).status());
  ZF_ASSIGN_OR_RETURN(std::int64_t preset, config::get_int(cfg, "preset", -1));
  const auto it = cfg.is_object() ? cfg.find("filters") : cfg.end();
  const bool has_filters = it != cfg.end() && !it->is_null();
  std::shared_ptr<FilterChain> chain;
  if (format == kRaw) {
    if (!has_filters || !it->is_array() || it->empty() || it->size() > LZMA_FILTERS_MAX)
      return invalid_metadata("field 'filters': the raw format needs a list of 1 to " +
                              std::to_string(LZMA_FILTERS_MAX) + " filter specifications");
    chain = std::make_shared<FilterChain>();
    for (std::size_t i = 0; i < it->size(); ++i)
      ZF_RETURN_IF_ERROR(parse_filter((*it)[i], i, *chain));
    chain->filters.push_back({LZMA_VLI_UNKNOWN, nullptr});
  } else if (has_filters) {
    return invalid_metadata("field 'filters': only the raw format (3) takes filters");
  }
  return std::shared_ptr<const Codec>(
      std::make_shared<LzmaCodec>(static_cast<int>(format), preset, std::move(chain)));
}

}  // namespace

void register_lzma_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("lzma", make_lzma);
  v3.add("numcodecs.lzma", make_lzma);
}

}  // namespace zarrflow
