// Where a streaming decompressor (bz2, lzma) writes its output.
//
// With a known decoded size the output is exactly the caller's span: a stream that needs more room
// is corrupt data. With an unknown size it is a scratch buffer that starts at a guess and doubles,
// never beyond `limit` bytes, so memory grows only as output is actually produced.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

class StreamOutput {
 public:
  // Exactly `out`.
  StreamOutput(std::string codec, ByteSpan out)
      : codec_(std::move(codec)), fixed_(true), span_(out) {}
  // A growing `scratch`, first `initial` bytes, at most `limit`.
  StreamOutput(std::string codec, Buffer& scratch, std::uint64_t initial, std::uint64_t limit)
      : codec_(std::move(codec)), scratch_(&scratch), limit_(limit), initial_(initial) {}

  // Allocates the first buffer (growing outputs).
  Status start() {
    if (fixed_) return {};
    const auto n = static_cast<std::size_t>(std::clamp<std::uint64_t>(initial_, 1, limit_));
    ZF_RETURN_IF_ERROR(resize_scratch(codec_, *scratch_, n));
    span_ = scratch_->span();
    return {};
  }

  [[nodiscard]] std::byte* at(std::size_t offset) const { return span_.data() + offset; }
  [[nodiscard]] std::size_t capacity() const { return span_.size(); }
  [[nodiscard]] bool fixed() const { return fixed_; }

  // More room (what was written is kept), or the error that says why not.
  Status grow() {
    if (fixed_)
      return corrupt_data(codec_ + ": data decompresses to more than the expected " +
                          std::to_string(span_.size()) + " bytes");
    if (span_.size() >= limit_)
      return corrupt_data(codec_ + ": data decompresses to more than " + std::to_string(limit_) +
                          " bytes");
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(limit_, std::uint64_t{span_.size()} * 2));
    ZF_RETURN_IF_ERROR(resize_scratch(codec_, *scratch_, n));
    span_ = scratch_->span();
    return {};
  }

  // The decoded bytes: checks a fixed output was filled; trims a growing one.
  Result<ConstByteSpan> finish(std::size_t produced) {
    if (fixed_) {
      ZF_RETURN_IF_ERROR(check_decoded_size(codec_, produced, span_.size()));
      return ConstByteSpan(span_);
    }
    scratch_->resize(produced);
    return ConstByteSpan(scratch_->span());
  }

 private:
  std::string codec_;
  bool fixed_ = false;
  ByteSpan span_;
  Buffer* scratch_ = nullptr;
  std::uint64_t limit_ = 0, initial_ = 0;
};

}  // namespace zarrflow
