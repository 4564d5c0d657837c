// Where the bytes of one piece of a GPU read go (plain C++: builds and is tested everywhere).
// Three layouts, in the order the read makes them:
//   lay_out_staging       before fetching: each item's slot in pinned staging, or in the blocks
//                         the host converts while reading, or in device memory (cuFile)
//   lay_out_host_blocks   after the host checks: the blocks the host threads decode (and convert)
//   place_outputs         before enqueueing: where each GPU item decodes (in place in the
//                         destination, or scratch then scatter) and what is copied up as it is
// Offsets are relative to the piece's buffers, which the read allocates from the totals.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "zarrflow/pipeline/gpu/read_item.h"

namespace zarrflow::gpu {

// kAuto/kPinned: buffered pread into pinned staging. kDirect: O_DIRECT into pinned staging (no
// page cache: measured slower than buffered reads on a virtio test host, so opt-in).
// kCuFile: GPUDirect Storage for uncompressed chunks.
enum class IoPath : std::uint8_t { kAuto, kPinned, kDirect, kCuFile };

struct StagingOptions {
  IoPath io = IoPath::kAuto;
  bool cufile = false;   // cuFile is loaded (io == kCuFile)
  bool caching = false;  // a chunk cache (GPU or pinned) keeps the stored bytes it reads
};

// The `*_unshared` sizes are what the piece would need if none of its chunks were shared by two
// requests. Buffers are taken at those sizes, so that the pools' working set does not depend on
// which samples a shuffled batch happens to bring together (x at t+1 is y at t only when both
// are in the batch): otherwise a later epoch's batch of no neighbours allocates anew.
struct StagingLayout {
  std::uint64_t staged = 0;     // pinned staging (4 KiB-aligned slots, room for O_DIRECT)
  std::uint64_t direct = 0;     // device memory read by cuFile
  std::uint64_t converted = 0;  // pinned blocks converted while read
  std::uint64_t staged_unshared = 0;
  std::uint64_t converted_unshared = 0;
  // Per item of the piece, where its stored bytes land in pinned staging, [begin, end); empty
  // (0, 0) for items without a slot (fills, cache hits, duplicates, converted, cuFile).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> slots;
};

// Uncompressed chunks of local stores that are read whole into a dense destination with an
// element transform are converted as they are read: in pieces through a small per-thread buffer
// that stays in the core's cache, so the chunk's stored bytes never land in pinned memory and
// the host moves 4 + 2 bytes per float32 element instead of 4 + 4 (+ 4 for the copy up). Not when
// either cache wants the stored bytes, a later item scatters from this one, or another I/O path
// was asked for.
bool streams_to_host_tf(const Item& it, const StagingOptions& options);

// Sets Item::host_tf, ::direct and the offsets of the piece's items that read stored bytes.
// An uncompressed chunk cuFile reads must be exactly its decoded size.
Result<StagingLayout> lay_out_staging(std::vector<Item>& items, std::span<const std::size_t> piece,
                                      const StagingOptions& options);

struct HostBlockLayout {
  std::uint64_t decoded = 0;           // pinned blocks the host threads decode into
  std::uint64_t converted = 0;         // pinned blocks they convert those into (Item::host_tf)
  std::uint64_t decoded_unshared = 0;  // as in StagingLayout
  std::uint64_t converted_unshared = 0;
};

// The host-decoded (kCpu) items' blocks, shaped like their destination. Blocks with an element
// transform and a dense destination are then normalised and cast by the same thread (the block
// still in its caches) and copied up at the output size: half the PCIe bytes for 16-bit batches,
// and no kernel taking SMs from a model. x at t+1 is y at t: a duplicate that wants the same
// block, converted the same way, is decoded once and copied up twice (Item::reuses_block); other
// duplicates (another part of the chunk, another transform) decode the shared stored bytes again
// into a block of their own.
HostBlockLayout lay_out_host_blocks(std::vector<Item>& items, std::span<const std::size_t> piece);

// Whether an item's stored bytes go up to device staging while its piece is still read
// (staged_uploads.h): compressed chunks the GPU decodes. Uncompressed ones wait: the host checks
// decide whether they are copied straight into their destination instead (place_outputs).
bool uploads_while_read(const Item& it);

// Where an uncompressed chunk goes as soon as it is read (one copy of its stored bytes into its
// destination), or null: whole chunks without a checksum trailer into a dense destination, which
// place_outputs copies up as they are (Placement::copy_up) once the host checks confirm their
// size. `gpu_cache`: as for place_outputs.
std::byte* copied_into_place_while_read(const Item& it, bool gpu_cache);

// Where one item of the piece goes on the GPU.
struct Placement {
  std::uint64_t out_offset = 0;       // decoded into the piece's scratch (d_out) at this offset
  bool in_place = false;              // decoded straight into its destination
  bool copy_up = false;               // the host has it ready: one copy into its destination
  bool from_staging = false;          // decoded (or scattered) from device staging
  std::uint64_t shuffled_offset = 0;  // Blosc's shuffled blocks, in the piece's Blosc scratch
  Selection enc_sel;                  // the selection and destination in encoded coordinates
  StridedView enc_dest;
};

struct OutputLayout {
  std::vector<Placement> items;  // one per item of the piece
  std::uint64_t out = 0;         // decoded-chunk scratch
  std::uint64_t shuffled = 0;    // Blosc scratch
  std::uint64_t staged = 0;      // device staging: the end of the last slot decoded from it
  bool any_staged = false;       // some compressed bytes travel to device staging
  bool any_cpu_scatter = false;  // some host-decoded blocks are scattered (from d_cpu)
};

// Blocks already decoded on the host (uncompressed chunks read whole, CPU-decoded blocks) whose
// destination is dense are copied up straight into it: one copy-engine transfer each, no device
// staging or scratch and no scatter kernel taking SMs from a model. Whole chunks decoded into a
// dense native-order destination decode in place; the rest into scratch, then scattered.
// `gpu_cache`: the GPU chunk cache keeps the stored bytes, which must then reach the device.
OutputLayout place_outputs(const std::vector<Item>& items, std::span<const std::size_t> piece,
                           bool gpu_cache);

}  // namespace zarrflow::gpu
