// Where the bytes of one piece of a GPU read go: staging slots, host blocks, GPU placements.
#include "zarrflow/pipeline/gpu/batch_layout.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "zarrflow/pipeline/gpu/read_test_util.h"
#include "zarrflow/store/file_store.h"

namespace zarrflow::gpu {
namespace {

using read_test::all;
using read_test::Arrays;

TEST(BatchLayout, StagingSlotsAre4KiBAlignedWithRoomForODirect) {
  Arrays a;
  auto items = a.plan({a.request(*a.zstd, Selection::full({5, 7})),
                       a.request(*a.sharded, Selection::full({4, 4}), 64)});
  auto layout = lay_out_staging(items, all(items), {});
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  std::uint64_t expect = 0;
  ASSERT_EQ(layout->slots.size(), items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    if (it.mode == Mode::kFill) {
      EXPECT_EQ(layout->slots[k].first, layout->slots[k].second) << it.key;  // no slot
      continue;
    }
    EXPECT_EQ(layout->slots[k].first, it.staging_offset) << it.key;
    EXPECT_EQ(layout->slots[k].second, it.staging_offset + it.stored_size) << it.key;
    EXPECT_EQ(it.staging_offset, expect) << it.key;
    EXPECT_EQ(it.staging_offset % 4096, 0u);
    const std::uint64_t lead = it.range ? it.range->offset % 4096 : 0;
    expect += align_up(lead + it.stored_size, 4096);
    EXPECT_FALSE(it.host_tf);
    EXPECT_FALSE(it.direct);
  }
  EXPECT_EQ(layout->staged, expect);
  EXPECT_EQ(layout->converted, 0u);
  EXPECT_EQ(layout->direct, 0u);
}

// Uncompressed whole chunks into a dense destination with a transform are converted while read;
// not when a cache keeps their stored bytes, nor on another I/O path, nor partly read.
TEST(BatchLayout, UncompressedChunksWithATransformAreConvertedWhileRead) {
  Arrays a;
  ElementTransform tf{OutType::kBFloat16, 0.f, 1.f};
  tf.in = *in_type_of(a.raw->dtype());
  std::vector<Item> items;
  // Chunk (0, 0) whole into a dense 2x3 bfloat16 block, and a part of chunk (0, 1).
  const ReadRequest whole{
      a.raw.get(), Selection{{0, 0}, {2, 3}, {1, 1}}, {a.dest, {2, 3}, c_strides(Shape{2, 3}, 2)}};
  const ReadRequest part{a.raw.get(),
                         Selection{{0, 3}, {1, 3}, {1, 1}},
                         {a.dest + 64, {1, 3}, c_strides(Shape{1, 3}, 2)}};
  for (const auto& r : {whole, part}) ASSERT_TRUE(gather_items(r, &tf, {}, items).ok());
  choose_decoders(items, a.programs, {});
  ASSERT_TRUE(measure_stored_sizes(items, nullptr).ok());
  auto layout = lay_out_staging(items, all(items), {});
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(items[0].host_tf);
  EXPECT_EQ(items[0].host_tf_offset, 0u);
  EXPECT_EQ(layout->converted, 256u);  // 6 bfloat16 elements, in a 256-byte slot
  EXPECT_FALSE(items[1].host_tf);
  EXPECT_EQ(layout->staged, 4096u);
  EXPECT_FALSE(streams_to_host_tf(items[0], {IoPath::kAuto, false, /*caching=*/true}));
  EXPECT_FALSE(streams_to_host_tf(items[0], {IoPath::kDirect, false, false}));
  EXPECT_TRUE(streams_to_host_tf(items[0], {}));
}

TEST(BatchLayout, CuFileReadsOnlyUncompressedWholeValuesOfLocalFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "zarrflow_batch_layout_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto files = FileStore::open(dir.string());
  ASSERT_TRUE(files.ok());
  ASSERT_NE((*files)->local_files(), nullptr);
  EXPECT_EQ((*files)->local_files()->path_of("raw/c/0/0"), dir.string() + "/raw/c/0/0");
  read_test::write_array(**files, "raw", read_test::kRaw,
                         [](const read_test::Bytes& b) { return b; });
  read_test::write_array(**files, "zstd", read_test::kZstd, read_test::zstd_of);
  Arrays a;
  const auto local = read_test::open_array(*files, "raw");
  const auto local_zstd = read_test::open_array(*files, "zstd");
  auto items = a.plan({a.request(*local, Selection{{0, 0}, {2, 3}, {1, 1}}),
                       a.request(*a.raw, Selection{{0, 0}, {2, 3}, {1, 1}}, 64),
                       a.request(*local_zstd, Selection{{0, 0}, {2, 3}, {1, 1}}, 128)});
  ASSERT_EQ(items.size(), 3u);
  const StagingOptions cufile{IoPath::kCuFile, true, false};
  auto layout = lay_out_staging(items, all(items), cufile);
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(items[0].direct);   // a local file
  EXPECT_FALSE(items[1].direct);  // a memory store has no LocalFiles
  EXPECT_FALSE(items[2].direct);  // compressed: checked on the host first
  EXPECT_EQ(layout->direct, 256u);
  // A local value that is not its decoded size cannot go straight to the GPU.
  items[0].stored_size = 20;
  const auto bad = lay_out_staging(items, all(items), cufile);
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(bad.status().message().find("chunk 'c/0/0'"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A duplicate that wants the same block decodes once; one that wants another part of the chunk
// decodes the shared bytes into a block of its own.
TEST(BatchLayout, HostBlocksAreSharedByDuplicatesThatWantTheSameBlock) {
  Arrays a;
  PlanOptions off;
  off.decode = GpuDecode::kOff;
  auto items = a.plan({a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),
                       a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}, 64),
                       a.request(*a.zstd, Selection{{0, 0}, {1, 3}, {1, 1}}, 128)},
                      off);
  ASSERT_EQ(items.size(), 3u);
  const auto layout = lay_out_host_blocks(items, all(items));
  EXPECT_FALSE(items[0].reuses_block);
  EXPECT_TRUE(items[1].reuses_block);
  EXPECT_EQ(items[1].cpu_offset, items[0].cpu_offset);
  EXPECT_FALSE(items[2].reuses_block);
  EXPECT_EQ(items[2].cpu_offset, 256u);
  EXPECT_EQ(layout.decoded, 512u);
  EXPECT_EQ(layout.converted, 0u);
  EXPECT_EQ(layout.decoded_unshared, 768u);  // as if the second request had a block of its own
}

// A piece's buffers are sized as if no chunk were shared, so that which samples a batch brings
// together does not change the sizes the pools are asked for.
TEST(BatchLayout, UnsharedSizesCountDuplicatesAsIfTheyWereNot) {
  Arrays a;
  const Selection chunk{{0, 0}, {2, 3}, {1, 1}};
  auto shared = a.plan({a.request(*a.zstd, chunk), a.request(*a.zstd, chunk, 64)});
  auto apart = a.plan({a.request(*a.zstd, chunk)});
  ASSERT_EQ(shared.size(), 2u);
  ASSERT_EQ(shared[1].dup_of, 0);
  auto with_dup = lay_out_staging(shared, all(shared), {});
  auto single = lay_out_staging(apart, all(apart), {});
  ASSERT_TRUE(with_dup.ok() && single.ok());
  EXPECT_EQ(with_dup->staged, single->staged);  // the bytes are read once
  EXPECT_EQ(with_dup->staged_unshared, 2 * single->staged);
  EXPECT_EQ(single->staged_unshared, single->staged);
}

TEST(BatchLayout, WholeChunksDecodeInPlaceAndPartsAreScattered) {
  Arrays a;
  auto items = a.plan({a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),
                       a.request(*a.zstd, Selection{{0, 3}, {1, 3}, {1, 1}}, 64),
                       a.request(*a.raw, Selection{{0, 0}, {2, 3}, {1, 1}}, 128),
                       a.request(*a.bz2, Selection{{0, 0}, {2, 3}, {1, 1}}, 192),
                       a.request(*a.bz2, Selection{{0, 3}, {2, 4}, {1, 1}}, 256)});
  ASSERT_TRUE(lay_out_staging(items, all(items), {}).ok());
  for (auto& it : items) it.payload.size = it.stored_size;  // as the host checks leave it
  const auto layout = place_outputs(items, all(items), /*gpu_cache=*/false);
  ASSERT_EQ(layout.items.size(), 6u);
  EXPECT_TRUE(layout.items[0].in_place);   // whole, dense, 16-byte aligned
  EXPECT_FALSE(layout.items[1].in_place);  // a part: decoded into scratch, then scattered
  EXPECT_EQ(layout.items[1].out_offset, 0u);
  EXPECT_EQ(layout.out, 256u);
  EXPECT_TRUE(layout.items[2].copy_up);   // uncompressed, whole: the stored bytes go up as is
  EXPECT_TRUE(layout.items[3].copy_up);   // decoded on the host into a dense block
  EXPECT_FALSE(layout.items[4].copy_up);  // ... into a strided one: scattered on the GPU
  EXPECT_FALSE(layout.items[5].copy_up);
  EXPECT_TRUE(layout.any_cpu_scatter);
  EXPECT_TRUE(layout.any_staged);
  EXPECT_EQ(layout.staged, items[1].staging_offset + items[1].stored_size);
  // Decoded from device staging: the zstd chunks (items 0, 1); the uncompressed chunk goes
  // straight into its destination, the host-decoded ones (3 to 5) from pinned blocks.
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(layout.items[k].from_staging, k < 2) << k;
  // Only the compressed chunks the GPU decodes go up while their piece is read: whether an
  // uncompressed chunk needs device staging is known only after the host checks.
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(uploads_while_read(items[k]), k < 2) << k;
  // The uncompressed whole chunk goes into its destination as soon as it is read (as it will be
  // copied up), unless the GPU cache wants its stored bytes.
  for (std::size_t k = 0; k < 6; ++k)
    EXPECT_EQ(copied_into_place_while_read(items[k], false), k == 2 ? items[2].dest.data : nullptr)
        << k;
  EXPECT_EQ(copied_into_place_while_read(items[2], true), nullptr);
  // With the GPU cache, uncompressed chunks travel through device staging too.
  const auto cached = place_outputs(items, all(items), /*gpu_cache=*/true);
  EXPECT_FALSE(cached.items[2].copy_up);
  EXPECT_TRUE(cached.items[2].from_staging);
}

}  // namespace
}  // namespace zarrflow::gpu
