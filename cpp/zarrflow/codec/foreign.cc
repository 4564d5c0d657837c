#include "zarrflow/codec/foreign.h"

#include <mutex>

namespace zarrflow {
namespace {

std::mutex& factory_mutex() {
  static std::mutex mu;
  return mu;
}

ForeignCodecFactory& factory() {
  static ForeignCodecFactory f;
  return f;
}

// The output of a decode that must be exactly `out`.
ForeignDecoder::Output exactly(std::string_view codec, ByteSpan out) {
  return [codec, out](std::size_t n) -> Result<ByteSpan> {
    ZF_RETURN_IF_ERROR(check_decoded_size(codec, n, out.size()));
    return out;
  };
}

// A bytes→bytes codec decoded by a ForeignDecoder.
class ForeignBytesCodec final : public BytesToBytesCodec {
 public:
  ForeignBytesCodec(std::string id, std::shared_ptr<const ForeignDecoder> decoder)
      : id_(std::move(id)), decoder_(std::move(decoder)) {}

  [[nodiscard]] std::string name() const override { return id_; }
  [[nodiscard]] std::string describe() const override { return decoder_->describe(); }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    auto output = [&](std::size_t n) -> Result<ByteSpan> {
      if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size(id_, n, *decoded_size));
      ZF_RETURN_IF_ERROR(resize_scratch(id_, scratch, n));
      return scratch.span();
    };
    ZF_RETURN_IF_ERROR(decoder_->decode(in, output));
    return ConstByteSpan(scratch.span());
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    return decoder_->decode(in, exactly(id_, out));
  }

 private:
  std::string id_;
  std::shared_ptr<const ForeignDecoder> decoder_;
};

// An array→bytes codec decoded by a ForeignDecoder: straight into the destination when the whole
// chunk is read into dense memory, else into a scratch chunk that the selection is copied from.
class ForeignArrayCodec final : public ArrayToBytesCodec {
 public:
  ForeignArrayCodec(std::string id, std::shared_ptr<const ForeignDecoder> decoder)
      : id_(std::move(id)), decoder_(std::move(decoder)) {}

  [[nodiscard]] std::string name() const override { return id_; }
  [[nodiscard]] std::string describe() const override { return decoder_->describe(); }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(const ChunkSpec&) const override {
    return std::nullopt;
  }

  Status decode_into(ConstByteSpan encoded, const ChunkSpec& spec, const Selection& sel,
                     const StridedView& dest, const DecodeContext& ctx) const override {
    const auto nbytes = static_cast<std::size_t>(spec.nbytes());
    const std::int64_t elem = spec.dtype.size;
    if (sel.is_full(spec.shape) && dest.is_c_contiguous(elem))
      return decoder_->decode(encoded, exactly(id_, ByteSpan(dest.data, nbytes)));
    Buffer chunk = ctx.acquire(nbytes);
    ZF_RETURN_IF_ERROR(decoder_->decode(encoded, exactly(id_, chunk.span())));
    Shape strides = c_strides(spec.shape, elem);
    const std::byte* src = chunk.data();
    for (std::size_t i = 0; i < strides.size(); ++i) {
      src += sel.start[i] * strides[i];
      strides[i] *= sel.step[i];
    }
    copy_strided(src, strides, dest.data, dest.strides, sel.count, elem, 1);
    return {};
  }

 private:
  std::string id_;
  std::shared_ptr<const ForeignDecoder> decoder_;
};

}  // namespace

void set_foreign_codec_factory(ForeignCodecFactory f) {
  std::lock_guard lock(factory_mutex());
  factory() = std::move(f);
}

Result<std::shared_ptr<const Codec>> make_foreign_codec(const ForeignCodecRequest& request) {
  ForeignCodecFactory f;
  {
    std::lock_guard lock(factory_mutex());
    f = factory();
  }
  if (!f)
    return unimplemented("codec '" + request.name +
                         "' is not supported natively (from Python, zarrflow decodes it with "
                         "numcodecs when that package provides it)");
  ZF_ASSIGN_OR_RETURN(std::shared_ptr<const ForeignDecoder> decoder, f(request));
  if (request.kind == CodecKind::kArrayToBytes)
    return std::shared_ptr<const Codec>(std::make_shared<ForeignArrayCodec>(request.id, decoder));
  return std::shared_ptr<const Codec>(std::make_shared<ForeignBytesCodec>(request.id, decoder));
}

}  // namespace zarrflow
