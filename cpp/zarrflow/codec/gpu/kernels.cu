// Batched kernels of the GPU read path; see kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "zarrflow/codec/gpu/blosclz_block.h"
#include "zarrflow/codec/gpu/checksum.h"
#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/lz4_block.h"
#include "zarrflow/codec/gpu/unshuffle.h"

namespace zarrflow::gpu {
namespace {

constexpr int kWarp = 32;

// One warp per stream; all lanes run the decoder's control flow and share the copies.
__global__ void decode_streams_kernel(const StreamJob* jobs, std::uint32_t n, int* status) {
  const int lane = threadIdx.x % kWarp;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / kWarp);
  for (std::uint64_t j = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; j < n;
       j += warps) {
    const StreamJob job = jobs[j];
    int r;
    switch (job.kind) {
      case kStreamCopy:
        if (job.src_size != job.dst_size) {
          r = kErrSizeMismatch;
          break;
        }
        for (std::uint32_t i = lane; i < job.src_size; i += kWarp) job.dst[i] = job.src[i];
        r = int(job.dst_size);
        break;
      case kStreamLz4:
        r = lz4_decode_block(job.src, job.src_size, job.dst, job.dst_size, lane, kWarp);
        break;
      case kStreamBlosclz:
        r = blosclz_decode_block(job.src, job.src_size, job.dst, job.dst_size, lane, kWarp);
        break;
      default:
        r = kErrUnknownKind;
    }
    if (lane == 0) {
      if (r >= 0 && std::uint32_t(r) != job.dst_size) r = kErrSizeMismatch;
      status[job.status] = r < 0 ? r : kKernelOk;
    }
    __syncwarp();
  }
}

// One thread block per Blosc block; every thread gathers whole output bytes.
__global__ void unshuffle_kernel(const UnshuffleJob* jobs, std::uint32_t n) {
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const UnshuffleJob job = jobs[j];
    if (job.bitshuffle) {
      bit_unshuffle(job.src, job.dst, job.typesize, job.size, threadIdx.x, blockDim.x);
    } else {
      byte_unshuffle(job.src, job.dst, job.typesize, job.size, threadIdx.x, blockDim.x);
    }
  }
}

__device__ inline void swap_bytes(std::uint8_t* p, std::uint32_t elem, std::uint32_t unit) {
  for (std::uint32_t o = 0; o + unit <= elem; o += unit)
    for (std::uint32_t a = 0, b = unit - 1; a < b; ++a, --b) {
      const std::uint8_t t = p[o + a];
      p[o + a] = p[o + b];
      p[o + b] = t;
    }
}

// Copies `n` bytes with the block's threads, 16 or 4 bytes at a time where both ends allow it.
__device__ void block_copy(const std::uint8_t* src, std::uint8_t* dst, std::int64_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst);
  std::int64_t done = 0;
  if (a % 16 == 0) {
    const std::int64_t v = n / 16;
    for (std::int64_t i = threadIdx.x; i < v; i += blockDim.x)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    done = v * 16;
  } else if (a % 4 == 0) {
    const std::int64_t v = n / 4;
    for (std::int64_t i = threadIdx.x; i < v; i += blockDim.x)
      reinterpret_cast<std::uint32_t*>(dst)[i] = reinterpret_cast<const std::uint32_t*>(src)[i];
    done = v * 4;
  }
  for (std::int64_t i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// --- The element transform of training batches (OutType other than kStored) ---------------

// A float32 at any byte address, little-endian as stored, or big-endian when swap_unit == 4.
__device__ inline float load_f32(const std::uint8_t* p, std::uint32_t swap_unit) {
  std::uint32_t u;
  if ((reinterpret_cast<std::uintptr_t>(p) & 3) == 0) {
    u = *reinterpret_cast<const std::uint32_t*>(p);
  } else {
    u = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
        std::uint32_t(p[3]) << 24;
  }
  if (swap_unit == 4) u = __byte_perm(u, 0, 0x0123);
  return __uint_as_float(u);
}

// The output bits of y: float32, or bfloat16 / float16 rounded to nearest even.
__device__ inline std::uint32_t out_bits(OutType t, float y) {
  switch (t) {
    case OutType::kBFloat16:
      return __bfloat16_as_ushort(__float2bfloat16_rn(y));
    case OutType::kFloat16:
      return __half_as_ushort(__float2half_rn(y));
    default:
      return __float_as_uint(y);
  }
}

__device__ inline void store_out(std::uint8_t* p, OutType t, float y) {
  const std::uint32_t v = out_bits(t, y);
  const std::uint32_t size = out_type_size(t);
  if (size == 4 && (reinterpret_cast<std::uintptr_t>(p) & 3) == 0) {
    *reinterpret_cast<std::uint32_t*>(p) = v;
  } else if (size == 2 && (reinterpret_cast<std::uintptr_t>(p) & 1) == 0) {
    *reinterpret_cast<std::uint16_t*>(p) = std::uint16_t(v);
  } else {
    for (std::uint32_t b = 0; b < size; ++b) p[b] = std::uint8_t(v >> (8 * b));
  }
}

// Two 16-bit outputs in one word, with the same rounding as out_bits.
__device__ inline std::uint32_t pack2(OutType t, float a, float b) {
  if (t == OutType::kBFloat16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// `n` contiguous float32 elements into `n` contiguous outputs, by the block's threads: four at a
// time (one 16-byte load, one 16- or 8-byte store) where both ends are aligned for it. Returns
// this thread's count of NaN inputs (of masked ones too). Float32 sources without packing:
// is_plain (kMasked false), or with masks (a v2 fill_value, a _FillValue attribute).
template <bool kMasked>
__device__ unsigned long long transform_row(const std::uint8_t* src, std::uint8_t* dst,
                                            std::int64_t n, const ScatterJob& job) {
  const float m = job.tf.mean, k = job.tf.inv_std;
  const OutType t = job.tf.out;
  const std::uint32_t osize = out_type_size(t);
  unsigned long long nans = 0;
  std::int64_t done = 0;
  if (reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
      reinterpret_cast<std::uintptr_t>(dst) % (4 * osize) == 0) {
    const std::int64_t v = n / 4;
    const auto* s4 = reinterpret_cast<const float4*>(src);
    for (std::int64_t i = threadIdx.x; i < v; i += blockDim.x) {
      float4 x = s4[i];
      if constexpr (kMasked) {
        x.x = decode_element_as<false, true>(x.x, job.tf);
        x.y = decode_element_as<false, true>(x.y, job.tf);
        x.z = decode_element_as<false, true>(x.z, job.tf);
        x.w = decode_element_as<false, true>(x.w, job.tf);
      }
      nans +=
          (isnan(x.x) ? 1 : 0) + (isnan(x.y) ? 1 : 0) + (isnan(x.z) ? 1 : 0) + (isnan(x.w) ? 1 : 0);
      const float a = (x.x - m) * k, b = (x.y - m) * k, c = (x.z - m) * k, d = (x.w - m) * k;
      if (t == OutType::kFloat32) {
        reinterpret_cast<float4*>(dst)[i] = make_float4(a, b, c, d);
      } else {
        reinterpret_cast<uint2*>(dst)[i] = make_uint2(pack2(t, a, b), pack2(t, c, d));
      }
    }
    done = v * 4;
  }
  for (std::int64_t i = done + threadIdx.x; i < n; i += blockDim.x) {
    float x = load_f32(src + 4 * i, 1);
    if constexpr (kMasked) x = decode_element_as<false, true>(x, job.tf);
    nans += isnan(x) ? 1 : 0;
    store_out(dst + osize * i, t, (x - m) * k);
  }
  return nans;
}

// A raw element of type T at any byte address: little-endian as stored, or big-endian (`swap`).
template <typename T>
__device__ inline T load_raw(const std::uint8_t* p, bool swap) {
  constexpr unsigned n = sizeof(T);
  T v;
  if (!swap && reinterpret_cast<std::uintptr_t>(p) % n == 0) {
    memcpy(&v, __builtin_assume_aligned(p, n), n);
    return v;
  }
  std::uint8_t b[n];
  for (unsigned i = 0; i < n; ++i) b[i] = p[swap ? n - 1 - i : i];
  memcpy(&v, b, n);
  return v;
}

// decode_element of the raw element at `p`, of the transform's source type.
__device__ inline float load_decode(const std::uint8_t* p, bool swap, const ElementTransform& tf) {
  switch (tf.in) {
    case InType::kFloat32:
      return decode_element(load_raw<float>(p, swap), tf);
    case InType::kFloat64:
      return decode_element(load_raw<double>(p, swap), tf);
    case InType::kFloat16:
      return decode_element(load_raw<Float16Bits>(p, swap), tf);
    case InType::kBFloat16:
      return decode_element(load_raw<BFloat16Bits>(p, swap), tf);
    case InType::kInt8:
      return decode_element(load_raw<std::int8_t>(p, swap), tf);
    case InType::kInt16:
      return decode_element(load_raw<std::int16_t>(p, swap), tf);
    case InType::kInt32:
      return decode_element(load_raw<std::int32_t>(p, swap), tf);
    case InType::kInt64:
      return decode_element(load_raw<std::int64_t>(p, swap), tf);
    case InType::kUInt8:
      return decode_element(load_raw<std::uint8_t>(p, swap), tf);
    case InType::kUInt16:
      return decode_element(load_raw<std::uint16_t>(p, swap), tf);
    case InType::kUInt32:
      return decode_element(load_raw<std::uint32_t>(p, swap), tf);
    default:
      return decode_element(load_raw<std::uint64_t>(p, swap), tf);
  }
}

// `n` contiguous elements of type T into `n` contiguous outputs through the full transform
// (masks, packing), one element per thread at a time. Returns this thread's NaN count.
template <typename T>
__device__ unsigned long long decode_row_of(const std::uint8_t* src, std::uint8_t* dst,
                                            std::int64_t n, const ElementTransform& tf) {
  const std::uint32_t osize = out_type_size(tf.out);
  unsigned long long nans = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float f = decode_element(load_raw<T>(src + sizeof(T) * i, false), tf);
    nans += isnan(f) ? 1 : 0;
    store_out(dst + osize * i, tf.out, normalize_element(f, tf));
  }
  return nans;
}

__device__ unsigned long long decode_row(const std::uint8_t* src, std::uint8_t* dst, std::int64_t n,
                                         const ElementTransform& tf) {
  switch (tf.in) {
    case InType::kFloat32:
      return decode_row_of<float>(src, dst, n, tf);
    case InType::kFloat64:
      return decode_row_of<double>(src, dst, n, tf);
    case InType::kFloat16:
      return decode_row_of<Float16Bits>(src, dst, n, tf);
    case InType::kBFloat16:
      return decode_row_of<BFloat16Bits>(src, dst, n, tf);
    case InType::kInt8:
      return decode_row_of<std::int8_t>(src, dst, n, tf);
    case InType::kInt16:
      return decode_row_of<std::int16_t>(src, dst, n, tf);
    case InType::kInt32:
      return decode_row_of<std::int32_t>(src, dst, n, tf);
    case InType::kInt64:
      return decode_row_of<std::int64_t>(src, dst, n, tf);
    case InType::kUInt8:
      return decode_row_of<std::uint8_t>(src, dst, n, tf);
    case InType::kUInt16:
      return decode_row_of<std::uint16_t>(src, dst, n, tf);
    case InType::kUInt32:
      return decode_row_of<std::uint32_t>(src, dst, n, tf);
    default:
      return decode_row_of<std::uint64_t>(src, dst, n, tf);
  }
}

// One thread block per tile of kScatterTile elements of one job.
__global__ void scatter_kernel(const ScatterJob* jobs, std::uint32_t n,
                               const std::int64_t* tile_starts, std::int64_t total_tiles,
                               unsigned long long* nans) {
  unsigned long long local_nans = 0;
  for (std::int64_t tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
    // The job owning this tile: the last j with tile_starts[j] <= tile.
    std::uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
      const std::uint32_t mid = (lo + hi) / 2;
      if (tile_starts[mid] <= tile)
        lo = mid;
      else
        hi = mid;
    }
    const ScatterJob& job = jobs[lo];
    const std::int64_t first = (tile - tile_starts[lo]) * kScatterTile;
    const std::int64_t last = min(first + kScatterTile, job.count);
    const std::uint32_t elem = job.elem;
    const bool transform = job.tf.out != OutType::kStored;
    const bool plain = transform && is_plain(job.tf);
    // float32 with masks only: the four-at-a-time rows of plain ones
    const bool masked_f32 =
        transform && job.tf.in == InType::kFloat32 && !job.tf.packed && job.tf.masks != 0;
    const std::uint32_t oelem = transform ? out_type_size(job.tf.out) : elem;
    const int inner = job.ndim - 1;  // -1 for a single element (every dimension merged away)
    if (inner >= 0 && job.src != nullptr && job.swap_unit <= 1 && job.src_strides[inner] == elem &&
        job.dst_strides[inner] == oelem) {
      // Rows contiguous on both sides (whole chunks, windows of them): copy row by row, with
      // the index arithmetic once per row instead of once per element.
      const std::int64_t row_len = job.shape[inner];
      for (std::int64_t e = first; e < last;) {
        std::int64_t rem = e / row_len, so = 0, dof = 0;
        const std::int64_t col = e - rem * row_len;
        for (int d = inner - 1; d >= 0; --d) {
          const std::int64_t i = rem % job.shape[d];
          rem /= job.shape[d];
          so += i * job.src_strides[d];
          dof += i * job.dst_strides[d];
        }
        const std::int64_t n = min(last - e, row_len - col);
        if (plain) {
          local_nans +=
              transform_row<false>(job.src + so + col * elem, job.dst + dof + col * oelem, n, job);
        } else if (masked_f32) {
          local_nans +=
              transform_row<true>(job.src + so + col * elem, job.dst + dof + col * oelem, n, job);
        } else if (transform) {
          local_nans +=
              decode_row(job.src + so + col * elem, job.dst + dof + col * oelem, n, job.tf);
        } else {
          block_copy(job.src + so + col * elem, job.dst + dof + col * elem, n * elem);
        }
        e += n;
      }
      continue;
    }
    for (std::int64_t e = first + threadIdx.x; e < last; e += blockDim.x) {
      std::int64_t rem = e, so = 0, dof = 0;
      for (int d = job.ndim - 1; d >= 0; --d) {
        const std::int64_t i = rem % job.shape[d];
        rem /= job.shape[d];
        so += i * job.src_strides[d];
        dof += i * job.dst_strides[d];
      }
      std::uint8_t* dst = job.dst + dof;
      if (transform) {  // fill values included (stored in native order)
        const std::uint8_t* from = job.src != nullptr ? job.src + so : job.fill;
        const bool swap = job.src != nullptr && job.swap_unit > 1;
        const float x = plain ? load_f32(from, swap ? 4 : 1) : load_decode(from, swap, job.tf);
        local_nans += isnan(x) ? 1 : 0;
        store_out(dst, job.tf.out, normalize_element(x, job.tf));
        continue;
      }
      std::uint8_t v[32];
      if (job.src == nullptr) {
        for (std::uint32_t b = 0; b < elem; ++b) v[b] = job.fill[b];
      } else {
        const std::uint8_t* src = job.src + so;
        if (elem == 4 &&
            ((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 3) ==
                0 &&
            job.swap_unit <= 1) {
          *reinterpret_cast<std::uint32_t*>(dst) = *reinterpret_cast<const std::uint32_t*>(src);
          continue;
        }
        for (std::uint32_t b = 0; b < elem; ++b) v[b] = src[b];
        if (job.swap_unit > 1) swap_bytes(v, elem, job.swap_unit);
      }
      for (std::uint32_t b = 0; b < elem; ++b) dst[b] = v[b];
    }
  }
  if (nans == nullptr) return;
  // One atomic per warp (every thread of the block gets here).
  for (int o = 16; o > 0; o /= 2) local_nans += __shfl_down_sync(0xffffffffu, local_nans, o);
  if ((threadIdx.x & 31) == 0 && local_nans) atomicAdd(nans, local_nans);
}

__global__ void check_sizes_kernel(const std::size_t* actual, const std::size_t* expected,
                                   int* status, std::uint32_t n) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (status[i] == 0 && actual[i] != expected[i]) status[i] = kErrSizeMismatch;
}

constexpr unsigned kChecksumThreads = 256;

// One block per stream: thread t sums part t of the decoded bytes (checksum.h: part_bounds),
// thread 0 combines the parts in order and compares with the trailer.
__global__ void verify_checksums_kernel(const ChecksumJob* jobs, std::uint32_t n, int* status) {
  __shared__ std::uint32_t table[256];
  __shared__ std::uint32_t sums[kChecksumThreads], weighted[kChecksumThreads];
  const unsigned t = threadIdx.x;
  table[t] = crc32_table_entry(t);
  __syncthreads();
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const ChecksumJob job = jobs[j];
    const bool adler = job.kind == kChecksumAdler32;
    std::uint64_t begin, end;
    part_bounds(job.size, kChecksumThreads, t, &begin, &end);
    if (adler) {
      const AdlerPart p = adler32_part(job.data + begin, end - begin);
      sums[t] = p.sum;
      weighted[t] = p.weighted;
    } else {
      sums[t] = crc32_update(0, job.data + begin, end - begin, table);
    }
    __syncthreads();
    if (t == 0) {
      const std::uint32_t value = adler
                                      ? adler32_of_parts(job.size, kChecksumThreads, sums, weighted)
                                      : crc32_of_parts(job.size, kChecksumThreads, sums);
      const std::uint32_t stored = adler ? load_be32(job.trailer) : load_le32(job.trailer);
      if (value != stored && status[job.status] == kKernelOk) status[job.status] = kErrChecksum;
    }
    __syncthreads();
  }
}

unsigned grid_for(std::uint64_t items, unsigned per_block) {
  const std::uint64_t g = (items + per_block - 1) / per_block;
  return unsigned(g == 0 ? 1 : (g > 65535u * 16 ? 65535u * 16 : g));
}

}  // namespace

cudaError_t launch_decode_streams(const StreamJob* d_jobs, std::uint32_t n, int* d_status,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned kThreads = 128;  // 4 warps
  decode_streams_kernel<<<grid_for(n, kThreads / kWarp), kThreads, 0, stream>>>(d_jobs, n,
                                                                                d_status);
  return cudaGetLastError();
}

cudaError_t launch_unshuffle(const UnshuffleJob* d_jobs, std::uint32_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  unshuffle_kernel<<<grid_for(n, 1), 256, 0, stream>>>(d_jobs, n);
  return cudaGetLastError();
}

cudaError_t launch_scatter(const ScatterJob* d_jobs, std::uint32_t n,
                           const std::int64_t* d_tile_starts, std::int64_t total_tiles,
                           unsigned long long* d_nans, cudaStream_t stream) {
  if (n == 0 || total_tiles == 0) return cudaSuccess;
  scatter_kernel<<<grid_for(std::uint64_t(total_tiles), 1), 256, 0, stream>>>(
      d_jobs, n, d_tile_starts, total_tiles, d_nans);
  return cudaGetLastError();
}

cudaError_t launch_check_sizes(const std::size_t* d_actual, const std::size_t* d_expected,
                               int* d_status, std::uint32_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  check_sizes_kernel<<<grid_for(n, 256), 256, 0, stream>>>(d_actual, d_expected, d_status, n);
  return cudaGetLastError();
}

cudaError_t launch_verify_checksums(const ChecksumJob* d_jobs, std::uint32_t n, int* d_status,
                                    cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  verify_checksums_kernel<<<grid_for(n, 1), kChecksumThreads, 0, stream>>>(d_jobs, n, d_status);
  return cudaGetLastError();
}

}  // namespace zarrflow::gpu
