// DeviceReader: its pools, and one ReadOp per read (read_op.h has the stages).
#include "zarrflow/pipeline/gpu/device_reader.h"

#include "zarrflow/pipeline/gpu/read_op.h"

namespace zarrflow::gpu {

DeviceReader::DeviceReader()
    : pinned_(MemoryKind::kPinned, std::size_t{8} << 30),
      device_(MemoryKind::kDevice, std::size_t{8} << 30) {}

DeviceReader::~DeviceReader() = default;

Status DeviceReader::set_streams(int n) {
  if (n < 1 || n > kMaxReadStreams)
    return invalid_argument("GPU read streams: " + std::to_string(n) + " is not in [1, " +
                            std::to_string(kMaxReadStreams) + "]");
  streams_ = n;
  return {};
}

Status DeviceReader::read(const Array& arr, const Selection& region, const StridedView& dest,
                          const DeviceReadOptions& options, DeviceReadReport* report) {
  const DeviceReadRequest one{&arr, region, dest};
  return read_many({&one, 1}, options, report);
}

Status DeviceReader::read_many(std::span<const DeviceReadRequest> requests,
                               const DeviceReadOptions& options, DeviceReadReport* report) {
  ZF_RETURN_IF_ERROR(device_available());
  DeviceReadReport local;
  DeviceReadReport& r = report ? *report : local;
  ReadOp op(options, r, pinned_, device_, lanes_, streams_.load());
  return op.run(requests);
}

}  // namespace zarrflow::gpu
