#include "zarrflow/store/virtual_chunk_containers.h"

#include <algorithm>

namespace zarrflow {

namespace {

constexpr std::string_view kSchemes[] = {"file://", "s3://", "gs://", "http://", "https://"};

bool has_scheme(std::string_view s) {
  const std::size_t colon = s.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  return std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

std::string lowercase_scheme(std::string_view s) {
  std::string out(s);
  const std::size_t colon = out.find("://");
  for (std::size_t i = 0; i < colon; ++i)
    out[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[i])));
  return out;
}

}  // namespace

Result<std::string> normalize_location(std::string_view location) {
  if (location.empty()) return invalid_argument("empty location");
  if (location.find('\0') != std::string_view::npos)
    return invalid_argument("location contains a NUL byte");
  if (location.front() == '/') return "file://" + std::string(location);
  if (!has_scheme(location))
    return invalid_argument("location '" + std::string(location) +
                            "' is neither an absolute path nor a URL");
  std::string out = lowercase_scheme(location);
  if (out.starts_with("gcs://")) out = "gs://" + out.substr(6);
  return out;
}

Status VirtualChunkContainers::add(std::string_view url_prefix,
                                   std::shared_ptr<const Store> store) {
  auto bad = [&](std::string_view why) {
    return invalid_argument("virtual chunk container '" + std::string(url_prefix) +
                            "': " + std::string(why));
  };
  if (!store) return bad("no store");
  ZF_ASSIGN_OR_RETURN(std::string prefix, normalize_location(url_prefix));
  if (prefix.back() != '/') return bad("the URL prefix must end in '/'");
  const auto scheme = std::find_if(std::begin(kSchemes), std::end(kSchemes),
                                   [&](std::string_view s) { return prefix.starts_with(s); });
  if (scheme == std::end(kSchemes))
    return bad("unsupported scheme (file://, s3://, gs://, http://, https://)");
  std::string_view rest = std::string_view(prefix).substr(scheme->size());
  if (*scheme == "file://" && rest.starts_with('/')) rest.remove_prefix(1);
  rest.remove_suffix(1);  // the final '/'
  if (rest.empty()) return bad("the URL prefix names no bucket, host or path");
  // Canonical form: no "." / ".." / empty segments.
  for (std::size_t pos = 0; pos <= rest.size();) {
    std::size_t end = rest.find('/', pos);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view seg = rest.substr(pos, end - pos);
    if (seg.empty() || seg == "." || seg == "..")
      return bad("the URL prefix must not contain empty, '.' or '..' segments");
    pos = end + 1;
  }
  for (const auto& c : containers_)
    if (c.url_prefix == prefix) return bad("added twice");
  containers_.push_back({std::move(prefix), std::move(store)});
  std::stable_sort(containers_.begin(), containers_.end(), [](const auto& a, const auto& b) {
    return a.url_prefix.size() > b.url_prefix.size();
  });
  return {};
}

Result<VirtualChunkContainers::Resolved> VirtualChunkContainers::resolve(
    std::string_view location) const {
  ZF_ASSIGN_OR_RETURN(std::string url, normalize_location(location));
  for (const auto& c : containers_) {
    if (!url.starts_with(c.url_prefix)) continue;
    std::string key = url.substr(c.url_prefix.size());
    ZF_RETURN_IF_ERROR_CTX(validate_key(key),
                           "location '" + url + "' escapes its container '" + c.url_prefix + "'");
    return Resolved{c.store.get(), std::move(key)};
  }
  std::string known;
  for (const auto& c : containers_) known += (known.empty() ? "" : ", ") + c.url_prefix;
  return path_escape("location '" + url + "' is in no authorised virtual chunk container (" +
                     (known.empty() ? std::string("none are authorised") : "authorised: " + known) +
                     "); authorise its URL prefix with virtual_chunk_containers=");
}

ThreadPool* VirtualChunkContainers::io_pool() const {
  for (const auto& c : containers_)
    if (ThreadPool* p = c.store->io_pool()) return p;
  return nullptr;
}

}  // namespace zarrflow
