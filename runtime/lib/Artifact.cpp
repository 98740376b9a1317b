//===- Artifact.cpp - Reading and checking a model artifact ---------------===//
//
// Every check of docs/artifact.md's reader: the prefix, the sizes against the
// file, the content hash, the header JSON field by field, and the host. A
// message names the field or value at fault; nothing here trusts an offset
// or size before comparing it with the file.
//
//===----------------------------------------------------------------------===//
#include "Artifact.h"

#include <algorithm>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/utsname.h>

namespace kiln {

const std::string &TensorDesc::dimName(size_t axis) const {
  static const std::string none;
  return axis < dimExprs.size() ? dimExprs[axis].text : none;
}

namespace {

uint32_t getU32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint64_t getU64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)v);
  return buf;
}

// Field accessors that record a message naming the field on failure.
struct Checker {
  std::string error;

  bool fail(const std::string &what) {
    if (error.empty())
      error = what;
    return false;
  }

  const json::Value *member(const json::Value &obj, const std::string &where,
                            const std::string &key, json::Value::Kind kind) {
    const json::Value *v = obj.find(key);
    if (!v) {
      fail(where + ": missing \"" + key + "\"");
      return nullptr;
    }
    if (v->kind() != kind) {
      fail(where + ": \"" + key + "\" is " + json::Value::kindName(v->kind()) +
           ", expected " + json::Value::kindName(kind));
      return nullptr;
    }
    return v;
  }

  bool string(const json::Value &obj, const std::string &where,
              const std::string &key, std::string &out) {
    const json::Value *v = member(obj, where, key, json::Value::Kind::String);
    if (!v)
      return false;
    out = v->getString();
    return true;
  }

  bool u64(const json::Value &obj, const std::string &where,
           const std::string &key, uint64_t &out) {
    const json::Value *v = member(obj, where, key, json::Value::Kind::Number);
    if (!v)
      return false;
    if (!v->isInteger() || v->getInteger() < 0)
      return fail(where + ": \"" + key + "\" must be a non-negative integer");
    out = uint64_t(v->getInteger());
    return true;
  }

  enum class Role { Input, Output, Weight };

  // One tensor of "inputs", "outputs" or "weights". A dim is an integer, or
  // (inputs and outputs of an artifact with "symbols") a string: in an
  // input one of the symbols, in an output an expression over them.
  bool tensor(const json::Value &v, const std::string &where, TensorDesc &t,
              Role role, const std::vector<std::string> &symbols) {
    if (!v.isObject())
      return fail(where + ": not an object");
    if (!string(v, where, "name", t.name))
      return false;
    std::string named = where + " '" + t.name + "'";
    std::string dtype;
    if (!string(v, named, "dtype", dtype))
      return false;
    t.dtype = kiln_dtype_from_name(dtype.c_str());
    if (t.dtype == KILN_DTYPE_UNDEFINED)
      return fail(named + ": unknown dtype \"" + dtype + "\"");
    const json::Value *shape =
        member(v, named, "shape", json::Value::Kind::Array);
    if (!shape)
      return false;
    uint64_t n = 1;
    bool overflow = false, symbolic = false;
    std::vector<ShapeExpr> exprs;
    for (const json::Value &d : shape->getArray()) {
      std::string dimWhere = named + ": dim " + std::to_string(t.shape.size());
      if (d.isString()) {
        const std::string &text = d.getString();
        if (role == Role::Weight)
          return fail(dimWhere + " is \"" + text +
                      "\"; weights have static shapes");
        if (symbols.empty())
          return fail(dimWhere + " is \"" + text +
                      "\" but the header declares no \"symbols\"");
        ShapeExpr e;
        std::string err;
        if (role == Role::Input) {
          bool known = false;
          for (const std::string &s : symbols)
            known |= s == text;
          if (!known) {
            if (!isShapeSymbolName(text))
              return fail(dimWhere + " is \"" + text +
                          "\"; an input dim must be one of the symbols, "
                          "not an expression");
            std::string list;
            for (const std::string &s : symbols)
              list += (list.empty() ? "" : ", ") + s;
            return fail(dimWhere + ": unknown symbol '" + text +
                        "' (the symbols are " + list + ")");
          }
        }
        if (!parseShapeExpr(text, symbols, e, err))
          return fail(dimWhere + ": " + err);
        exprs.resize(t.shape.size());
        exprs.push_back(std::move(e));
        t.shape.push_back(-1);
        symbolic = true;
        continue;
      }
      if (!d.isInteger())
        return fail(named + ": shape entries must be integers" +
                    std::string(role == Role::Weight ? ""
                                                     : " or symbol strings"));
      int64_t dim = d.getInteger();
      if (dim == -1 && role != Role::Weight)
        return fail(named + ": dim -1 in its shape; a dynamic dim is a "
                            "symbol name (the header's \"symbols\")");
      if (dim < 0)
        return fail(named + ": invalid dim " + std::to_string(dim));
      t.shape.push_back(dim);
      if (dim && n > UINT64_MAX / uint64_t(dim))
        overflow = true;
      n *= uint64_t(dim);
    }
    size_t elem = kiln_dtype_size(t.dtype);
    if (symbolic) {
      exprs.resize(t.shape.size());
      t.dimExprs = std::move(exprs);
      t.bytes = 0; // per run
      return true;
    }
    if (overflow || n > UINT64_MAX / elem)
      return fail(named + ": shape too large");
    t.bytes = n * elem;
    return true;
  }
};

kiln_status sectionsBeyondFile(const unsigned char *data, uint64_t size,
                               uint64_t headerSize, uint64_t dataOffset) {
  // Called when the hash does not match: if the (intact) header names
  // sections past the end of the file, the file was cut short.
  std::string text(reinterpret_cast<const char *>(data) +
                       KILN_ARTIFACT_PREFIX_SIZE,
                   headerSize);
  json::Value root;
  std::string err;
  if (!json::parse(text, root, err))
    return KILN_ERROR_CORRUPTED;
  const json::Value *sections = root.find("sections");
  if (!sections || !sections->isArray())
    return KILN_ERROR_CORRUPTED;
  for (const json::Value &s : sections->getArray()) {
    const json::Value *off = s.find("offset");
    const json::Value *sz = s.find("size");
    const json::Value *file = s.find("file");
    if (file && file->isString())
      continue;
    if (off && sz && off->isInteger() && sz->isInteger() &&
        off->getInteger() >= 0 && sz->getInteger() >= 0 &&
        dataOffset + uint64_t(off->getInteger()) + uint64_t(sz->getInteger()) >
            size)
      return KILN_ERROR_TRUNCATED;
  }
  return KILN_ERROR_CORRUPTED;
}

} // namespace

kiln_status parseArtifact(const unsigned char *data, uint64_t size,
                          ArtifactHeader &out, std::string &error) {
  const uint64_t kMagic = KILN_ARTIFACT_MAGIC_SIZE;
  if (size < kMagic) {
    if (std::memcmp(data, KILN_ARTIFACT_MAGIC, size) == 0 && size > 0) {
      error = "truncated: " + std::to_string(size) +
              " bytes, shorter than the 40-byte prefix";
      return KILN_ERROR_TRUNCATED;
    }
    error = "not a Kiln artifact (no KILNART magic)";
    return KILN_ERROR_NOT_ARTIFACT;
  }
  if (std::memcmp(data, KILN_ARTIFACT_MAGIC, kMagic) != 0) {
    error = "not a Kiln artifact (no KILNART magic)";
    return KILN_ERROR_NOT_ARTIFACT;
  }
  if (size < KILN_ARTIFACT_PREFIX_SIZE) {
    error = "truncated: " + std::to_string(size) +
            " bytes, shorter than the 40-byte prefix";
    return KILN_ERROR_TRUNCATED;
  }
  out.version = getU32(data + KILN_ARTIFACT_OFF_VERSION);
  if (out.version != KILN_ARTIFACT_VERSION) {
    error = "artifact format version " + std::to_string(out.version) +
            ", this runtime reads " + std::to_string(KILN_ARTIFACT_VERSION);
    return KILN_ERROR_VERSION;
  }
  out.headerSize = getU64(data + KILN_ARTIFACT_OFF_HEADER_SIZE);
  out.dataOffset = getU64(data + KILN_ARTIFACT_OFF_DATA_OFFSET);
  out.hash = getU64(data + KILN_ARTIFACT_OFF_HASH);
  if (out.headerSize > size - KILN_ARTIFACT_PREFIX_SIZE) {
    error = "truncated: the header needs " + std::to_string(out.headerSize) +
            " bytes, the file has " +
            std::to_string(size - KILN_ARTIFACT_PREFIX_SIZE) +
            " after the prefix";
    return KILN_ERROR_TRUNCATED;
  }
  if (out.dataOffset < KILN_ARTIFACT_PREFIX_SIZE + out.headerSize ||
      out.dataOffset % KILN_ARTIFACT_ALIGNMENT != 0) {
    error = "bad header: data offset " + std::to_string(out.dataOffset) +
            " is not 64-byte aligned after the header";
    return KILN_ERROR_BAD_HEADER;
  }
  if (out.dataOffset > size) {
    error = "truncated: the data area starts at " +
            std::to_string(out.dataOffset) + ", the file has " +
            std::to_string(size) + " bytes";
    return KILN_ERROR_TRUNCATED;
  }

  uint64_t hash = kiln_fnv1a64(KILN_FNV1A64_OFFSET_BASIS,
                               data + KILN_ARTIFACT_PREFIX_SIZE,
                               out.headerSize);
  hash = kiln_fnv1a64(hash, data + out.dataOffset, size - out.dataOffset);
  if (hash != out.hash) {
    kiln_status st =
        sectionsBeyondFile(data, size, out.headerSize, out.dataOffset);
    if (st == KILN_ERROR_TRUNCATED)
      error = "truncated: the header names sections past the end of the "
              "file (" + std::to_string(size) + " bytes)";
    else
      error = "corrupted: content hash " + hex(hash) + ", the artifact says " +
              hex(out.hash);
    return st;
  }

  out.json.assign(reinterpret_cast<const char *>(data) +
                      KILN_ARTIFACT_PREFIX_SIZE,
                  out.headerSize);
  std::string err;
  if (!json::parse(out.json, out.root, err)) {
    error = "bad header: " + err;
    return KILN_ERROR_BAD_HEADER;
  }
  Checker c;
  const json::Value &root = out.root;
  auto bad = [&]() {
    error = "bad header: " + c.error;
    return KILN_ERROR_BAD_HEADER;
  };
  if (!root.isObject()) {
    c.fail("not a JSON object");
    return bad();
  }
  std::string format;
  uint64_t version;
  if (!c.string(root, "header", "format", format))
    return bad();
  if (format != "kiln-artifact") {
    c.fail("format is \"" + format + "\", expected \"kiln-artifact\"");
    return bad();
  }
  if (!c.u64(root, "header", "version", version))
    return bad();
  if (version != KILN_ARTIFACT_VERSION) {
    error = "artifact format version " + std::to_string(version) +
            " in the header, this runtime reads " +
            std::to_string(KILN_ARTIFACT_VERSION);
    return KILN_ERROR_VERSION;
  }
  const json::Value *compiler =
      c.member(root, "header", "compiler", json::Value::Kind::Object);
  std::string s;
  if (!compiler || !c.string(*compiler, "compiler", "name", s) ||
      !c.string(*compiler, "compiler", "version", s) ||
      !c.string(root, "header", "source", s) ||
      !c.member(root, "header", "options", json::Value::Kind::Object) ||
      !c.string(root, "header", "pipeline", s) ||
      !c.string(root, "header", "entry", out.entry))
    return bad();
  if (out.entry.empty()) {
    c.fail("\"entry\" is empty");
    return bad();
  }
  const json::Value *target =
      c.member(root, "header", "target", json::Value::Kind::Object);
  if (!target || !c.string(*target, "target", "kind", out.targetKind) ||
      !c.string(*target, "target", "triple", out.triple))
    return bad();
  // A CUDA target names its chip; its host code's cpu and features are
  // optional there (the host code is built for the build machine's triple).
  bool cuda = out.targetKind == "cuda";
  if (cuda && !c.string(*target, "target", "chip", out.chip))
    return bad();
  if ((!cuda || target->find("cpu")) &&
      !c.string(*target, "target", "cpu", out.cpu))
    return bad();
  static const json::Value noFeatures = json::Value::makeArray({});
  const json::Value *features =
      !cuda || target->find("features")
          ? c.member(*target, "target", "features", json::Value::Kind::Array)
          : &noFeatures;
  if (!features)
    return bad();
  for (const json::Value &f : features->getArray()) {
    if (!f.isString()) {
      c.fail("target: \"features\" entries must be strings");
      return bad();
    }
    out.features.push_back(f.getString());
  }

  if (const json::Value *options = root.find("options")) {
    const json::Value *ranks = options->find("tensor_parallel_ranks");
    const json::Value *rank = options->find("tensor_parallel_rank");
    if (ranks || rank) {
      if (!ranks || !rank || !ranks->isInteger() || !rank->isInteger() ||
          ranks->getInteger() < 1 || rank->getInteger() < 0 ||
          rank->getInteger() >= ranks->getInteger()) {
        c.fail("options: \"tensor_parallel_ranks\" and "
               "\"tensor_parallel_rank\" must be integers, 0 <= rank < "
               "ranks");
        return bad();
      }
      out.tensorParallelRanks = ranks->getInteger();
      out.tensorParallelRank = rank->getInteger();
    }
  }

  // Symbolic dims (optional): the symbols' names, then inputs naming them
  // and outputs computing from them.
  if (const json::Value *symbols = root.find("symbols")) {
    if (!symbols->isArray()) {
      c.fail("\"symbols\" must be an array of names");
      return bad();
    }
    for (const json::Value &v : symbols->getArray()) {
      if (!v.isString()) {
        c.fail("\"symbols\" entries must be strings");
        return bad();
      }
      out.symbols.push_back(v.getString());
    }
    std::string e = checkShapeSymbols(out.symbols);
    if (!e.empty()) {
      c.fail(e);
      return bad();
    }
  }
  if (const json::Value *constraints = root.find("constraints")) {
    if (!constraints->isArray()) {
      c.fail("\"constraints\" must be an array of strings");
      return bad();
    }
    for (const json::Value &v : constraints->getArray()) {
      ShapeConstraint constraint;
      std::string err;
      if (!v.isString()) {
        c.fail("\"constraints\" entries must be strings");
        return bad();
      }
      if (!parseShapeConstraint(v.getString(), out.symbols, constraint, err)) {
        c.fail("constraint \"" + v.getString() + "\": " + err);
        return bad();
      }
      out.constraints.push_back(std::move(constraint));
    }
  }
  for (const char *list : {"inputs", "outputs"}) {
    const json::Value *arr =
        c.member(root, "header", list, json::Value::Kind::Array);
    if (!arr)
      return bad();
    bool inputs = std::strcmp(list, "inputs") == 0;
    std::string where = inputs ? "input" : "output";
    for (const json::Value &v : arr->getArray()) {
      TensorDesc t;
      if (!c.tensor(v, where, t,
                    inputs ? Checker::Role::Input : Checker::Role::Output,
                    out.symbols))
        return bad();
      (inputs ? out.inputs : out.outputs).push_back(std::move(t));
    }
  }
  // "aliases" (optional): outputs written in an input's buffer.
  out.outputAliases.assign(out.outputs.size(), -1);
  if (const json::Value *aliases = root.find("aliases")) {
    if (!aliases->isArray()) {
      c.fail("\"aliases\" must be an array of {\"output\", \"input\"}");
      return bad();
    }
    std::vector<bool> inputTaken(out.inputs.size(), false);
    for (const json::Value &v : aliases->getArray()) {
      std::string output, input;
      if (!v.isObject()) {
        c.fail("\"aliases\" entries must be {\"output\", \"input\"}");
        return bad();
      }
      if (!c.string(v, "alias", "output", output) ||
          !c.string(v, "alias", "input", input))
        return bad();
      auto find = [](const std::vector<TensorDesc> &list,
                     const std::string &name) {
        for (size_t i = 0; i < list.size(); ++i)
          if (list[i].name == name)
            return int64_t(i);
        return int64_t(-1);
      };
      int64_t o = find(out.outputs, output), i = find(out.inputs, input);
      std::string what =
          "alias of output '" + output + "' and input '" + input + "': ";
      if (o < 0 || i < 0) {
        c.fail(what + "no such " + (o < 0 ? "output" : "input"));
        return bad();
      }
      if (out.outputAliases[size_t(o)] >= 0 || inputTaken[size_t(i)]) {
        c.fail(what + "each output and input may alias only once");
        return bad();
      }
      const TensorDesc &ot = out.outputs[size_t(o)], &it = out.inputs[size_t(i)];
      bool same = ot.dtype == it.dtype && ot.shape == it.shape &&
                  ot.dimExprs.size() == it.dimExprs.size();
      for (size_t d = 0; same && d < ot.dimExprs.size(); ++d)
        same = ot.dimName(d) == it.dimName(d);
      if (!same) {
        c.fail(what + "their dtypes or shapes differ");
        return bad();
      }
      out.outputAliases[size_t(o)] = i;
      inputTaken[size_t(i)] = true;
    }
  }
  // Every symbol gets its value from an input dim.
  for (size_t sym = 0; sym < out.symbols.size(); ++sym) {
    bool used = false;
    for (const TensorDesc &t : out.inputs)
      for (const ShapeExpr &e : t.dimExprs) {
        int64_t index;
        used |= e.isSymbol(index) && size_t(index) == sym;
      }
    if (!used) {
      c.fail("symbol '" + out.symbols[sym] +
             "' is the dim of no input (its value would be unknown)");
      return bad();
    }
  }
  const json::Value *weights =
      c.member(root, "header", "weights", json::Value::Kind::Array);
  if (!weights)
    return bad();
  for (const json::Value &v : weights->getArray()) {
    WeightDesc w;
    uint64_t wsize;
    if (!c.tensor(v, "weight", w, Checker::Role::Weight, out.symbols) ||
        !c.u64(v, "weight '" + w.name + "'", "offset", w.offset) ||
        !c.u64(v, "weight '" + w.name + "'", "size", wsize))
      return bad();
    if (wsize != w.bytes) {
      c.fail("weight '" + w.name + "': size " + std::to_string(wsize) +
             ", its dtype and shape need " + std::to_string(w.bytes));
      return bad();
    }
    if (w.offset % KILN_ARTIFACT_ALIGNMENT != 0) {
      c.fail("weight '" + w.name + "': offset " + std::to_string(w.offset) +
             " is not 64-byte aligned");
      return bad();
    }
    out.weights.push_back(std::move(w));
  }

  // The profiler's kernel table (optional: artifacts compiled without the
  // hooks have none). Entry k must have id k: the hooks pass the id.
  if (root.find("kernels")) {
    const json::Value *kernels =
        c.member(root, "header", "kernels", json::Value::Kind::Array);
    if (!kernels)
      return bad();
    for (const json::Value &v : kernels->getArray()) {
      std::string where = "kernel " + std::to_string(out.kernels.size());
      if (!v.isObject()) {
        c.fail(where + ": not an object");
        return bad();
      }
      KernelDesc k;
      uint64_t id;
      if (!c.u64(v, where, "id", id) || !c.string(v, where, "name", k.name) ||
          !c.string(v, where, "category", k.category))
        return bad();
      if (id != out.kernels.size()) {
        c.fail(where + ": \"id\" is " + std::to_string(id) +
               ", expected the entry's index");
        return bad();
      }
      if (const json::Value *lib = v.find("library")) {
        if (!lib->isBool()) {
          c.fail(where + ": \"library\" must be a boolean");
          return bad();
        }
        k.library = lib->getBool();
      }
      const json::Value *nodes =
          c.member(v, where, "onnx_nodes", json::Value::Kind::Array);
      if (!nodes)
        return bad();
      for (const json::Value &n : nodes->getArray()) {
        if (!n.isString()) {
          c.fail(where + ": \"onnx_nodes\" entries must be strings");
          return bad();
        }
        k.onnxNodes.push_back(n.getString());
      }
      out.kernels.push_back(std::move(k));
    }
  }

  const json::Value *sections =
      c.member(root, "header", "sections", json::Value::Kind::Array);
  if (!sections)
    return bad();
  bool haveCode = false, haveWeights = false;
  for (const json::Value &v : sections->getArray()) {
    std::string name, kind;
    uint64_t off, sz;
    if (!v.isObject()) {
      c.fail("sections: an entry is not an object");
      return bad();
    }
    if (!c.string(v, "section", "name", name) ||
        !c.string(v, "section '" + name + "'", "kind", kind) ||
        !c.u64(v, "section '" + name + "'", "offset", off) ||
        !c.u64(v, "section '" + name + "'", "size", sz))
      return bad();
    if (off % KILN_ARTIFACT_ALIGNMENT != 0) {
      c.fail("section '" + name + "': offset " + std::to_string(off) +
             " is not 64-byte aligned");
      return bad();
    }
    std::string file;
    const json::Value *fv = v.find("file");
    if (fv && fv->isString()) {
      file = fv->getString();
      if (file.empty() || file[0] == '/') {
        c.fail("section '" + name + "': \"file\" must be a relative path");
        return bad();
      }
    } else if (fv && !fv->isNull()) {
      c.fail("section '" + name + "': \"file\" must be a string or null");
      return bad();
    }
    if (file.empty() && (off > size - out.dataOffset ||
                         sz > size - out.dataOffset - off)) {
      error = "truncated: section '" + name + "' ends past the end of the "
              "file";
      return KILN_ERROR_TRUNCATED;
    }
    if (name == "code") {
      if (kind != "elf-shared-object" || !file.empty() || sz == 0) {
        c.fail("section 'code' must be a non-empty elf-shared-object in the "
               "artifact");
        return bad();
      }
      haveCode = true;
      out.codeOffset = off;
      out.codeSize = sz;
    } else if (name == "weights") {
      if (kind != "raw") {
        c.fail("section 'weights' must be of kind raw");
        return bad();
      }
      haveWeights = true;
      out.weightsOffset = off;
      out.weightsSize = sz;
      out.weightsFile = file;
    } else if (name == "cuda-fatbin") {
      if (kind != "cuda-fatbin" || !file.empty() || sz == 0) {
        c.fail("section 'cuda-fatbin' must be a non-empty cuda-fatbin in the "
               "artifact");
        return bad();
      }
      out.haveFatbin = true;
      out.fatbinOffset = off;
      out.fatbinSize = sz;
    }
  }
  if (!haveCode) {
    c.fail("no 'code' section");
    return bad();
  }
  // A CUDA model whose every kernel is a library call (cuBLASLt) has no
  // generated kernel, so no fatbin.
  bool allLibrary = std::all_of(out.kernels.begin(), out.kernels.end(),
                                [](const KernelDesc &k) { return k.library; });
  if (cuda && !out.haveFatbin && !(allLibrary && !out.kernels.empty())) {
    c.fail("target kind \"cuda\" without a 'cuda-fatbin' section");
    return bad();
  }
  for (const WeightDesc &w : out.weights) {
    if (!haveWeights || w.offset > out.weightsSize ||
        w.bytes > out.weightsSize - w.offset) {
      c.fail("weight '" + w.name + "' lies outside the weights section");
      return bad();
    }
  }
  return KILN_OK;
}

namespace {

// Spellings of LLVM's feature names in /proc/cpuinfo where they differ by
// more than punctuation.
const char *cpuinfoAlias(const std::string &f) {
  static const std::pair<const char *, const char *> aliases[] = {
      {"sse3", "pni"},       {"pclmul", "pclmulqdq"},
      {"lzcnt", "abm"},      {"rdrnd", "rdrand"},
      {"sahf", "lahf_lm"},   {"prfchw", "3dnowprefetch"},
      {"64bit", "lm"},       {"crc32", "sse4_2"},
      {"evex512", "avx512f"}, {"x87", "fpu"},
      {"cx8", "cx8"},        {"fxsr", "fxsr"},
      {"sha", "sha_ni"},     {"ermsb", "erms"},
      {"avxifma", "avx_ifma"}, {"avxneconvert", "avx_ne_convert"},
      {"avxvnniint8", "avx_vnni_int8"}, {"avxvnniint16", "avx_vnni_int16"}};
  for (const auto &a : aliases)
    if (f == a.first)
      return a.second;
  return nullptr;
}

std::string squash(const std::string &s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '.' && c != '-')
      out += char(std::tolower((unsigned char)c));
  return out;
}

const std::set<std::string> &cpuinfoFlags() {
  static const std::set<std::string> flags = [] {
    std::set<std::string> set;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.compare(0, 5, "flags") != 0)
        continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos)
        continue;
      std::istringstream words(line.substr(colon + 1));
      std::string w;
      while (words >> w)
        set.insert(w);
      break;
    }
    return set;
  }();
  return flags;
}

std::string hostArch() {
  struct utsname u;
  if (uname(&u) == 0)
    return u.machine;
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

// LLVM's tuning flags ("fast-gather", "prefer-256-bit", "macrofusion", ...):
// they steer code generation, the code runs without them.
bool isTuningFlag(const std::string &f) {
  static const char *const prefixes[] = {
      "fast-",      "slow-",       "prefer-",  "false-deps-",
      "tuning-",    "no-bypass-delay", "idivl-", "idivq-",
      "lea-",       "harden-sls-", "lvi-",     "retpoline"};
  for (const char *p : prefixes)
    if (f.compare(0, std::strlen(p), p) == 0)
      return true;
  static const char *const exact[] = {
      "macrofusion", "branchfusion", "pad-short-functions",
      "sbb-dep-breaking", "use-glm-div-sqrt-costs", "use-slm-arith-costs",
      "allow-light-256-bit", "seses", "sse-unaligned-mem", "vzeroupper",
      "faster-shift-than-shuffle", "16bit-mode", "32bit-mode", "64bit-mode",
      "branch-hint", "inline-asm-use-gpr32", "tagged-globals", "soft-float"};
  for (const char *e : exact)
    if (f == e)
      return true;
  return false;
}

} // namespace

bool hostHasCpuFeature(const std::string &name, bool &known) {
  std::string f = name;
  if (!f.empty() && f[0] == '+')
    f = f.substr(1);
  known = true;
  if (isTuningFlag(f))
    return true;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#define KILN_FEATURE(str)                                                      \
  if (f == str)                                                                \
    return __builtin_cpu_supports(str);
  KILN_FEATURE("cmov")
  KILN_FEATURE("mmx")
  KILN_FEATURE("popcnt")
  KILN_FEATURE("sse")
  KILN_FEATURE("sse2")
  KILN_FEATURE("sse3")
  KILN_FEATURE("ssse3")
  KILN_FEATURE("sse4.1")
  KILN_FEATURE("sse4.2")
  KILN_FEATURE("avx")
  KILN_FEATURE("avx2")
  KILN_FEATURE("sse4a")
  KILN_FEATURE("fma4")
  KILN_FEATURE("xop")
  KILN_FEATURE("fma")
  KILN_FEATURE("avx512f")
  KILN_FEATURE("bmi")
  KILN_FEATURE("bmi2")
  KILN_FEATURE("aes")
  KILN_FEATURE("pclmul")
  KILN_FEATURE("avx512vl")
  KILN_FEATURE("avx512bw")
  KILN_FEATURE("avx512dq")
  KILN_FEATURE("avx512cd")
  KILN_FEATURE("avx512vbmi")
  KILN_FEATURE("avx512ifma")
  KILN_FEATURE("avx512vpopcntdq")
  KILN_FEATURE("avx512vbmi2")
  KILN_FEATURE("gfni")
  KILN_FEATURE("vpclmulqdq")
  KILN_FEATURE("avx512vnni")
  KILN_FEATURE("avx512bitalg")
  KILN_FEATURE("avx512bf16")
  KILN_FEATURE("avx512vp2intersect")
#undef KILN_FEATURE
#endif
  // The rest through the kernel's flag list: the same names up to '_', '.'
  // and '-' ("avx512fp16" is "avx512_fp16", "amx-tile" is "amx_tile").
  const std::set<std::string> &flags = cpuinfoFlags();
  if (const char *alias = cpuinfoAlias(f))
    return flags.count(alias) != 0;
  std::string want = squash(f);
  for (const std::string &flag : flags)
    if (squash(flag) == want)
      return true;
  // Flags the kernel does not report at all cannot be told apart from
  // absent ones; an unknown name is refused rather than guessed.
  known = false;
  return false;
}

kiln_status checkHost(const ArtifactHeader &h, std::string &error) {
  // A CUDA artifact's host code runs here like CPU code: its triple and
  // CPU features are checked the same way (the device is checked when a
  // session opens it).
  if (h.targetKind != "cpu" && h.targetKind != "cuda") {
    error = "unsupported target: kind \"" + h.targetKind +
            "\", this runtime runs \"cpu\" and \"cuda\" artifacts";
    return KILN_ERROR_UNSUPPORTED_TARGET;
  }
  std::string arch = h.triple.substr(0, h.triple.find('-'));
  std::string host = hostArch();
  bool sameArch = arch == host || (arch == "amd64" && host == "x86_64") ||
                  (arch == "arm64" && host == "aarch64");
  if (!sameArch) {
    error = "unsupported target: the artifact is for " +
            (arch.empty() ? std::string("an unnamed architecture") : arch) +
            " (triple \"" + h.triple + "\"), this host is " + host;
    return KILN_ERROR_UNSUPPORTED_TARGET;
  }
  if (h.triple.find('-') != std::string::npos &&
      h.triple.find("linux") == std::string::npos) {
    error = "unsupported target: triple \"" + h.triple +
            "\" is not a Linux target";
    return KILN_ERROR_UNSUPPORTED_TARGET;
  }
  std::string missing, unknown;
  for (const std::string &f : h.features) {
    if (f.empty() || f[0] == '-')
      continue; // a disabled feature needs nothing
    bool known;
    bool has = hostHasCpuFeature(f, known);
    if (!known)
      unknown += (unknown.empty() ? "" : ", ") + f;
    else if (!has)
      missing += (missing.empty() ? "" : ", ") + f;
  }
  if (!missing.empty()) {
    error = "unsupported target: the code needs CPU features this host "
            "lacks: " + missing + " (compiled for cpu \"" + h.cpu + "\")";
    return KILN_ERROR_UNSUPPORTED_TARGET;
  }
  if (!unknown.empty()) {
    error = "unsupported target: cannot check CPU features (unknown to this "
            "runtime or not reported by this host): " + unknown;
    return KILN_ERROR_UNSUPPORTED_TARGET;
  }
  return KILN_OK;
}

} // namespace kiln
