//===- ArtifactWriter.cpp - Writes a model.kiln artifact ------------------===//
//
// Layout (docs/artifact.md): the 40-byte prefix, the header JSON, zero
// padding to the 64-aligned data offset D, then the sections: the code at
// offset 0, the extra sections (a CUDA model's fatbin) after it, then the
// weights section (or in the side file), each weight
// 64-aligned inside it. The content hash is computed while the data area is
// written and patched into the prefix at the end.
//
//===----------------------------------------------------------------------===//
#include "kiln/ArtifactWriter.h"
#include "kiln/Json.h"
#include "kiln/ShapeExpr.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

namespace kiln {

void ArtifactSpec::setOption(const std::string &key, const std::string &value) {
  options.emplace_back(key, json::quote(value));
}
void ArtifactSpec::setOption(const std::string &key, const char *value) {
  setOption(key, std::string(value ? value : ""));
}
void ArtifactSpec::setOption(const std::string &key, int64_t value) {
  options.emplace_back(key, std::to_string(value));
}
void ArtifactSpec::setOption(const std::string &key, bool value) {
  options.emplace_back(key, value ? "true" : "false");
}

namespace {

constexpr uint64_t kAlign = KILN_ARTIFACT_ALIGNMENT;

uint64_t alignUp(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// An input's or output's shape: integers, and the strings of symbolic dims.
std::string tensorShapeJson(const ArtifactTensor &t) {
  if (t.dimNames.empty())
    return shapeJson(t.shape);
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + (i < t.dimNames.size() && !t.dimNames[i].empty()
                                ? json::quote(t.dimNames[i])
                                : std::to_string(t.shape[i]));
  return s + "]";
}

std::string tensorsJson(const std::vector<ArtifactTensor> &tensors) {
  std::string s = "[";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ArtifactTensor &t = tensors[i];
    s += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " +
         json::quote(t.name) + ", \"dtype\": " + json::quote(t.dtype) +
         ", \"shape\": " + tensorShapeJson(t) + "}";
  }
  return s + (tensors.empty() ? "]" : "\n  ]");
}

// Offsets of each weight inside the weights section, and its total size.
std::vector<uint64_t> weightOffsets(const ArtifactSpec &spec,
                                    uint64_t &total) {
  std::vector<uint64_t> offsets;
  uint64_t off = 0;
  for (const ArtifactWeight &w : spec.weights) {
    off = alignUp(off);
    offsets.push_back(off);
    off += w.size;
  }
  total = off;
  return offsets;
}

std::string checkTensor(const char *what, const std::string &name,
                        const std::string &dtype,
                        const std::vector<int64_t> &shape) {
  int32_t code = kiln_dtype_from_name(dtype.c_str());
  if (code == KILN_DTYPE_UNDEFINED)
    return std::string(what) + " '" + name + "': unknown dtype '" + dtype + "'";
  for (int64_t d : shape)
    if (d < 0)
      return std::string(what) + " '" + name + "': invalid dim " +
             std::to_string(d) +
             (d == -1 ? " (a dynamic dim needs its symbol in dimNames)" : "");
  return "";
}

// The reader's checks of an input's or output's symbolic dims
// (Artifact.cpp): an input dim is one of the symbols, an output dim an
// expression over them; `used` marks the symbols inputs name.
std::string checkSymbolicTensor(bool input, const ArtifactTensor &t,
                                const std::vector<std::string> &symbols,
                                std::vector<bool> &used) {
  std::string named = std::string(input ? "input" : "output") + " '" +
                      t.name + "'";
  if (t.dimNames.empty())
    return checkTensor(input ? "input" : "output", t.name, t.dtype, t.shape);
  if (t.dimNames.size() != t.shape.size())
    return named + ": " + std::to_string(t.dimNames.size()) +
           " dimNames for " + std::to_string(t.shape.size()) + " dims";
  std::vector<int64_t> statics;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const std::string &text = t.dimNames[i];
    if (text.empty()) {
      statics.push_back(t.shape[i]);
      continue;
    }
    std::string where = named + ": dim " + std::to_string(i);
    if (symbols.empty())
      return where + " is \"" + text + "\" but the spec has no symbols";
    ShapeExpr e;
    std::string err;
    if (!parseShapeExpr(text, symbols, e, err))
      return where + ": " + err;
    int64_t index;
    if (input) {
      if (!e.isSymbol(index) || symbols[size_t(index)] != text)
        return where + " is \"" + text +
               "\"; an input dim must be one of the symbols";
      used[size_t(index)] = true;
    }
  }
  return checkTensor(input ? "input" : "output", t.name, t.dtype, statics);
}

bool numElements(const std::vector<int64_t> &shape, uint64_t &n) {
  n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 && n > UINT64_MAX / uint64_t(d))
      return false;
    n *= uint64_t(d);
  }
  return true;
}

std::string validate(const ArtifactSpec &spec) {
  if (!spec.code || spec.codeSize == 0)
    return "no code section given";
  for (size_t i = 0; i < spec.sections.size(); ++i) {
    const ArtifactSection &sec = spec.sections[i];
    if (sec.name.empty() || sec.name == "code" || sec.name == "weights" ||
        sec.kind.empty())
      return "section '" + sec.name + "': needs a name other than code and "
             "weights, and a kind";
    for (size_t j = 0; j < i; ++j)
      if (spec.sections[j].name == sec.name)
        return "section '" + sec.name + "' given twice";
    if (sec.size && !sec.data)
      return "section '" + sec.name + "': no data";
  }
  std::string e = checkShapeSymbols(spec.symbols);
  if (!e.empty())
    return e;
  std::vector<bool> used(spec.symbols.size(), false);
  for (const auto &t : spec.inputs) {
    e = checkSymbolicTensor(true, t, spec.symbols, used);
    if (!e.empty())
      return e;
  }
  for (const auto &t : spec.outputs) {
    e = checkSymbolicTensor(false, t, spec.symbols, used);
    if (!e.empty())
      return e;
  }
  for (const auto &[output, input] : spec.aliases) {
    auto named = [](const std::vector<ArtifactTensor> &list,
                    const std::string &name) -> const ArtifactTensor * {
      for (const ArtifactTensor &t : list)
        if (t.name == name)
          return &t;
      return nullptr;
    };
    const ArtifactTensor *o = named(spec.outputs, output);
    const ArtifactTensor *in = named(spec.inputs, input);
    if (!o || !in)
      return "alias of output '" + output + "' and input '" + input +
             "': no such " + (o ? "input" : "output");
    if (o->dtype != in->dtype || o->shape != in->shape ||
        o->dimNames != in->dimNames)
      return "alias of output '" + output + "' and input '" + input +
             "': their dtypes or shapes differ";
  }
  for (const std::string &text : spec.constraints) {
    ShapeConstraint c;
    std::string err;
    if (!parseShapeConstraint(text, spec.symbols, c, err))
      return "constraint \"" + text + "\": " + err;
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      return "symbol '" + spec.symbols[i] +
             "' is the dim of no input (its value would be unknown)";
  for (const auto &w : spec.weights) {
    e = checkTensor("weight", w.name, w.dtype, w.shape);
    if (!e.empty())
      return e;
    uint64_t n;
    size_t elem = kiln_dtype_size(kiln_dtype_from_name(w.dtype.c_str()));
    if (!numElements(w.shape, n) || n > UINT64_MAX / elem ||
        n * elem != w.size)
      return "weight '" + w.name + "': " + std::to_string(w.size) +
             " bytes given, its dtype and shape need " +
             std::to_string(n * elem);
    if (w.size && !w.data)
      return "weight '" + w.name + "': no data";
  }
  if (!spec.optionsJson.empty()) {
    json::Value v;
    std::string err;
    if (!json::parse(spec.optionsJson, v, err))
      return "options: " + err;
    if (!v.isObject())
      return "options: not a JSON object";
  }
  for (const auto &opt : spec.options) {
    json::Value v;
    std::string err;
    if (!json::parse(opt.second, v, err))
      return "option '" + opt.first + "': " + err;
  }
  if (!spec.kernelsJson.empty()) {
    json::Value v;
    std::string err;
    if (!json::parse(spec.kernelsJson, v, err))
      return "kernels: " + err;
    if (!v.isArray())
      return "kernels: not a JSON array";
  }
  return "";
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A FILE* writer that keeps the running hash of what it writes (when asked)
// and remembers the first error.
struct Out {
  FILE *f = nullptr;
  uint64_t written = 0;
  uint64_t hash = KILN_FNV1A64_OFFSET_BASIS;
  bool hashing = false;
  std::string error;

  bool write(const void *data, uint64_t size) {
    if (!error.empty() || size == 0)
      return error.empty();
    if (hashing)
      hash = kiln_fnv1a64(hash, data, size);
    // fwrite takes size_t; write in bounded chunks so huge weights work on
    // any size_t and short writes are detected.
    const char *p = static_cast<const char *>(data);
    while (size) {
      size_t chunk = size > (1u << 30) ? (1u << 30) : size_t(size);
      if (std::fwrite(p, 1, chunk, f) != chunk) {
        error = std::string("write failed: ") + std::strerror(errno);
        return false;
      }
      p += chunk;
      size -= chunk;
      written += chunk;
    }
    return true;
  }

  bool pad(uint64_t to) {
    static const char zeros[KILN_ARTIFACT_ALIGNMENT] = {0};
    while (written < to)
      if (!write(zeros, std::min<uint64_t>(to - written, sizeof(zeros))))
        return false;
    return true;
  }
};

void putU32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}
void putU64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}

std::string writeWeights(Out &out, const ArtifactSpec &spec,
                         const std::vector<uint64_t> &offsets,
                         uint64_t sectionStart) {
  for (size_t i = 0; i < spec.weights.size(); ++i) {
    if (!out.pad(sectionStart + offsets[i]) ||
        !out.write(spec.weights[i].data, spec.weights[i].size))
      return out.error;
  }
  return out.error;
}

} // namespace

std::vector<uint64_t> artifactSectionOffsets(const ArtifactSpec &spec,
                                             uint64_t codeOffset,
                                             uint64_t &end) {
  std::vector<uint64_t> offsets;
  end = codeOffset + spec.codeSize;
  for (const ArtifactSection &sec : spec.sections) {
    uint64_t off = alignUp(end);
    offsets.push_back(off);
    end = off + sec.size;
  }
  return offsets;
}

std::string renderArtifactHeader(const ArtifactSpec &spec,
                                 uint64_t codeOffset, uint64_t weightsOffset,
                                 uint64_t weightsSize,
                                 const std::string &weightsFile) {
  uint64_t total;
  std::vector<uint64_t> offsets = weightOffsets(spec, total);
  std::string options;
  if (!spec.optionsJson.empty()) {
    options = spec.optionsJson;
  } else {
    options = "{";
    for (size_t i = 0; i < spec.options.size(); ++i)
      options += (i ? ", " : "") + json::quote(spec.options[i].first) + ": " +
                 spec.options[i].second;
    options += "}";
  }
  std::string features = "[";
  for (size_t i = 0; i < spec.target.features.size(); ++i)
    features += (i ? ", " : "") + json::quote(spec.target.features[i]);
  features += "]";

  std::string weights = "[";
  for (size_t i = 0; i < spec.weights.size(); ++i) {
    const ArtifactWeight &w = spec.weights[i];
    weights += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " +
               json::quote(w.name) + ", \"dtype\": " + json::quote(w.dtype) +
               ", \"shape\": " + shapeJson(w.shape) +
               ", \"offset\": " + std::to_string(offsets[i]) +
               ", \"size\": " + std::to_string(w.size) + "}";
  }
  weights += spec.weights.empty() ? "]" : "\n  ]";

  std::string h = "{\n";
  h += "  \"format\": \"kiln-artifact\",\n";
  h += "  \"version\": " + std::to_string(KILN_ARTIFACT_VERSION) + ",\n";
  h += "  \"compiler\": {\"name\": " + json::quote(spec.compilerName) +
       ", \"version\": " + json::quote(spec.compilerVersion) + "},\n";
  h += "  \"source\": " + json::quote(spec.source) + ",\n";
  if (!spec.target.chip.empty())
    h += "  \"target\": {\"kind\": " + json::quote(spec.target.kind) +
         ", \"chip\": " + json::quote(spec.target.chip) +
         ", \"triple\": " + json::quote(spec.target.triple) + "},\n";
  else
    h += "  \"target\": {\"kind\": " + json::quote(spec.target.kind) +
         ", \"triple\": " + json::quote(spec.target.triple) +
         ", \"cpu\": " + json::quote(spec.target.cpu) +
         ", \"features\": " + features + "},\n";
  h += "  \"options\": " + options + ",\n";
  h += "  \"pipeline\": " + json::quote(spec.pipeline) + ",\n";
  h += "  \"entry\": " + json::quote(spec.entry) + ",\n";
  if (!spec.symbols.empty()) {
    h += "  \"symbols\": [";
    for (size_t i = 0; i < spec.symbols.size(); ++i)
      h += (i ? ", " : "") + json::quote(spec.symbols[i]);
    h += "],\n";
  }
  if (!spec.constraints.empty()) {
    h += "  \"constraints\": [";
    for (size_t i = 0; i < spec.constraints.size(); ++i)
      h += (i ? ", " : "") + json::quote(spec.constraints[i]);
    h += "],\n";
  }
  h += "  \"inputs\": " + tensorsJson(spec.inputs) + ",\n";
  h += "  \"outputs\": " + tensorsJson(spec.outputs) + ",\n";
  if (!spec.aliases.empty()) {
    h += "  \"aliases\": [";
    for (size_t i = 0; i < spec.aliases.size(); ++i)
      h += std::string(i ? ", " : "") + "{\"output\": " +
           json::quote(spec.aliases[i].first) +
           ", \"input\": " + json::quote(spec.aliases[i].second) + "}";
    h += "],\n";
  }
  h += "  \"weights\": " + weights + ",\n";
  if (!spec.kernelsJson.empty())
    h += "  \"kernels\": " + spec.kernelsJson + ",\n";
  h += "  \"sections\": [\n";
  h += "    {\"name\": \"code\", \"kind\": \"elf-shared-object\", \"offset\": " +
       std::to_string(codeOffset) +
       ", \"size\": " + std::to_string(spec.codeSize) + "},\n";
  uint64_t sectionsEnd;
  std::vector<uint64_t> sectionOffsets =
      artifactSectionOffsets(spec, codeOffset, sectionsEnd);
  for (size_t i = 0; i < spec.sections.size(); ++i)
    h += "    {\"name\": " + json::quote(spec.sections[i].name) +
         ", \"kind\": " + json::quote(spec.sections[i].kind) +
         ", \"offset\": " + std::to_string(sectionOffsets[i]) +
         ", \"size\": " + std::to_string(spec.sections[i].size) + "},\n";
  h += "    {\"name\": \"weights\", \"kind\": \"raw\", \"offset\": " +
       std::to_string(weightsOffset) +
       ", \"size\": " + std::to_string(weightsSize) + ", \"file\": " +
       (weightsFile.empty() ? std::string("null") : json::quote(weightsFile)) +
       "}\n";
  h += "  ]\n}\n";
  return h;
}

static std::string writeArtifactImpl(const std::string &path,
                                     const ArtifactSpec &spec);

std::string writeArtifact(const std::string &path, const ArtifactSpec &spec) {
  // The compiler calls this without exception support: nothing may escape.
  try {
    return writeArtifactImpl(path, spec);
  } catch (const std::exception &e) {
    return path + ": " + e.what();
  }
}

static std::string writeArtifactImpl(const std::string &path,
                                     const ArtifactSpec &spec) {
  std::string err = validate(spec);
  if (!err.empty())
    return path + ": " + err;

  uint64_t weightsSize;
  std::vector<uint64_t> offsets = weightOffsets(spec, weightsSize);
  bool side = weightsSize > spec.sideWeightsThreshold;
  std::string sidePath = path + ".weights";
  uint64_t codeOffset = 0;
  uint64_t sectionsEnd;
  std::vector<uint64_t> sectionOffsets =
      artifactSectionOffsets(spec, codeOffset, sectionsEnd);
  uint64_t weightsOffset = side ? 0 : alignUp(sectionsEnd);
  std::string header = renderArtifactHeader(
      spec, codeOffset, weightsOffset, weightsSize,
      side ? baseName(sidePath) : std::string());
  uint64_t dataOffset = alignUp(KILN_ARTIFACT_PREFIX_SIZE + header.size());

  if (side) {
    std::string tmp = sidePath + ".tmp";
    Out out;
    out.f = std::fopen(tmp.c_str(), "wb");
    if (!out.f)
      return tmp + ": cannot open for writing: " + std::strerror(errno);
    err = writeWeights(out, spec, offsets, 0);
    if (std::fclose(out.f) != 0 && err.empty())
      err = std::string("close failed: ") + std::strerror(errno);
    if (err.empty() && std::rename(tmp.c_str(), sidePath.c_str()) != 0)
      err = std::string("rename failed: ") + std::strerror(errno);
    if (!err.empty()) {
      std::remove(tmp.c_str());
      return sidePath + ": " + err;
    }
  }

  std::string tmp = path + ".tmp";
  Out out;
  out.f = std::fopen(tmp.c_str(), "wb");
  if (!out.f)
    return tmp + ": cannot open for writing: " + std::strerror(errno);
  unsigned char prefix[KILN_ARTIFACT_PREFIX_SIZE] = {0};
  std::memcpy(prefix, KILN_ARTIFACT_MAGIC, KILN_ARTIFACT_MAGIC_SIZE);
  putU32(prefix + KILN_ARTIFACT_OFF_VERSION, KILN_ARTIFACT_VERSION);
  putU32(prefix + KILN_ARTIFACT_OFF_RESERVED, 0);
  putU64(prefix + KILN_ARTIFACT_OFF_HEADER_SIZE, header.size());
  putU64(prefix + KILN_ARTIFACT_OFF_DATA_OFFSET, dataOffset);
  out.write(prefix, sizeof(prefix)); // hash patched in below
  out.hashing = true;
  out.write(header.data(), header.size());
  out.hashing = false;
  out.pad(dataOffset);
  out.hashing = true;
  out.write(spec.code, spec.codeSize);
  for (size_t i = 0; i < spec.sections.size(); ++i) {
    out.pad(dataOffset + sectionOffsets[i]);
    out.write(spec.sections[i].data, spec.sections[i].size);
  }
  // The weights section starts 64-byte aligned even when it is empty, and
  // the file reaches its start (a reader checks offset <= file size).
  if (!side)
    out.pad(dataOffset + weightsOffset);
  if (!side && !spec.weights.empty())
    writeWeights(out, spec, offsets, dataOffset + weightsOffset);
  if (out.error.empty()) {
    unsigned char hash[8];
    putU64(hash, out.hash);
    if (std::fseek(out.f, KILN_ARTIFACT_OFF_HASH, SEEK_SET) != 0 ||
        std::fwrite(hash, 1, 8, out.f) != 8)
      out.error = std::string("write failed: ") + std::strerror(errno);
  }
  if (std::fclose(out.f) != 0 && out.error.empty())
    out.error = std::string("close failed: ") + std::strerror(errno);
  if (out.error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    out.error = std::string("rename failed: ") + std::strerror(errno);
  if (!out.error.empty()) {
    std::remove(tmp.c_str());
    return path + ": " + out.error;
  }
  if (!side)
    std::remove(sidePath.c_str()); // a stale side file of an older artifact
  return "";
}

} // namespace kiln
