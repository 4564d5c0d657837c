// Codecs without a native decoder, decoded by numcodecs through Python (see python_codec.cc).
#pragma once

namespace zarrflow::py {

// Installs the codec layer's foreign-codec factory (codec/foreign.h) that decodes with numcodecs.
void install_python_codecs();

}  // namespace zarrflow::py
