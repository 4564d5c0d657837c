// Data types as the metadata documents spell them, with their configuration.
//
// v3 "data_type": a name ("float32", "string", "variable_length_bytes", "bytes") or an object
//   {"name", "configuration"}: "fixed_length_utf32" / "null_terminated_bytes" / "raw_bytes"
//   {"length_bytes": N}, "numpy.datetime64" / "numpy.timedelta64" {"unit": "ns",
//   "scale_factor": 1}, "structured" {"fields": [[name, data_type], ...]}.
// v2 "dtype": a NumPy typestr, or a structured field list [[name, typestr], [name, typestr,
//   shape], [name, [nested fields]]]; "|O" takes its meaning from the object codec among the
//   filters and compressor (vlen-utf8 / vlen-bytes / vlen-array), found as zarr-python finds it.
// Errors name the field and say what was expected; the caller prefixes the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "zarrflow/core/dtype.h"

namespace zarrflow {

struct ParsedDataType {
  DataType dtype;
  Endian endian = Endian::kNotApplicable;  // v2 byte order of the elements
  // Structured types: the fields as NumPy's dtype() takes them (lists for tuples): [[name,
  // typestr], [name, typestr, shape], [name, [nested fields]]], typestrs with their stored byte
  // order. Null for every other type.
  nlohmann::json fields;
};

Result<ParsedDataType> parse_v3_dtype(const nlohmann::json& data_type);

// `object_codec`: the v2 object codec id (v2_object_codec), "" when there is none.
Result<ParsedDataType> parse_v2_dtype(const nlohmann::json& dtype, const std::string& object_codec);

// The id of the first object codec among `filters` (null or an array) and then `compressor`, as
// zarr-python looks for it: "vlen-utf8", "vlen-bytes", "vlen-array", "pickle", "json2" or
// "msgpack2"; "" when there is none.
std::string v2_object_codec(const nlohmann::json& filters, const nlohmann::json& compressor);

}  // namespace zarrflow
