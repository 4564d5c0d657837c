// The built-in codecs: one registration function per codec file, called by registry.cc.
// Each adds its Zarr v3 name(s) to `v3` and its numcodecs id(s) to `v2` where it has one.
#pragma once

#include "zarrflow/codec/registry.h"

namespace zarrflow {

void register_bytes_codec(CodecRegistry& v3, CodecRegistry& v2);      // bytes.cc
void register_transpose_codec(CodecRegistry& v3, CodecRegistry& v2);  // transpose.cc
void register_sharding_codec(CodecRegistry& v3, CodecRegistry& v2);   // sharding_indexed.cc
void register_crc32c_codec(CodecRegistry& v3, CodecRegistry& v2);     // crc32c.cc
void register_zstd_codec(CodecRegistry& v3, CodecRegistry& v2);       // zstd.cc
void register_deflate_codecs(CodecRegistry& v3, CodecRegistry& v2);   // deflate.cc (gzip, zlib)
void register_lz4_codec(CodecRegistry& v3, CodecRegistry& v2);        // lz4.cc
void register_blosc_codec(CodecRegistry& v3, CodecRegistry& v2);      // blosc.cc
void register_vlen_codecs(CodecRegistry& v3, CodecRegistry& v2);      // vlen.cc (vlen-utf8,
                                                                      // vlen-bytes, vlen-array)
void register_v2_filters(CodecRegistry& v3, CodecRegistry& v2);       // filters.cc (delta,
                                                                      // fixedscaleoffset, astype,
                                                                      // shuffle)

}  // namespace zarrflow
