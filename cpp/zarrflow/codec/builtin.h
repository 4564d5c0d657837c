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
void register_delta_codec(CodecRegistry& v3, CodecRegistry& v2);      // delta.cc
void register_fixedscaleoffset_codec(CodecRegistry& v3, CodecRegistry& v2);  // fixedscaleoffset.cc
void register_astype_codec(CodecRegistry& v3, CodecRegistry& v2);            // astype.cc
void register_shuffle_codec(CodecRegistry& v3, CodecRegistry& v2);           // shuffle.cc
void register_quantize_codec(CodecRegistry& v3, CodecRegistry& v2);          // quantize.cc
void register_bitround_codec(CodecRegistry& v3, CodecRegistry& v2);          // bitround.cc
void register_packbits_codec(CodecRegistry& v3, CodecRegistry& v2);          // packbits.cc
void register_bz2_codec(CodecRegistry& v3, CodecRegistry& v2);               // bz2.cc
void register_lzma_codec(CodecRegistry& v3, CodecRegistry& v2);              // lzma.cc
void register_crc32_codec(CodecRegistry& v3, CodecRegistry& v2);             // crc32.cc
void register_adler32_codec(CodecRegistry& v3, CodecRegistry& v2);           // adler32.cc
void register_fletcher32_codec(CodecRegistry& v3, CodecRegistry& v2);        // fletcher32.cc
void register_jenkins_lookup3_codec(CodecRegistry& v3, CodecRegistry& v2);   // jenkins_lookup3.cc
// vlen.cc (vlen-utf8, vlen-bytes, vlen-array)
void register_vlen_codecs(CodecRegistry& v3, CodecRegistry& v2);

}  // namespace zarrflow
