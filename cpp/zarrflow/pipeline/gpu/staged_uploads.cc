#include "zarrflow/pipeline/gpu/staged_uploads.h"

namespace zarrflow::gpu {

StagedUploads::StagedUploads(std::vector<Slot> slots, std::uint64_t min_step)
    : slots_(std::move(slots)), done_(slots_.size(), false), min_step_(min_step) {
  for (const Slot& s : slots_)
    if (s.upload) total_ += s.end - s.begin;
}

std::vector<UploadRange> StagedUploads::complete(std::size_t k) {
  std::lock_guard lock(mu_);
  if (k >= done_.size() || done_[k]) return {};
  done_[k] = true;
  while (prefix_ < done_.size() && done_[prefix_]) {
    const Slot& s = slots_[prefix_++];
    if (s.upload) pending_ += s.end - s.begin;
  }
  if (pending_ == 0 || (pending_ < min_step_ && prefix_ < done_.size())) return {};
  return take_ready();
}

// The uploaded slots of items [next_slot_, prefix_), consecutive ones merged; a slot that stays
// on the host ends a range (items without a slot do not).
std::vector<UploadRange> StagedUploads::take_ready() {
  std::vector<UploadRange> ranges;
  bool open = false;
  for (; next_slot_ < prefix_; ++next_slot_) {
    const Slot& s = slots_[next_slot_];
    if (!s.upload) {
      if (s.end > s.begin) open = false;
      continue;
    }
    if (open && ranges.back().end <= s.begin) {
      ranges.back().end = s.end;
    } else {
      ranges.push_back({s.begin, s.end});
      open = true;
    }
  }
  returned_ += pending_;
  pending_ = 0;
  return ranges;
}

std::uint64_t StagedUploads::returned() const {
  std::lock_guard lock(mu_);
  return returned_;
}

}  // namespace zarrflow::gpu
