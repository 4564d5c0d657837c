#include "zarrflow/core/prefault.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "zarrflow/core/buffer.h"

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace zarrflow {
namespace {

std::byte pattern(std::size_t i) { return static_cast<std::byte>((i * 131 + 7) & 0xff); }

void write_front_to_back(Buffer& b) {
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = pattern(i);
}

std::size_t first_wrong_byte(const Buffer& b) {
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b.data()[i] != pattern(i)) return i;
  return b.size();
}

TEST(PrefaultAhead, TheWriterRacingTheHelperKeepsEveryByteItWrote) {
  for (const bool huge : {false, true}) {
    const std::size_t size = (std::size_t{24} << 20) + 12345;
    Buffer b = huge ? Buffer::huge_page_aligned(size) : Buffer(size);
    {
      const PrefaultAhead prefault(b.data(), b.size(), true);
      write_front_to_back(b);
    }
    EXPECT_EQ(first_wrong_byte(b), b.size()) << "huge pages: " << huge;
  }
}

TEST(PrefaultAhead, PagesAlreadyWrittenKeepTheirContents) {
  Buffer b(std::size_t{8} << 20);
  write_front_to_back(b);
  {
    const PrefaultAhead prefault(b.data(), b.size(), true);
    // Wait for the helper to pass over the written pages (where the kernel lets it).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (PrefaultAhead::supported() && prefault.bytes_mapped() + 2 * 4096 < b.size() &&
           std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(first_wrong_byte(b), b.size());
}

#ifdef __linux__
// Pages of [p, p + n) the kernel has mapped, by mincore.
std::size_t resident_pages(const std::byte* p, std::size_t n) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto last = (reinterpret_cast<std::uintptr_t>(p) + n) / page * page;
  std::vector<unsigned char> in((last - first) / page);
  if (mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0) return 0;
  std::size_t count = 0;
  for (const unsigned char c : in) count += c & 1;
  return count;
}

TEST(PrefaultAhead, MapsEveryWholePageOfTheBufferWhereTheKernelCan) {
  if (!PrefaultAhead::supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (Linux < 5.14)";
  // A fresh mapping of its own, so that no page of it is mapped before.
  const std::size_t size = std::size_t{16} << 20;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(p);
  madvise(p, size, MADV_NOHUGEPAGE);  // count 4 KiB pages, not whatever THP makes of them
  EXPECT_EQ(resident_pages(bytes, size), 0u);
  std::size_t mapped = 0;
  {
    const PrefaultAhead prefault(bytes, size, /*even_if_all_cpus_busy=*/true);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (prefault.bytes_mapped() < size && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    mapped = prefault.bytes_mapped();
  }
  EXPECT_EQ(mapped, size);
  EXPECT_EQ(resident_pages(bytes, size), size / static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  munmap(p, size);
}
#endif

TEST(PrefaultAhead, BuffersUnderTheThresholdAreLeftToTheWriter) {
  Buffer b(std::size_t{1} << 20);
  const PrefaultAhead prefault(b.data(), b.size(), true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(prefault.bytes_mapped(), 0u);
}

TEST(PrefaultAhead, StartsOnlyWhenACpuIsIdle) {
  EXPECT_TRUE(PrefaultAhead::a_cpu_is_idle("0.52 0.58 0.59 3/1234 5678\n", 16));
  EXPECT_TRUE(PrefaultAhead::a_cpu_is_idle("15.1 14.0 9.3 15/980 4321", 16));
  EXPECT_FALSE(PrefaultAhead::a_cpu_is_idle("15.9 14.0 9.3 16/980 4321", 16));
  EXPECT_FALSE(PrefaultAhead::a_cpu_is_idle("1.0 1.0 1.0 2/300 99", 2));
  // What cannot be read does not stop the helper.
  for (const char* odd : {"", "0.5 0.5", "0.5 0.5 0.5 x/10 1", "0.5 0.5 0.5 7", "a b c 4"})
    EXPECT_TRUE(PrefaultAhead::a_cpu_is_idle(odd, 16)) << odd;
}

}  // namespace
}  // namespace zarrflow
