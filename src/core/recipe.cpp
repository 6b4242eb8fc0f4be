#include "mxq/recipe.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <vector>

#include "core/validate.hpp"
#include "mxq/error.hpp"

namespace mxq {
namespace {

struct Preset {
  const char* name;
  Recipe recipe;
};

Recipe make(Scheme s, ElemFormat e, int br, int bc, ScaleType st, float eps = 0.0f, bool pow2 = false) {
  Recipe r;
  r.scheme = s;
  r.elem = e;
  r.block_rows = br;
  r.block_cols = bc;
  r.scale_type = st;
  r.eps = eps;
  r.pow2 = pow2;
  return r;
}

// DeepGEMM / TileLang default eps for fp8_block (FORMATS.md 2.2).
constexpr float kBlockEps = 1e-4f;

const std::vector<Preset>& presets() {
  using E = ElemFormat;
  using S = Scheme;
  using T = ScaleType;
  static const std::vector<Preset> p = {
      {"fp8_tensor", make(S::fp8_tensor, E::e4m3fn, 0, 0, T::float32)},
      {"fp8_tensor_e5m2", make(S::fp8_tensor, E::e5m2, 0, 0, T::float32)},
      {"fp8_block_1x128", make(S::fp8_block, E::e4m3fn, 1, 128, T::float32, kBlockEps)},
      {"fp8_block_1x64", make(S::fp8_block, E::e4m3fn, 1, 64, T::float32, kBlockEps)},
      {"fp8_block_1x32", make(S::fp8_block, E::e4m3fn, 1, 32, T::float32, kBlockEps)},
      {"fp8_block_128x128", make(S::fp8_block, E::e4m3fn, 128, 128, T::float32, kBlockEps)},
      {"mxfp8", make(S::mx, E::e4m3fn, 1, 32, T::ue8m0)},
      {"mxfp8_e5m2", make(S::mx, E::e5m2, 1, 32, T::ue8m0)},
      {"mxfp4", make(S::mx, E::e2m1, 1, 32, T::ue8m0)},
      {"nvfp4", make(S::nvfp4, E::e2m1, 1, 16, T::ue4m3)},
      {"nvfp4_2d", make(S::nvfp4, E::e2m1, 16, 16, T::ue4m3)},
      {"fp4_block_1x32", make(S::fp8_block, E::e2m1, 1, 32, T::ue8m0, kBlockEps, true)},
  };
  return p;
}

const Preset* find_preset(std::string_view name) {
  if (name == "fp8_block") name = "fp8_block_1x128";
  if (name == "mxfp8_e4m3") name = "mxfp8";
  for (const auto& p : presets())
    if (name == p.name) return &p;
  return nullptr;
}

[[noreturn]] void bad_option(std::string_view key, std::string_view value, std::string_view expected) {
  fail_arg("recipe: option " + std::string(key) + "=" + std::string(value) + " is invalid; expected " +
           std::string(expected));
}

bool parse_bool(std::string_view key, std::string_view v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  bad_option(key, v, "0, 1, true or false");
}

int parse_int(std::string_view key, std::string_view v) {
  int out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) bad_option(key, v, "an integer");
  return out;
}

ElemFormat parse_elem(std::string_view key, std::string_view v) {
  const DType t = parse_dtype(v, "recipe: option " + std::string(key));
  if (t == DType::float8_e4m3fn) return ElemFormat::e4m3fn;
  if (t == DType::float8_e5m2) return ElemFormat::e5m2;
  if (t == DType::float4_e2m1fn) return ElemFormat::e2m1;
  bad_option(key, v, "float8_e4m3fn, float8_e5m2 or float4_e2m1fn");
}

void apply_option(Recipe& r, std::string_view key, std::string_view v) {
  if (key == "elem") {
    r.elem = parse_elem(key, v);
  } else if (key == "group") {
    r.block_cols = parse_int(key, v);
  } else if (key == "block") {
    const auto x = v.find('x');
    if (x == std::string_view::npos) bad_option(key, v, "ROWSxCOLS, e.g. 1x128");
    r.block_rows = parse_int(key, v.substr(0, x));
    r.block_cols = parse_int(key, v.substr(x + 1));
  } else if (key == "pow2") {
    r.pow2 = parse_bool(key, v);
  } else if (key == "eps") {
    char* end = nullptr;
    const std::string s(v);
    errno = 0;
    const float f = std::strtof(s.c_str(), &end);
    // ERANGE with 0: an underflow (1e-50 would silently be 0, a different scale rule); a
    // subnormal also sets ERANGE but is a float32 value, and an overflow is Inf (> 3e38 below).
    // strtof also skips leading spaces, which the recipe grammar does not have.
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end != '\0' ||
        (errno == ERANGE && f == 0.0f) || !(f >= 0.0f) || f > 3.0e38f)
      bad_option(key, v, "a finite float32 >= 0 (0, or 1.4e-45 to 3e38)");
    r.eps = f;
  } else if (key == "rounding") {
    if (v == "rceil") r.rounding = MxRounding::rceil;
    else if (v == "floor") r.rounding = MxRounding::floor;
    else bad_option(key, v, "rceil or floor");
  } else if (key == "layout") {
    if (v == "row_major") r.layout = ScaleLayout::row_major;
    else if (v == "mn_major_tma") r.layout = ScaleLayout::mn_major_tma;
    else if (v == "packed_ue8m0") r.layout = ScaleLayout::packed_ue8m0;
    else if (v == "swizzled_128x4") r.layout = ScaleLayout::swizzled_128x4;
    else bad_option(key, v, "row_major, mn_major_tma, packed_ue8m0 or swizzled_128x4");
  } else if (key == "scale") {
    if (v == "float32") r.scale_type = ScaleType::float32;
    else if (v == "float8_e8m0fnu" || v == "ue8m0") r.scale_type = ScaleType::ue8m0;
    else if (v == "ue4m3") r.scale_type = ScaleType::ue4m3;
    else bad_option(key, v, "float32, float8_e8m0fnu (ue8m0) or ue4m3");
  } else if (key == "dir") {
    if (v == "row") r.direction = Direction::rowwise;
    else if (v == "col") r.direction = Direction::columnwise;
    else if (v == "both") r.direction = Direction::both;
    else bad_option(key, v, "row, col or both");
  } else if (key == "colform") {
    if (v == "transposed") r.column_form = ColumnForm::transposed;
    else if (v == "same") r.column_form = ColumnForm::same_shape;
    else bad_option(key, v, "transposed or same");
  } else {
    fail_arg("recipe: unknown option '" + std::string(key) +
             "'; known: elem, group, block, pow2, eps, rounding, layout, scale, dir, colform");
  }
}

// Options of `r` that differ from `base`, as "k=v" strings.
std::vector<std::string> diff_options(const Recipe& base, const Recipe& r) {
  std::vector<std::string> out;
  if (r.elem != base.elem) out.push_back(std::string("elem=") + elem_dtype_name(r.elem));
  if (r.block_rows != base.block_rows || r.block_cols != base.block_cols)
    out.push_back("block=" + std::to_string(r.block_rows) + "x" + std::to_string(r.block_cols));
  if (r.pow2 != base.pow2) out.push_back(std::string("pow2=") + (r.pow2 ? "1" : "0"));
  if (r.eps != base.eps) out.push_back("eps=" + fmt_float(r.eps));
  if (r.rounding != base.rounding)
    out.push_back(std::string("rounding=") + (r.rounding == MxRounding::rceil ? "rceil" : "floor"));
  if (r.layout != base.layout) out.push_back(std::string("layout=") + layout_name(r.layout));
  // (validate() refuses fields out of range; a name printed before it still must not index past these)
  auto pick = [](const auto& names, int v) -> std::string {
    return v >= 0 && v < int(std::size(names)) ? names[v] : "?" + std::to_string(v);
  };
  if (r.scale_type != base.scale_type) {
    static const char* names[] = {"float32", "float8_e8m0fnu", "ue4m3"};
    out.push_back("scale=" + pick(names, int(r.scale_type)));
  }
  if (r.direction != base.direction) {
    static const char* names[] = {"?0", "row", "col", "both"};
    out.push_back("dir=" + pick(names, int(r.direction)));
  }
  if (r.has_columnwise() && r.column_form != base.column_form)  // a rowwise recipe's is read by nothing
    out.push_back(std::string("colform=") + (r.column_form == ColumnForm::transposed ? "transposed" : "same"));
  return out;
}

}  // namespace

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::fp8_tensor: return "fp8_tensor";
    case Scheme::fp8_block: return "fp8_block";
    case Scheme::mx: return "mx";
    default: return "nvfp4";
  }
}

const char* layout_name(ScaleLayout l) {
  switch (l) {
    case ScaleLayout::row_major: return "row_major";
    case ScaleLayout::mn_major_tma: return "mn_major_tma";
    case ScaleLayout::packed_ue8m0: return "packed_ue8m0";
    default: return "swizzled_128x4";
  }
}

const char* elem_dtype_name(ElemFormat f) {
  switch (f) {
    case ElemFormat::e4m3fn: return "float8_e4m3fn";
    case ElemFormat::e5m2: return "float8_e5m2";
    default: return "float4_e2m1fn";
  }
}

std::string Recipe::preset_names() {
  std::string s;
  for (const auto& p : presets()) {
    if (!s.empty()) s += ", ";
    s += p.name;
  }
  return s;
}

Recipe Recipe::parse(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view head = text.substr(0, colon);
  const Preset* p = find_preset(head);
  if (!p) fail_arg("recipe: unknown recipe '" + std::string(head) + "'; presets: " + preset_names());
  Recipe r = p->recipe;
  std::vector<std::string_view> given;  // the options' items as written, each key once
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    while (true) {  // "head:" and "head:a=1," have an empty item, refused like "head:,a=1"
      const auto comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      if (item.empty())
        fail_arg("recipe: '" + std::string(text) + "' has an empty option; expected key=value items separated by "
                 "single commas after the ':'");
      const auto eq = item.find('=');
      if (eq == std::string_view::npos) fail_arg("recipe: option '" + std::string(item) + "' must be key=value");
      const std::string_view key = item.substr(0, eq);
      for (std::string_view g : given)
        if (g.substr(0, g.find('=')) == key)
          fail_arg("recipe: option " + std::string(key) + " is given twice ('" + std::string(g) + "' and '" +
                   std::string(item) + "'); expected each option once");
      given.push_back(item);
      apply_option(r, key, item.substr(eq + 1));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  // pow2 block scales stored as UE8M0 imply a UE8M0 layout; fp32 stays the default otherwise
  if (r.layout == ScaleLayout::packed_ue8m0 && r.scheme == Scheme::fp8_block) r.scale_type = ScaleType::ue8m0;
  r.validate();
  // An option that cannot change this recipe is an error even at its default value, so that no
  // option is silently ignored.
  const bool scaled_by_rule = r.scheme == Scheme::mx || r.scheme == Scheme::nvfp4;
  for (std::string_view g : given) {
    const std::string_view key = g.substr(0, g.find('='));
    const auto refuse = [&](const char* why) { fail_arg("recipe " + r.name() + ": option " + std::string(g) + " " + why); };
    if ((key == "pow2" || key == "eps") && scaled_by_rule)
      refuse("applies to fp8_tensor and fp8_block only (MX and NVFP4 scales follow their own rules)");
    if (key == "rounding" && r.scheme != Scheme::mx) refuse("applies to MX recipes only");
    if (key == "colform" && !r.has_columnwise()) refuse("applies to columnwise output only (dir=col or dir=both)");
    // options whose every other value the scheme refuses (validate): they can only restate it
    if ((key == "group" || key == "block") && (r.scheme == Scheme::mx || r.scheme == Scheme::fp8_tensor))
      refuse("cannot change this recipe (MX blocks are 1x32; fp8_tensor has one scale)");
    if (key == "scale" && r.scheme != Scheme::fp8_block)
      refuse("cannot change this recipe (its scale type is fixed: fp32 for fp8_tensor, UE8M0 for MX, UE4M3 for NVFP4)");
    if (key == "layout" && r.scheme == Scheme::fp8_tensor) refuse("cannot change this recipe (one scalar scale)");
    if (key == "elem" && r.scheme == Scheme::nvfp4) refuse("cannot change this recipe (NVFP4 is float4_e2m1fn only)");
  }
  return r;
}

std::string Recipe::name() const {
  std::string best;
  size_t best_n = SIZE_MAX;
  for (const auto& p : presets()) {
    if (p.recipe.scheme != scheme) continue;
    const auto d = diff_options(p.recipe, *this);
    // A preset of another element format reads badly ("fp4_block_1x32:elem=float8_e4m3fn"):
    // prefer one that differs in options only.
    const size_t cost = d.size() + (p.recipe.elem != elem ? 8 : 0);
    if (cost < best_n) {
      best_n = cost;
      best = p.name;
      for (size_t i = 0; i < d.size(); ++i) best += (i ? "," : ":") + d[i];
    }
  }
  return best;
}

void Recipe::validate() const {
  // Fields set from C++ as enum values out of their range (the name below would index tables
  // with them): named by field and number, before anything reads them.
  auto range = [](const char* field, auto v, auto lo, auto hi) {
    if (int(v) < int(lo) || int(v) > int(hi))
      fail_arg("recipe: " + std::string(field) + "=" + std::to_string(int(v)) + " is not a valid value; expected " +
               std::to_string(int(lo)) + ".." + std::to_string(int(hi)));
  };
  range("scheme", scheme, Scheme::fp8_tensor, Scheme::nvfp4);
  range("elem", elem, ElemFormat::e4m3fn, ElemFormat::e2m1);
  range("scale_type", scale_type, ScaleType::float32, ScaleType::ue4m3);
  range("layout", layout, ScaleLayout::row_major, ScaleLayout::swizzled_128x4);
  range("direction", direction, Direction::rowwise, Direction::both);
  range("column_form", column_form, ColumnForm::same_shape, ColumnForm::transposed);
  range("rounding", rounding, MxRounding::rceil, MxRounding::floor);
  // The name is built only on failure: validate() runs on every call (plan, quantize).
  auto bad = [&](const std::string& m) { fail_arg("recipe " + name() + ": " + m); };
  const bool fp4 = elem == ElemFormat::e2m1;
  switch (scheme) {
    case Scheme::fp8_tensor:
      if (fp4) bad("fp8_tensor needs elem float8_e4m3fn or float8_e5m2, got float4_e2m1fn");
      if (block_rows != 0 || block_cols != 0) bad("fp8_tensor has no blocks (block=0x0)");
      if (scale_type != ScaleType::float32) bad("fp8_tensor stores an fp32 scale_inv (scale=float32)");
      if (layout != ScaleLayout::row_major) bad("fp8_tensor has a scalar scale (layout=row_major)");
      break;
    case Scheme::fp8_block: {
      const bool row_group = block_rows == 1 && (block_cols == 32 || block_cols == 64 || block_cols == 128);
      const bool square = block_rows == 128 && block_cols == 128;
      if (!row_group && !square)
        bad("fp8_block blocks are 1x32, 1x64, 1x128 or 128x128, got " + std::to_string(block_rows) + "x" +
            std::to_string(block_cols));
      if (scale_type == ScaleType::ue4m3) bad("fp8_block scales are float32 or float8_e8m0fnu");
      if (scale_type == ScaleType::ue8m0 && !pow2)
        bad(layout == ScaleLayout::packed_ue8m0
                ? "layout=packed_ue8m0 stores float8_e8m0fnu scales and needs pow2=1 (exact UE8M0 scales)"
                : "scale=float8_e8m0fnu needs pow2=1 (exact UE8M0 scales)");
      if (layout == ScaleLayout::swizzled_128x4) bad("fp8_block scales are row_major, mn_major_tma or packed_ue8m0");
      if (layout == ScaleLayout::mn_major_tma && (scale_type != ScaleType::float32 || square))
        bad("layout=mn_major_tma holds float32 scales of 1xG groups");
      if (layout == ScaleLayout::packed_ue8m0 && (scale_type != ScaleType::ue8m0 || square))
        bad("layout=packed_ue8m0 holds float8_e8m0fnu scales of 1xG groups");
      break;
    }
    case Scheme::mx:
      if (block_rows != 1 || block_cols != 32) bad("MX blocks are 1x32");
      if (scale_type != ScaleType::ue8m0) bad("MX scales are float8_e8m0fnu");
      if (layout == ScaleLayout::mn_major_tma) bad("MX scales are row_major, packed_ue8m0 or swizzled_128x4");
      break;
    case Scheme::nvfp4:
      if (!fp4) bad("nvfp4 elements are float4_e2m1fn");
      if (!((block_rows == 1 || block_rows == 16) && block_cols == 16)) bad("nvfp4 blocks are 1x16 or 16x16 (2-D)");
      if (scale_type != ScaleType::ue4m3) bad("nvfp4 scales are ue4m3");
      if (layout != ScaleLayout::row_major && layout != ScaleLayout::swizzled_128x4)
        bad("nvfp4 scales are row_major or swizzled_128x4");
      break;
  }
  if (rounding != MxRounding::rceil && scheme != Scheme::mx)
    bad("rounding=floor applies to MX recipes only (the other schemes have their own scale rules)");
  if (pow2 && scheme != Scheme::fp8_block && scheme != Scheme::fp8_tensor)
    bad("pow2 applies to fp8_tensor and fp8_block (MX scales are powers of two already)");
  if (eps != 0.0f && scheme != Scheme::fp8_block && scheme != Scheme::fp8_tensor)
    bad("eps applies to fp8_tensor and fp8_block (MX and NVFP4 scales follow their own rules)");
  if (!(eps >= 0.0f) || eps > 3.0e38f) bad("eps must be finite and >= 0, got " + fmt_float(eps));
  if (has_columnwise() && column_form == ColumnForm::same_shape && layout != ScaleLayout::row_major &&
      layout != ScaleLayout::swizzled_128x4)
    bad("columnwise same-shape output supports layout row_major or swizzled_128x4");
}

DType Recipe::data_dtype() const {
  switch (elem) {
    case ElemFormat::e4m3fn: return DType::float8_e4m3fn;
    case ElemFormat::e5m2: return DType::float8_e5m2;
    default: return DType::float4_e2m1fn;
  }
}

DType Recipe::scale_dtype() const {
  if (layout == ScaleLayout::packed_ue8m0) return DType::int32;
  switch (scale_type) {
    case ScaleType::float32: return DType::float32;
    case ScaleType::ue8m0: return DType::float8_e8m0fnu;
    default: return DType::float8_e4m3fn;
  }
}

num::ScaleRule Recipe::scale_rule(float tensor_factor) const {
  return num::with_tensor_factor({scheme, elem, rounding, pow2, scale_type == ScaleType::ue8m0, eps, 0.0f, 0.0f},
                                 tensor_factor);
}

}  // namespace mxq
