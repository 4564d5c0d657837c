// Which staged bytes of a piece can go up to the GPU while the rest of the piece is still being
// read (plain C++: builds and is tested everywhere; read_op_cuda.cc issues the copies).
//
// Without it a piece's compressed bytes travel in one copy after the last of them arrived, so
// the copy adds its whole time to every read that is one piece (nvCOMP's pieces are as large as
// memory allows: a 2 GB array is one piece). Reads finish in any order on the I/O threads; the
// bytes of the items read so far, in slot order, go up in copies of at least `min_step` bytes
// as soon as they are complete. Only the slots of compressed chunks the GPU decodes travel
// (batch_layout.h: uploads_while_read; host-decoded chunks' bytes stay on the host, uncompressed
// whole chunks go straight into their destination); the gaps between slots of consecutive
// uploaded items (alignment padding) are copied with them, so one copy covers many items.
// Thread-safety: complete() may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace zarrflow::gpu {

// The smallest copy made while a piece is read: large enough that copies run at PCIe speed,
// small enough that the last one, made after the piece's last byte arrived, is short.
inline constexpr std::uint64_t kUploadStep = std::uint64_t{8} << 20;

struct UploadRange {
  std::uint64_t begin = 0, end = 0;
  [[nodiscard]] std::uint64_t size() const { return end - begin; }
};

class StagedUploads {
 public:
  // One slot per item of the piece, in slot order (offsets increase with the index); an item
  // that uploads nothing (a fill, a host-decoded chunk, a cache hit) has `upload` false.
  struct Slot {
    std::uint64_t begin = 0, end = 0;
    bool upload = false;
  };
  StagedUploads(std::vector<Slot> slots, std::uint64_t min_step);

  // Marks item `k` read. Returns the ranges that became ready to copy: the uploaded slots of
  // the completed prefix not copied yet, once they reach min_step bytes or the prefix is the
  // whole piece. Each range is returned once.
  std::vector<UploadRange> complete(std::size_t k);

  // Bytes returned so far, and the bytes the whole piece uploads.
  [[nodiscard]] std::uint64_t returned() const;
  [[nodiscard]] std::uint64_t total() const { return total_; }

 private:
  std::vector<UploadRange> take_ready();

  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<bool> done_;
  std::uint64_t min_step_;
  std::uint64_t total_ = 0;
  std::size_t prefix_ = 0;     // items [0, prefix_) are read
  std::size_t next_slot_ = 0;  // first item whose slot was not returned yet
  std::uint64_t pending_ = 0;  // uploaded bytes of items [next_slot_, prefix_)
  std::uint64_t returned_ = 0;
};

}  // namespace zarrflow::gpu
