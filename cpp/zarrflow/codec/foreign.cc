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

// A bytes→bytes codec decoded by a ForeignDecoder.
class ForeignBytesCodec final : public BytesToBytesCodec {
 public:
  ForeignBytesCodec(std::string id, std::shared_ptr<const ForeignDecoder> decoder)
      : id_(std::move(id)), decoder_(std::move(decoder)) {}

  [[nodiscard]] std::string name() const override { return id_; }
  [[nodiscard]] std::string describe() const override { return decoder_->describe(); }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    ZF_RETURN_IF_ERROR(decoder_->decode(in, scratch));
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size(id_, scratch.size(), *decoded_size));
    return ConstByteSpan(scratch.span());
  }

 private:
  std::string id_;
  std::shared_ptr<const ForeignDecoder> decoder_;
};

// An array→bytes codec decoded by a ForeignDecoder: the decoded chunk lands in a scratch buffer,
// and the selection is copied from it.
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
    Buffer chunk = ctx.acquire(nbytes);
    ZF_RETURN_IF_ERROR(decoder_->decode(encoded, chunk));
    ZF_RETURN_IF_ERROR(check_decoded_size(id_, chunk.size(), nbytes));
    const std::int64_t elem = spec.dtype.size;
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
