#include "zarrflow/store/kerchunk_store.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <set>
#include <unordered_map>
#include <variant>

namespace zarrflow {

namespace {

using json = nlohmann::json;

// At most this many references come from "gen" items (each costs ~100 bytes of memory).
constexpr std::uint64_t kMaxGenerated = 50'000'000;

using Value = std::variant<std::int64_t, std::string>;
using Vars = std::unordered_map<std::string, Value>;

std::string value_text(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

// "{{ expression }}": integer arithmetic over variables (Jinja's subset kerchunk writes).
class Expression {
 public:
  Expression(std::string_view text, const Vars& vars) : s_(text), vars_(vars) {}

  Result<Value> evaluate() {
    ZF_ASSIGN_OR_RETURN(Value v, sum());
    skip_space();
    if (pos_ != s_.size()) return error("unexpected '" + std::string(s_.substr(pos_)) + "'");
    return v;
  }

 private:
  Status error(const std::string& what) const {
    return invalid_metadata("template expression '" + std::string(s_) + "': " + what);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool take(std::string_view op) {
    skip_space();
    if (s_.substr(pos_).starts_with(op)) {
      pos_ += op.size();
      return true;
    }
    return false;
  }
  Result<std::int64_t> integer(const Value& v) const {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
    return error("'" + std::get<std::string>(v) + "' is not a number");
  }
  Result<Value> sum() {
    ZF_ASSIGN_OR_RETURN(Value left, product());
    for (;;) {
      const bool plus = take("+");
      if (!plus && !take("-")) return left;
      ZF_ASSIGN_OR_RETURN(Value right, product());
      ZF_ASSIGN_OR_RETURN(std::int64_t a, integer(left));
      ZF_ASSIGN_OR_RETURN(std::int64_t b, integer(right));
      std::int64_t r = 0;
      if (plus ? __builtin_add_overflow(a, b, &r) : __builtin_sub_overflow(a, b, &r))
        return error("integer overflow");
      left = r;
    }
  }
  Result<Value> product() {
    ZF_ASSIGN_OR_RETURN(Value left, unary());
    for (;;) {
      char op = 0;
      if (take("*")) {
        op = '*';
      } else if (take("//")) {
        op = '/';
      } else if (take("%")) {
        op = '%';
      } else if (take("/")) {
        return error("true division '/' gives a float; use '//'");
      } else {
        return left;
      }
      ZF_ASSIGN_OR_RETURN(Value right, unary());
      ZF_ASSIGN_OR_RETURN(std::int64_t a, integer(left));
      ZF_ASSIGN_OR_RETURN(std::int64_t b, integer(right));
      std::int64_t r = 0;
      if (op == '*') {
        if (__builtin_mul_overflow(a, b, &r)) return error("integer overflow");
      } else {
        if (b == 0) return error("division by zero");
        if (a == INT64_MIN && b == -1) return error("integer overflow");
        // Python's floor division and modulo.
        std::int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
          q -= 1;
          m += b;
        }
        r = op == '/' ? q : m;
      }
      left = r;
    }
  }
  Result<Value> unary() {
    if (take("-")) {
      ZF_ASSIGN_OR_RETURN(Value v, unary());
      ZF_ASSIGN_OR_RETURN(std::int64_t i, integer(v));
      if (i == INT64_MIN) return error("integer overflow");
      return Value(-i);
    }
    if (take("(")) {
      ZF_ASSIGN_OR_RETURN(Value v, sum());
      if (!take(")")) return error("missing ')'");
      return v;
    }
    skip_space();
    const std::size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      std::int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v))
          return error("integer overflow");
        ++pos_;
      }
      return Value(v);
    }
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (pos_ == start) return error("expected a number, a name or '('");
    const std::string name(s_.substr(start, pos_ - start));
    auto it = vars_.find(name);
    if (it == vars_.end()) return error("unknown name '" + name + "'");
    return it->second;
  }

  std::string_view s_;
  const Vars& vars_;
  std::size_t pos_ = 0;
};

// Replaces every "{{ ... }}" in `text`.
Result<std::string> render(std::string_view text, const Vars& vars) {
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      return invalid_metadata("template '" + std::string(text) + "': '{{' without '}}'");
    out.append(text.substr(pos, open - pos));
    ZF_ASSIGN_OR_RETURN(Value v,
                        Expression(text.substr(open + 2, close - open - 2), vars).evaluate());
    out += value_text(v);
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

Result<std::uint64_t> parse_u64(const json& j, const std::string& what) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer()) {
    if (j.get<std::int64_t>() < 0) return invalid_metadata(what + " is negative");
    return static_cast<std::uint64_t>(j.get<std::int64_t>());
  }
  return invalid_metadata(what + " is not an integer");
}

Result<std::uint64_t> parse_u64_text(const std::string& s, const std::string& what) {
  if (s.empty() || s.size() > 19 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return invalid_metadata(what + " '" + s + "' is not a non-negative integer");
  return std::stoull(s);
}

}  // namespace

Result<std::string> decode_base64(std::string_view text) {
  static const auto table = [] {
    std::array<std::int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = std::int8_t(i);
    return t;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return corrupt_data("base64 data of impossible length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = table[static_cast<unsigned char>(c)];
    if (v < 0) return corrupt_data("base64 data contains '" + std::string(1, c) + "'");
    acc = (acc << 6) | std::uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// Builds a KerchunkReferences from the JSON document.
class KerchunkParser {
 public:
  explicit KerchunkParser(KerchunkReferences& out) : out_(out) {}

  Status parse(const json& doc) {
    if (!doc.is_object()) return invalid_metadata("a reference set is a JSON object");
    const json* refs = &doc;
    if (auto v = doc.find("version"); v != doc.end()) {
      if (!v->is_number_integer() || v->get<std::int64_t>() != 1)
        return unimplemented("reference set version " + v->dump() + " (known: 0 and 1)");
      out_.version_ = 1;
      if (auto t = doc.find("templates"); t != doc.end() && !t->is_null()) {
        if (!t->is_object()) return invalid_metadata("'templates' is not an object");
        for (const auto& [name, value] : t->items()) {
          if (!value.is_string())
            return invalid_metadata("template '" + name + "' is not a string");
          templates_[name] = value.get<std::string>();
        }
      }
      auto r = doc.find("refs");
      if (r == doc.end() || !r->is_object())
        return invalid_metadata("a version 1 reference set needs a 'refs' object");
      refs = &*r;
      if (auto g = doc.find("gen"); g != doc.end() && !g->is_null()) {
        if (!g->is_array()) return invalid_metadata("'gen' is not a list");
        for (const auto& item : *g) ZF_RETURN_IF_ERROR_CTX(generate(item), "'gen' item");
      }
    }
    for (const auto& [key, value] : refs->items())
      ZF_RETURN_IF_ERROR_CTX(add(key, value), "reference '" + key + "'");
    return {};
  }

 private:
  Status add(const std::string& key, const json& value) {
    ZF_RETURN_IF_ERROR(validate_key(key));
    KerchunkReferences::Entry e;
    if (value.is_string()) {
      const auto& s = value.get_ref<const std::string&>();
      e.is_inline = true;
      if (s.starts_with("base64:")) {
        ZF_ASSIGN_OR_RETURN(e.data, decode_base64(std::string_view(s).substr(7)));
      } else {
        e.data = s;
      }
    } else if (value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_null())) {
      if (value.size() != 1 && value.size() != 3)
        return invalid_metadata("a reference is [url] or [url, offset, length], not " +
                                value.dump());
      if (value[0].is_null()) return invalid_metadata("a reference without a URL");
      std::string url = value[0].get<std::string>();
      if (out_.version_ == 1 && url.find("{{") != std::string::npos) {
        ZF_ASSIGN_OR_RETURN(url, render(url, template_vars()));
      }
      if (value.size() == 3) {
        ZF_ASSIGN_OR_RETURN(e.offset, parse_u64(value[1], "offset"));
        ZF_ASSIGN_OR_RETURN(std::uint64_t length, parse_u64(value[2], "length"));
        e.length = length;
        std::uint64_t end = 0;
        if (__builtin_add_overflow(e.offset, length, &end))
          return invalid_metadata("offset + length overflows");
      }
      e.url_index = intern(std::move(url));
    } else if (value.is_object() || value.is_array() || value.is_number() || value.is_boolean()) {
      // Inline JSON (some writers embed .zattrs / .zarray as objects).
      e.is_inline = true;
      e.data = value.dump();
    } else {
      return invalid_metadata("unusable reference value " + value.dump());
    }
    out_.entries_.insert_or_assign(key, std::move(e));
    return {};
  }

  Vars template_vars() const {
    Vars v;
    for (const auto& [k, t] : templates_) v[k] = t;
    return v;
  }

  std::uint32_t intern(std::string url) {
    auto [it, inserted] = url_index_.emplace(url, static_cast<std::uint32_t>(out_.urls_.size()));
    if (inserted) out_.urls_.push_back(std::move(url));
    return it->second;
  }

  Status generate(const json& item) {
    if (!item.is_object()) return invalid_metadata("not an object");
    for (const char* field : {"key", "url", "dimensions"})
      if (!item.contains(field)) return invalid_metadata(std::string("no '") + field + "'");
    if (item.contains("offset") != item.contains("length"))
      return invalid_metadata("'offset' and 'length' go together");
    auto text = [&](const char* f) -> Result<std::string> {
      const json& v = item.at(f);
      if (v.is_string()) return v.get<std::string>();
      if (v.is_number_integer()) return v.dump();
      return invalid_metadata(std::string("'") + f + "' is not a string");
    };
    ZF_ASSIGN_OR_RETURN(std::string key_t, text("key"));
    ZF_ASSIGN_OR_RETURN(std::string url_t, text("url"));
    std::string offset_t, length_t;
    const bool ranged = item.contains("offset");
    if (ranged) {
      ZF_ASSIGN_OR_RETURN(offset_t, text("offset"));
      ZF_ASSIGN_OR_RETURN(length_t, text("length"));
    }
    const json& dims = item.at("dimensions");
    if (!dims.is_object()) return invalid_metadata("'dimensions' is not an object");
    std::vector<std::pair<std::string, std::vector<Value>>> axes;
    std::uint64_t total = 1;
    for (const auto& [name, d] : dims.items()) {
      std::vector<Value> values;
      if (d.is_array()) {
        for (const auto& v : d) {
          if (v.is_number_integer()) {
            values.emplace_back(v.get<std::int64_t>());
          } else if (v.is_string()) {
            values.emplace_back(v.get<std::string>());
          } else {
            return invalid_metadata("dimension '" + name +
                                    "' has a value that is neither an "
                                    "integer nor a string");
          }
        }
      } else if (d.is_object() && d.contains("stop")) {
        // Named copies: a lambda may not capture structured bindings (C++20 allows it, clang 14
        // does not).
        const nlohmann::json& range = d;
        const std::string& dim = name;
        auto get = [&range, &dim](const char* f, std::int64_t dflt) -> Result<std::int64_t> {
          const auto& d = range;
          const auto& name = dim;
          if (!d.contains(f)) return dflt;
          if (!d.at(f).is_number_integer())
            return invalid_metadata("dimension '" + name + "': '" + f + "' is not an integer");
          return d.at(f).get<std::int64_t>();
        };
        ZF_ASSIGN_OR_RETURN(std::int64_t start, get("start", 0));
        ZF_ASSIGN_OR_RETURN(std::int64_t stop, get("stop", 0));
        ZF_ASSIGN_OR_RETURN(std::int64_t step, get("step", 1));
        if (step == 0) return invalid_metadata("dimension '" + name + "': step 0");
        // Python's len(range(start, stop, step)), before any value is made.
        const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
        const __int128 abs_step = step > 0 ? step : -__int128(step);
        const __int128 count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
        if (count > __int128(kMaxGenerated))
          return invalid_metadata("dimension '" + name + "' makes more than " +
                                  std::to_string(kMaxGenerated) + " references");
        values.reserve(static_cast<std::size_t>(count));
        for (__int128 n = 0; n < count; ++n) values.emplace_back(std::int64_t(start + n * step));
      } else {
        return invalid_metadata("dimension '" + name + "' is neither a list nor a range");
      }
      if (__builtin_mul_overflow(total, values.size(), &total) || total > kMaxGenerated)
        return invalid_metadata("generates more than " + std::to_string(kMaxGenerated) +
                                " references");
      axes.emplace_back(name, std::move(values));
    }
    generated_ += total;
    if (generated_ > kMaxGenerated)
      return invalid_metadata("'gen' makes more than " + std::to_string(kMaxGenerated) +
                              " references");
    if (total == 0) return {};
    Vars vars = template_vars();
    std::vector<std::size_t> at(axes.size(), 0);
    for (std::uint64_t n = 0; n < total; ++n) {
      for (std::size_t a = 0; a < axes.size(); ++a) vars[axes[a].first] = axes[a].second[at[a]];
      ZF_ASSIGN_OR_RETURN(std::string key, render(key_t, vars));
      ZF_ASSIGN_OR_RETURN(std::string url, render(url_t, vars));
      json ref = json::array({url});
      if (ranged) {
        ZF_ASSIGN_OR_RETURN(std::string off, render(offset_t, vars));
        ZF_ASSIGN_OR_RETURN(std::string len, render(length_t, vars));
        ZF_ASSIGN_OR_RETURN(std::uint64_t o, parse_u64_text(off, "offset"));
        ZF_ASSIGN_OR_RETURN(std::uint64_t l, parse_u64_text(len, "length"));
        ref.push_back(o);
        ref.push_back(l);
      }
      ZF_RETURN_IF_ERROR_CTX(add(key, ref), "generated reference '" + key + "'");
      // Odometer over the axes, the last one fastest (itertools.product's order).
      for (std::size_t a = axes.size(); a-- > 0;) {
        if (++at[a] < axes[a].second.size()) break;
        at[a] = 0;
      }
    }
    return {};
  }

  KerchunkReferences& out_;
  std::map<std::string, std::string> templates_;
  std::unordered_map<std::string, std::uint32_t> url_index_;
  std::uint64_t generated_ = 0;
};

Result<std::shared_ptr<const KerchunkReferences>> KerchunkReferences::parse_json(
    std::string_view text, const std::string& source) {
  auto refs = std::make_shared<KerchunkReferences>();
  refs->source_ = source;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return invalid_metadata("reference set '" + source + "' is not valid JSON");
  Status s = KerchunkParser(*refs).parse(doc);
  if (!s.ok()) return std::move(s).annotate("reference set '" + source + "'");
  return std::shared_ptr<const KerchunkReferences>(std::move(refs));
}

const KerchunkReferences::Entry* KerchunkReferences::find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::shared_ptr<KerchunkStore> KerchunkStore::open(std::shared_ptr<const KerchunkReferences> refs,
                                                   VirtualChunkContainers containers) {
  return std::shared_ptr<KerchunkStore>(new KerchunkStore(std::move(refs), std::move(containers)));
}

KerchunkStore::KerchunkStore(std::shared_ptr<const KerchunkReferences> refs,
                             VirtualChunkContainers containers)
    : ReferenceStore(nullptr, std::move(containers)), refs_(std::move(refs)) {}

Result<std::optional<ChunkReference>> KerchunkStore::reference(std::string_view key) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  const auto* e = refs_->find(key);
  if (e == nullptr) return std::optional<ChunkReference>();
  if (e->is_inline)
    return std::optional(ChunkReference::of_inline(
        {reinterpret_cast<const std::byte*>(e->data.data()), e->data.size()}, refs_));
  return std::optional(
      ChunkReference::of_location(refs_->urls()[e->url_index], e->offset, e->length));
}

Result<std::vector<ListEntry>> KerchunkStore::list(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::vector<ListEntry> out;
  const auto& entries = refs_->entries();
  for (auto it = entries.lower_bound(p); it != entries.end() && it->first.starts_with(p); ++it) {
    const auto& e = it->second;
    out.push_back({it->first, e.is_inline ? e.data.size() : e.length.value_or(0)});
  }
  return out;
}

Result<std::vector<std::string>> KerchunkStore::list_dir(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::set<std::string> names;
  const auto& entries = refs_->entries();
  for (auto it = entries.lower_bound(p); it != entries.end() && it->first.starts_with(p); ++it) {
    const std::string_view rest = std::string_view(it->first).substr(p.size());
    names.emplace(rest.substr(0, rest.find('/')));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::string KerchunkStore::describe_key(std::string_view key) const {
  return refs_->source() + "#" + std::string(key);
}

}  // namespace zarrflow
