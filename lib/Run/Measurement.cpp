//===- Measurement.cpp - kiln-run's measurement of one artifact -----------===//
//
// The body of kiln-run (tools/kiln-run), moved here whole so that the
// command line is a thin main and other front ends can measure the same way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Run/Measurement.h"

#include "kiln/Json.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sys/stat.h>

using namespace kiln;
using namespace kiln::run;

namespace {

bool failWith(std::string &error, const std::string &message) {
  error = message;
  return false;
}

bool fileExists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool readTensorFile(const std::string &path, HostTensor &t,
                    std::string &error) {
  size_t dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  if (ext == ".npy")
    return readNpy(path, t, error);
  return readTensorProto(path, t, error);
}

// DIR/stem_N.pb or DIR/stem_N.npy, or "" when neither exists.
std::string findIndexed(const std::string &dir, const char *stem, size_t i) {
  std::string base = dir + "/" + stem + "_" + std::to_string(i);
  if (fileExists(base + ".pb"))
    return base + ".pb";
  if (fileExists(base + ".npy"))
    return base + ".npy";
  return "";
}

std::string num(double v) { return json::number(v); }

std::string dimsJson(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string hexHash(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)h);
  return buf;
}


std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The index of the symbol naming input `i`'s dim `axis`, or -1 (static).
int symbolIndex(const kiln_model *m, const std::vector<std::string> &symbols,
                size_t i, int32_t axis) {
  const char *name = kiln_model_input_dim_name(m, i, axis);
  for (size_t k = 0; name && k < symbols.size(); ++k)
    if (symbols[k] == name)
      return int(k);
  return -1;
}

struct Model {
  kiln_model *m = nullptr;
  kiln_session *s = nullptr;
  ~Model() {
    kiln_session_free(s);
    kiln_model_free(m);
  }
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

bool isFloatDtype(int32_t d) {
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT16 ||
         d == KILN_DTYPE_BFLOAT16 || d == KILN_DTYPE_FLOAT64;
}

// A float tensor converted to another float dtype (round to nearest even),
// for a reference model at another precision than the one measured.
HostTensor convertFloat(const HostTensor &t, int32_t dtype) {
  HostTensor r;
  r.name = t.name;
  r.dtype = dtype;
  r.dims = t.dims;
  r.allocate();
  uint64_t n = t.numElements();
  for (uint64_t i = 0; i < n; ++i) {
    double v = t.at(i);
    switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      static_cast<float *>(r.data())[i] = float(v);
      break;
    case KILN_DTYPE_FLOAT64:
      static_cast<double *>(r.data())[i] = v;
      break;
    case KILN_DTYPE_FLOAT16:
      static_cast<uint16_t *>(r.data())[i] = floatToHalf(float(v));
      break;
    default:
      static_cast<uint16_t *>(r.data())[i] = floatToBfloat16(float(v));
      break;
    }
  }
  return r;
}

// Runs `path` once on `inputs` (matched by name, float inputs converted to
// the model's dtype) and returns its outputs.
bool runReference(const std::string &path, int threads,
                  const std::vector<HostTensor> &inputs,
                  std::vector<HostTensor> &outputs, std::string &error) {
  Model ref;
  if (kiln_model_load(path.c_str(), &ref.m) != KILN_OK) {
    error = std::string("--reference: ") + kiln_last_error();
    return false;
  }
  size_t ni = kiln_model_num_inputs(ref.m), no = kiln_model_num_outputs(ref.m);
  std::vector<HostTensor> converted(ni);
  std::vector<kiln_tensor> in(ni), out(no, kiln_tensor{nullptr, 0, 0, nullptr});
  for (size_t i = 0; i < ni; ++i) {
    kiln_tensor_info info;
    kiln_model_input_info(ref.m, i, &info);
    const HostTensor *src = nullptr;
    for (const HostTensor &t : inputs)
      if (t.name == info.name)
        src = &t;
    if (!src) {
      error = path + ": the reference model's input '" + info.name +
              "' is not an input of the measured model";
      return false;
    }
    converted[i] = *src;
    if (src->dtype != info.dtype) {
      if (!isFloatDtype(src->dtype) || !isFloatDtype(info.dtype)) {
        error = path + ": input '" + info.name + "' is " +
                dtypeString(info.dtype) + " in the reference model and " +
                dtypeString(src->dtype) + " in the measured one";
        return false;
      }
      converted[i] = convertFloat(*src, info.dtype);
    }
    in[i] = {converted[i].data(), converted[i].dtype,
             int32_t(converted[i].dims.size()), converted[i].dims.data()};
  }
  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = threads;
  if (kiln_session_create(ref.m, &so, &ref.s) != KILN_OK ||
      kiln_session_run(ref.s, in.data(), ni, out.data(), no) != KILN_OK) {
    error = std::string("--reference: ") + kiln_last_error();
    return false;
  }
  outputs.assign(no, HostTensor());
  for (size_t i = 0; i < no; ++i) {
    kiln_tensor_info info;
    kiln_model_output_info(ref.m, i, &info);
    outputs[i] = copyOutput(out[i]);
    outputs[i].name = info.name;
    kiln_tensor_release(&out[i]);
  }
  return true;
}


void printInfoOf(FILE *out, const std::string &path, kiln_model *model) {
  json::Value root;
  std::string err;
  json::parse(kiln_model_metadata_json(model), root, err);
  auto str = [&](const json::Value *v) -> std::string {
    return v && v->isString() ? v->getString() : "";
  };
  std::fprintf(out, "artifact: %s\n", path.c_str());
  std::fprintf(out, "content hash: %s\n",
              hexHash(kiln_model_content_hash(model)).c_str());
  const json::Value *compiler = root.find("compiler");
  if (compiler)
    std::fprintf(out, "compiler: %s %s\n", str(compiler->find("name")).c_str(),
                str(compiler->find("version")).c_str());
  std::fprintf(out, "source: %s\n", str(root.find("source")).c_str());
  if (const json::Value *t = root.find("target")) {
    std::string features;
    if (const json::Value *f = t->find("features"))
      for (const json::Value &x : f->getArray())
        features += (features.empty() ? "" : ",") + str(&x);
    if (str(t->find("kind")) == "cuda")
      std::fprintf(out, "target: cuda %s (host code %s)\n",
                  str(t->find("chip")).c_str(),
                  str(t->find("triple")).c_str());
    else
      std::fprintf(out, "target: %s %s cpu=%s features=%s\n",
                  str(t->find("kind")).c_str(),
                  str(t->find("triple")).c_str(), str(t->find("cpu")).c_str(),
                  features.empty() ? "(none)" : features.c_str());
  }
  if (const json::Value *o = root.find("options")) {
    std::string opts;
    for (const auto &kv : o->getObject()) {
      std::string v;
      if (kv.second.isString())
        v = kv.second.getString();
      else if (kv.second.isInteger())
        v = std::to_string(kv.second.getInteger());
      else if (kv.second.isBool())
        v = kv.second.getBool() ? "true" : "false";
      else if (kv.second.isNumber())
        v = num(kv.second.getNumber());
      else
        v = "...";
      opts += (opts.empty() ? "" : " ") + kv.first + "=" + v;
    }
    std::fprintf(out, "options: %s\n", opts.c_str());
  }
  std::fprintf(out, "pipeline: %s\n", str(root.find("pipeline")).c_str());
  int64_t tpRanks = 1, tpRank = 0;
  kiln_model_tensor_parallel(model, &tpRanks, &tpRank);
  if (tpRanks > 1) {
    // How kiln-compile chose the split (older artifacts do not say).
    std::string plan;
    if (const json::Value *o = root.find("options"))
      if (const json::Value *p = o->find("tensor_parallel_plan");
          p && p->isString())
        plan = "; split: " + p->getString();
    std::fprintf(out,
                 "tensor parallel: rank %lld of %lld (runs only as that rank "
                 "of `mpirun -n %lld`)%s\n",
                 (long long)tpRank, (long long)tpRanks, (long long)tpRanks,
                 plan.c_str());
  }
  std::vector<std::string> symbols = modelSymbols(model);
  if (!symbols.empty())
    std::fprintf(out, "symbols: %s\n", joined(symbols).c_str());
  for (bool outputs : {false, true}) {
    size_t n = outputs ? kiln_model_num_outputs(model)
                       : kiln_model_num_inputs(model);
    std::fprintf(out, "%s: %zu\n", outputs ? "outputs" : "inputs", n);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info;
      if (outputs)
        kiln_model_output_info(model, i, &info);
      else
        kiln_model_input_info(model, i, &info);
      std::fprintf(out, "  %zu %s %s %s\n", i, info.name,
                  dtypeString(info.dtype).c_str(),
                  modelShapeString(model, outputs, i).c_str());
    }
  }
  uint64_t weightBytes = 0;
  if (const json::Value *w = root.find("weights"))
    for (const json::Value &x : w->getArray())
      if (const json::Value *s = x.find("size"))
        weightBytes += uint64_t(s->getInteger());
  std::fprintf(out, "weights: %zu (%llu bytes)\n", kiln_model_num_weights(model),
              (unsigned long long)weightBytes);
  // One line per weight: its stored dtype shows what the artifact holds
  // (int8 weights of kiln-fuse-qdq stay int8).
  if (const json::Value *w = root.find("weights")) {
    size_t i = 0;
    for (const json::Value &x : w->getArray()) {
      std::vector<int64_t> shape;
      if (const json::Value *dims = x.find("shape"))
        for (const json::Value &d : dims->getArray())
          shape.push_back(d.getInteger());
      const json::Value *size = x.find("size");
      std::fprintf(out, "  %zu %s %s %s (%llu bytes)\n", i++,
                  str(x.find("name")).c_str(), str(x.find("dtype")).c_str(),
                  shapeString(shape).c_str(),
                  (unsigned long long)(size ? size->getInteger() : 0));
    }
  }
}


} // namespace

HostTensor kiln::run::copyOutput(const kiln_tensor &tensor) {
  HostTensor t;
  t.dtype = tensor.dtype;
  t.dims.assign(tensor.dims, tensor.dims + tensor.rank);
  t.allocate();
  if (t.numBytes())
    std::memcpy(t.data(), tensor.data, t.numBytes());
  return t;
}

std::vector<std::string> kiln::run::modelSymbols(const kiln_model *model) {
  std::vector<std::string> symbols;
  json::Value root;
  std::string err;
  if (!model || !json::parse(kiln_model_metadata_json(model), root, err))
    return symbols;
  if (const json::Value *list = root.find("symbols"))
    for (const json::Value &v : list->getArray())
      if (v.isString())
        symbols.push_back(v.getString());
  return symbols;
}

std::string kiln::run::modelShapeString(const kiln_model *model, bool output,
                                        size_t index) {
  kiln_tensor_info info;
  if ((output ? kiln_model_output_info(model, index, &info)
              : kiln_model_input_info(model, index, &info)) != KILN_OK)
    return "?";
  std::string s = "[";
  for (int32_t axis = 0; axis < info.rank; ++axis) {
    const char *name = output ? kiln_model_output_dim_name(model, index, axis)
                              : kiln_model_input_dim_name(model, index, axis);
    s += (axis ? ", " : "") +
         (name ? std::string(name) : std::to_string(info.dims[axis]));
  }
  return s + "]";
}

bool kiln::run::parseCountOption(const std::string &flag, const char *text,
                                 long long min, long long max, long long &out,
                                 std::string &error) {
  char *end;
  errno = 0;
  out = std::strtoll(text, &end, 10);
  if (*text && *end == '\0' && errno == 0 && out >= min && out <= max)
    return true;
  std::string want = max != LLONG_MAX ? std::to_string(min) + ".." +
                                            std::to_string(max)
                     : min == 0 ? "a non-negative integer"
                     : min == 1 ? "a positive integer"
                                : "an integer >= " + std::to_string(min);
  return failWith(error, flag + " wants " + want + ", got '" + text + "'");
}

bool kiln::run::parseRealOption(const std::string &flag, const char *text,
                                bool positive, double &out,
                                std::string &error) {
  char *end;
  out = std::strtod(text, &end);
  if (*text && *end == '\0' && (positive ? out > 0 : out >= 0))
    return true;
  return failWith(error, flag + " wants a " +
                             (positive ? "number > 0" : "non-negative number") +
                             ", got '" + text + "'");
}

bool kiln::run::parseDimsOption(
    const std::string &text, std::vector<std::pair<std::string, int64_t>> &dims,
    std::string &error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq), value;
    if (eq != std::string::npos)
      value = item.substr(eq + 1);
    char *end = nullptr;
    errno = 0;
    long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    if (eq == std::string::npos || name.empty() || value.empty() || *end ||
        errno || v < 0)
      return failWith(error, "--dims wants name=N[,name=N...] with N >= 0, "
                             "got '" + text + "'");
    for (const auto &kv : dims)
      if (kv.first == name)
        return failWith(error, "--dims: '" + name + "' given twice");
    dims.emplace_back(name, int64_t(v));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return true;
}

bool kiln::run::saveOutputs(const std::string &dir, const RunResult &r,
                            std::string &error) {
  mkdir(dir.c_str(), 0777);
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (!writeNpy(dir + "/output_" + std::to_string(i) + ".npy", r.outputs[i],
                  error))
      return false;
  return true;
}

bool kiln::run::writeResultJson(const std::string &path, const RunOptions &o,
                                const RunResult &r, std::string &error) {
  std::ofstream f(path, std::ios::trunc);
  f << resultJson(o, r);
  if (!f)
    return failWith(error, path + ": cannot write");
  return true;
}

void kiln::run::printDevices(FILE *out) {
  const char *text = nullptr;
  std::fprintf(out, "cpu\n");
  if (kiln_list_cuda_devices(&text) == KILN_OK)
    std::fputs(text, out);
  else
    std::fprintf(out, "%s\n", kiln_last_error());
}

bool kiln::run::printArtifactInfo(FILE *out, const std::string &path,
                                  std::string &error) {
  kiln_model *model = nullptr;
  if (kiln_model_load(path.c_str(), &model) != KILN_OK)
    return failWith(error, kiln_last_error());
  printInfoOf(out, path, model);
  kiln_model_free(model);
  return true;
}

bool kiln::run::measure(const RunOptions &o, RunResult &r, std::string &error) {
  r = RunResult();
  Model model;
  auto tLoad = std::chrono::steady_clock::now();
  if (kiln_model_load(o.model.c_str(), &model.m) != KILN_OK)
    return failWith(error, kiln_last_error());
  r.loadMs = msSince(tLoad);
  r.contentHash = kiln_model_content_hash(model.m);

  // Inputs, in the model's order.
  size_t numInputs = kiln_model_num_inputs(model.m);
  size_t numOutputs = kiln_model_num_outputs(model.m);
  std::vector<kiln_tensor_info> inInfo(numInputs), outInfo(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    kiln_model_input_info(model.m, i, &inInfo[i]);
  for (size_t i = 0; i < numOutputs; ++i)
    kiln_model_output_info(model.m, i, &outInfo[i]);
  std::map<std::string, std::string> byName(o.inputFiles.begin(),
                                            o.inputFiles.end());
  for (const auto &kv : byName) {
    bool found = false;
    for (const auto &info : inInfo)
      found |= kv.first == info.name;
    if (!found)
      return failWith(error, "--input " + kv.first + ": the model has no input named '" +
                  kv.first + "'");
  }
  bool &useSeed = r.useSeed;
  useSeed = o.inputsDir.empty() && (o.haveSeed || o.inputFiles.empty());
  std::string &source = r.source;
  if (!o.inputsDir.empty())
    source = "dir";
  else if (!o.inputFiles.empty())
    source = useSeed ? "files+seed" : "files";
  else
    source = "seed";

  // Symbolic dims: --dims names the model's symbols; inputs from files
  // bind them (the first input naming each), --dims must agree and sets the
  // rest, and what is left is 1.
  std::vector<std::string> symbols = modelSymbols(model.m);
  for (const auto &kv : o.dims)
    if (std::find(symbols.begin(), symbols.end(), kv.first) == symbols.end())
      return failWith(error, "--dims " + kv.first +
                                 ": the model has no symbol '" + kv.first +
                                 "' (" +
                                 (symbols.empty()
                                      ? std::string("its shapes are static")
                                      : "its symbols: " + joined(symbols)) +
                                 ")");
  std::vector<int64_t> values(symbols.size(), -1);
  std::vector<std::string> valueFrom(symbols.size());

  std::vector<HostTensor> &inputs = r.inputs;
  inputs.assign(numInputs, HostTensor());
  std::vector<bool> random(numInputs, false);
  std::string err;
  for (size_t i = 0; i < numInputs; ++i) {
    HostTensor &t = inputs[i];
    const kiln_tensor_info &info = inInfo[i];
    t.name = info.name;
    std::string file;
    if (!o.inputsDir.empty()) {
      file = findIndexed(o.inputsDir, "input", i);
      if (file.empty())
        return failWith(error, o.inputsDir + ": no input_" + std::to_string(i) +
                    ".pb or .npy for input " + std::to_string(i) + " '" +
                    info.name + "'");
    } else if (byName.count(info.name)) {
      file = byName[info.name];
    }
    if (file.empty()) {
      if (!useSeed)
        return failWith(error, "no file for input " + std::to_string(i) +
                                   " '" + info.name + "' (give --input " +
                                   info.name +
                                   "=FILE, or --seed N for random values)");
      random[i] = true;
      continue;
    }
    if (!readTensorFile(file, t, err))
      return failWith(error, err);
    t.name = info.name;
    if (t.dtype == KILN_DTYPE_UINT16 && info.dtype == KILN_DTYPE_BFLOAT16)
      t.dtype = KILN_DTYPE_BFLOAT16; // .npy has no bfloat16: its bits
    // The static dims must match; a symbolic one takes the file's size.
    bool fits = t.dtype == info.dtype && int32_t(t.dims.size()) == info.rank;
    for (int32_t axis = 0; fits && axis < info.rank; ++axis)
      fits = info.dims[axis] < 0 || t.dims[size_t(axis)] == info.dims[axis];
    if (!fits)
      return failWith(error, file + ": input " + std::to_string(i) + " '" +
                                 info.name + "' is " + dtypeString(t.dtype) +
                                 " " + shapeString(t.dims) +
                                 ", the model expects " +
                                 dtypeString(info.dtype) + " " +
                                 modelShapeString(model.m, false, i));
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      int k = symbolIndex(model.m, symbols, i, axis);
      if (k >= 0 && values[size_t(k)] < 0) {
        values[size_t(k)] = t.dims[size_t(axis)];
        valueFrom[size_t(k)] = file;
      }
    }
  }
  for (const auto &kv : o.dims) {
    size_t k = size_t(std::find(symbols.begin(), symbols.end(), kv.first) -
                      symbols.begin());
    if (values[k] >= 0 && values[k] != kv.second)
      return failWith(error, "--dims " + kv.first + "=" +
                                 std::to_string(kv.second) + ", but " +
                                 valueFrom[k] + " has " + kv.first + "=" +
                                 std::to_string(values[k]));
    values[k] = kv.second;
  }
  for (size_t k = 0; k < symbols.size(); ++k) {
    if (values[k] < 0) {
      values[k] = 1;
      r.defaultedSymbols.push_back(symbols[k]);
    }
    r.symbols.emplace_back(symbols[k], values[k]);
  }
  for (size_t i = 0; i < numInputs; ++i) {
    if (!random[i])
      continue;
    HostTensor &t = inputs[i];
    const kiln_tensor_info &info = inInfo[i];
    t.dtype = info.dtype;
    t.dims.assign(info.dims, info.dims + info.rank);
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      int k = symbolIndex(model.m, symbols, i, axis);
      if (k >= 0)
        t.dims[size_t(axis)] = values[size_t(k)];
    }
    fillRandom(t, o.seed, i);
  }

  // Expected outputs (optional): files, or a reference model's outputs.
  std::string expectedDir = !o.expectedDir.empty() ? o.expectedDir : o.inputsDir;
  std::vector<HostTensor> &expected = r.expected;
  expected.assign(numOutputs, HostTensor());
  std::vector<bool> &haveExpected = r.haveExpected;
  haveExpected.assign(numOutputs, false);
  if (!o.referenceModel.empty()) {
    std::vector<HostTensor> refOut;
    if (!runReference(o.referenceModel, o.threads, inputs, refOut, err))
      return failWith(error, err);
    for (size_t i = 0; i < numOutputs; ++i) {
      // By name, else by position when the reference names differ.
      for (const HostTensor &t : refOut)
        if (t.name == outInfo[i].name) {
          expected[i] = t;
          haveExpected[i] = true;
        }
      if (!haveExpected[i] && refOut.size() == numOutputs) {
        expected[i] = refOut[i];
        haveExpected[i] = true;
      }
    }
  } else if (!expectedDir.empty()) {
    for (size_t i = 0; i < numOutputs; ++i) {
      std::string file = findIndexed(expectedDir, "output", i);
      if (file.empty())
        continue;
      if (!readTensorFile(file, expected[i], err))
        return failWith(error, err);
      if (expected[i].dtype == KILN_DTYPE_UINT16 &&
          outInfo[i].dtype == KILN_DTYPE_BFLOAT16)
        expected[i].dtype = KILN_DTYPE_BFLOAT16;
      haveExpected[i] = true;
    }
    if (!o.expectedDir.empty() &&
        std::none_of(haveExpected.begin(), haveExpected.end(),
                     [](bool b) { return b; }) &&
        numOutputs)
      return failWith(error, o.expectedDir + ": no output_N.pb or output_N.npy files");
  }

  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = o.threads;
  so.device = o.device.empty() ? nullptr : o.device.c_str();
  so.cuda_graphs = o.cudaGraphs ? 1 : 0;
  auto tSession = std::chrono::steady_clock::now();
  if (kiln_session_create(model.m, &so, &model.s) != KILN_OK)
    return failWith(error, kiln_last_error());
  r.sessionMs = msSince(tSession);

  std::vector<kiln_tensor> in(numInputs), out(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    in[i] = {inputs[i].data(), inputs[i].dtype, int32_t(inputs[i].dims.size()),
             inputs[i].dims.data()};
  for (size_t i = 0; i < numOutputs; ++i)
    out[i] = {nullptr, 0, 0, nullptr}; // the runtime allocates them

  auto runOnce = [&](double &ms) {
    // The first run allocates the outputs; later runs write into them (as
    // caller-provided buffers).
    auto t0 = std::chrono::steady_clock::now();
    kiln_status s =
        kiln_session_run(model.s, in.data(), in.size(), out.data(), out.size());
    ms = msSince(t0);
    return s == KILN_OK;
  };
  struct Release {
    std::vector<kiln_tensor> &out;
    ~Release() {
      for (kiln_tensor &t : out)
        kiln_tensor_release(&t);
    }
  } release{out};

  if (!runOnce(r.coldMs))
    return failWith(error, kiln_last_error());
  // Keep the outputs of the cold run for checking and for the consistency
  // check of later runs.
  std::vector<HostTensor> &outputs = r.outputs;
  outputs.assign(numOutputs, HostTensor());
  for (size_t i = 0; i < numOutputs; ++i) {
    outputs[i] = copyOutput(out[i]); // this run's dims
    outputs[i].name = outInfo[i].name;
  }
  // Warmup, then the timed runs (--iterations N and/or --duration S).
  TimedRuns &timed = r.timed;
  if (!timeRuns(runOnce, o.warmup, o.iterations, o.duration,
                [&] {
                  if (o.beforeTimed && !o.beforeTimed(runOnce))
                    return false;
                  return !o.profile ||
                         kiln_session_set_profiling(model.s, 1) == KILN_OK;
                },
                timed))
    return failWith(error, kiln_last_error());
  // The profile is of the timed runs only, not the consistency runs.
  if (o.profile)
    kiln_session_set_profiling(model.s, 0);

  // Consistency: further runs must reproduce the first run's outputs bit
  // for bit (checked outside the timed runs, so timing is not disturbed).
  long &consistencyChecked = r.consistencyChecked;
  bool &bitIdentical = r.bitIdentical;
  std::vector<std::string> &inconsistent = r.inconsistent;
  for (long r = 0; r < o.consistencyRuns; ++r) {
    double ms;
    if (!runOnce(ms))
      return failWith(error, kiln_last_error());
    ++consistencyChecked;
    for (size_t i = 0; i < numOutputs; ++i)
      if (outputs[i].numBytes() &&
          std::memcmp(outputs[i].data(), out[i].data,
                      outputs[i].numBytes()) != 0) {
        bitIdentical = false;
        if (std::find(inconsistent.begin(), inconsistent.end(),
                      outputs[i].name) == inconsistent.end())
          inconsistent.push_back(outputs[i].name);
      }
  }
  kiln_session_get_stats(model.s, &r.stats);
  r.rssBytes = peakRssBytes();

  // Throughput: samples per run, from --batch or the first input's dim 0.
  long &batch = r.batch;
  std::string &batchFrom = r.batchFrom;
  batch = o.batch;
  batchFrom = "--batch";
  if (batch < 0) {
    batch = 1;
    batchFrom = "default";
    if (numInputs && !inputs[0].dims.empty() && inputs[0].dims[0] > 0) {
      batch = long(inputs[0].dims[0]);
      batchFrom = "input '" + inputs[0].name + "' dimension 0";
    }
  }


  // Comparisons and quality.
  r.device = kiln_session_device(model.s);
  r.onCuda = r.device.compare(0, 4, "cuda") == 0;
  r.cudaGraphs = kiln_session_cuda_graphs(model.s);
  r.threads = kiln_session_num_threads(model.s);
  bool sameDtype = o.referenceModel.empty();
  r.comparisons.assign(numOutputs, Comparison());
  r.quality.assign(numOutputs, Quality());
  for (size_t i = 0; i < numOutputs; ++i) {
    if (!haveExpected[i])
      continue;
    ++r.compared;
    Comparison &c = r.comparisons[i] =
        compare(outputs[i], expected[i], o.rtol, o.atol, sameDtype);
    r.allPass &= c.pass();
    if (c.dtypeMatches && c.shapeMatches)
      r.quality[i] = assessQuality(outputs[i], expected[i]);
  }
  r.timing = summarize(timed.milliseconds);
  if (o.profile) {
    kiln_session_set_profiling(model.s, 0);
    r.profile = collectProfile(model.m, model.s);
  }
  return true;
}

void kiln::run::printResult(FILE *out, const RunOptions &o,
                            const RunResult &r) {
  // Report.
  std::fprintf(out, "model: %s (%s)\n", o.model.c_str(),
              hexHash(r.contentHash).c_str());
  if (r.source == "dir")
    std::fprintf(out, "inputs: %s\n", o.inputsDir.c_str());
  else if (r.source == "seed")
    std::fprintf(out, "inputs: random, seed %llu\n", (unsigned long long)o.seed);
  else
    std::fprintf(out, "inputs: files%s\n",
                r.useSeed ? (", the rest random with seed " +
                           std::to_string(o.seed)).c_str()
                        : "");
  if (!r.symbols.empty()) {
    std::string values;
    for (const auto &kv : r.symbols)
      values += (values.empty() ? "" : ", ") + kv.first + "=" +
                std::to_string(kv.second);
    std::fprintf(out, "symbols: %s\n", values.c_str());
  }
  if (!r.defaultedSymbols.empty())
    std::fprintf(out, "note: no --dims value for %s: using 1 (give --dims "
                      "%s=N)\n",
                 joined(r.defaultedSymbols).c_str(),
                 r.defaultedSymbols[0].c_str());
  if (!o.referenceModel.empty())
    std::fprintf(out, "reference: %s\n", o.referenceModel.c_str());
  if (r.onCuda)
    std::fprintf(out, "device: %s, CUDA graphs %s\n", r.device.c_str(),
                r.cudaGraphs.c_str());
  else
    std::fprintf(out, "threads: %d\n", r.threads);

  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const HostTensor &t = r.outputs[i];
    std::string head = "output " + std::to_string(i) + " '" + t.name + "' " +
                       dtypeString(t.dtype) + " " + shapeString(t.dims);
    if (!r.haveExpected[i]) {
      std::fprintf(out, "%s: no expected output\n", head.c_str());
      continue;
    }
    const Comparison &c = r.comparisons[i];
    if (!c.dtypeMatches || !c.shapeMatches) {
      std::fprintf(out, "%s: expected %s %s: FAIL\n", head.c_str(),
                  dtypeString(r.expected[i].dtype).c_str(),
                  shapeString(r.expected[i].dims).c_str());
      continue;
    }
    const Quality &q = r.quality[i];
    std::fprintf(out, "%s: max abs error %.3g, max rel error %.3g, mismatches "
                "%llu/%llu: %s\n",
                head.c_str(), c.maxAbsError, c.maxRelError,
                (unsigned long long)c.mismatches,
                (unsigned long long)c.count, c.pass() ? "PASS" : "FAIL");
    std::fprintf(out, "  quality: cosine similarity %.6f", q.cosineSimilarity);
    if (q.top1Rows)
      std::fprintf(out, ", top-1 agreement %.4f (%llu/%llu rows)",
                  q.top1Agreement(), (unsigned long long)q.top1Agree,
                  (unsigned long long)q.top1Rows);
    std::fprintf(out, "\n");
  }

  std::fprintf(out, "cold: load %.3f ms, session %.3f ms, first run %.3f ms\n",
              r.loadMs, r.sessionMs, r.coldMs);
  if (!r.timed.milliseconds.empty()) {
    std::fprintf(out, "time: %zu runs after %ld warmup (%.3f s): min %.3f, median "
                "%.3f, mean %.3f, p90 %.3f, p99 %.3f, max %.3f, stddev %.3f "
                "ms\n",
                r.timed.milliseconds.size(), o.warmup, r.timed.elapsedMs / 1e3, r.timing.min, r.timing.median,
                r.timing.mean, r.timing.p90, r.timing.p99, r.timing.max, r.timing.stddev);
    std::fprintf(out, "throughput: %.2f samples/s (batch %ld from %s), %.2f "
                "runs/s\n",
                double(r.batch) * 1e3 / r.timing.median, r.batch, r.batchFrom.c_str(),
                1e3 / r.timing.median);
  } else {
    std::fprintf(out, "time: no timed runs (give --iterations N or --duration S)\n");
  }
  std::string deviceMemory =
      r.onCuda ? "peak " + std::to_string(r.stats.device_peak_bytes) +
                   " bytes (weights, inputs and outputs included; "
                   "intermediates peak " +
                   std::to_string(r.stats.device_pool_peak_bytes) + " bytes)"
             : std::string("none (CPU)");
  std::fprintf(out, "memory: peak %llu bytes (session), %llu bytes (process "
              "allocator), peak RSS %llu bytes; device: %s\n",
              (unsigned long long)r.stats.peak_bytes,
              (unsigned long long)r.stats.process_peak_bytes,
              (unsigned long long)r.rssBytes, deviceMemory.c_str());
  if (!r.timed.energyAvailable)
    std::fprintf(out, "energy: unavailable (%s)\n", r.timed.energyReason.c_str());
  else if (r.timed.milliseconds.empty())
    std::fprintf(out, "energy: no timed runs\n");
  else
    std::fprintf(out, "energy: %.4f J per run, %.2f W average (RAPL, whole CPU "
                "package, other processes included)\n",
                r.timed.joules / double(r.timed.milliseconds.size()), r.timed.joules / (r.timed.elapsedMs / 1e3));
  if (r.consistencyChecked)
    std::fprintf(out, "consistency: %s over %ld more runs\n",
                r.bitIdentical ? "bit-identical"
                             : ("NOT bit-identical (outputs " +
                                [&] {
                                  std::string s;
                                  for (const std::string &n : r.inconsistent)
                                    s += (s.empty() ? "'" : ", '") + n + "'";
                                  return s;
                                }() +
                                ")")
                                   .c_str(),
                r.consistencyChecked);
  if (r.compared)
    std::fprintf(out, "result: %s\n", r.allPass ? "PASS" : "FAIL");
  else
    std::fprintf(out, "result: no expected outputs, nothing compared\n");

}

std::string kiln::run::resultJson(const RunOptions &o, const RunResult &r) {
  std::string j = "{\n  \"schema\": \"kiln.run-result\",\n  \"version\": 2,\n";
  j += "  \"model\": " + json::quote(o.model) + ",\n";
  j += "  \"content_hash\": " +
       json::quote(hexHash(r.contentHash)) + ",\n";
  j += std::string("  \"device\": ") + (r.onCuda ? "\"cuda\"" : "\"cpu\"") +
       ",\n";
  if (r.onCuda)
    j += "  \"device_name\": " + json::quote(r.device) +
         ",\n  \"cuda_graphs\": " + json::quote(r.cudaGraphs) + ",\n";
  j += "  \"inputs\": {\"source\": " + json::quote(r.source);
  if (r.source == "dir")
    j += ", \"dir\": " + json::quote(o.inputsDir);
  if (r.useSeed)
    j += ", \"seed\": " + std::to_string(o.seed);
  if (!r.symbols.empty()) {
    j += ", \"symbols\": {";
    for (size_t k = 0; k < r.symbols.size(); ++k)
      j += (k ? ", " : "") + json::quote(r.symbols[k].first) + ": " +
           std::to_string(r.symbols[k].second);
    j += "}";
  }
  if (!o.inputFiles.empty()) {
    j += ", \"files\": {";
    for (size_t k = 0; k < o.inputFiles.size(); ++k)
      j += (k ? ", " : "") + json::quote(o.inputFiles[k].first) + ": " +
           json::quote(o.inputFiles[k].second);
    j += "}";
  }
  j += "},\n";
  j += "  \"reference\": " +
       (o.referenceModel.empty() ? std::string("null")
                                 : json::quote(o.referenceModel)) +
       ",\n";
  j += "  \"threads\": " +
       std::to_string(r.threads) + ",\n";
  j += "  \"tolerance\": {\"rtol\": " + num(o.rtol) +
       ", \"atol\": " + num(o.atol) + "},\n";
  j += "  \"outputs\": [";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const Comparison &c = r.comparisons[i];
    const Quality &q = r.quality[i];
    j += std::string(i ? "," : "") + "\n    {\"name\": " +
         json::quote(r.outputs[i].name) + ", \"dtype\": " +
         json::quote(dtypeString(r.outputs[i].dtype)) +
         ", \"shape\": " + dimsJson(r.outputs[i].dims) +
         ", \"compared\": " + (r.haveExpected[i] ? "true" : "false");
    if (r.haveExpected[i]) {
      j += ", \"max_abs_error\": " + num(c.maxAbsError) +
           ", \"max_rel_error\": " + num(c.maxRelError) +
           ", \"mismatches\": " + std::to_string(c.mismatches) +
           ", \"elements\": " + std::to_string(c.count) +
           ", \"shape_matches\": " + (c.shapeMatches ? "true" : "false") +
           ", \"dtype_matches\": " + (c.dtypeMatches ? "true" : "false") +
           ", \"pass\": " + (c.pass() ? "true" : "false");
      if (q.comparable) {
        j += ", \"cosine_similarity\": " + num(q.cosineSimilarity) +
             ", \"non_finite\": " + std::to_string(q.nonFinite);
        if (q.top1Rows)
          j += ", \"top1_agreement\": " + num(q.top1Agreement()) +
               ", \"top1_rows\": " + std::to_string(q.top1Rows);
      }
    }
    j += "}";
  }
  j += !r.outputs.empty() ? "\n  ],\n" : "],\n";
  j += std::string("  \"pass\": ") +
       (r.compared ? (r.allPass ? "true" : "false") : "null") + ",\n";
  j += "  \"timing\": {\"load_ms\": " + num(r.loadMs) +
       ", \"session_ms\": " + num(r.sessionMs) + ", \"cold_ms\": " +
       num(r.coldMs) + ", \"warmup\": " + std::to_string(o.warmup) +
       ", \"iterations\": " + std::to_string(r.timed.milliseconds.size()) +
       ", \"duration_s\": " + (o.duration > 0 ? num(o.duration) : "null") +
       ", \"elapsed_s\": " + num(r.timed.elapsedMs / 1e3);
  if (!r.timed.milliseconds.empty()) {
    j += ", \"min_ms\": " + num(r.timing.min) + ", \"median_ms\": " +
         num(r.timing.median) + ", \"mean_ms\": " + num(r.timing.mean) +
         ", \"p90_ms\": " + num(r.timing.p90) + ", \"p99_ms\": " + num(r.timing.p99) +
         ", \"max_ms\": " + num(r.timing.max) + ", \"stddev_ms\": " +
         num(r.timing.stddev) + ",\n             \"samples_ms\": [";
    for (size_t k = 0; k < r.timed.milliseconds.size(); ++k)
      j += (k ? ", " : "") + num(r.timed.milliseconds[k]);
    j += "]";
  }
  j += "},\n";
  j += "  \"throughput\": {\"batch\": " + std::to_string(r.batch) +
       ", \"batch_from\": " + json::quote(r.batchFrom);
  if (!r.timed.milliseconds.empty())
    j += ", \"samples_per_s\": " + num(double(r.batch) * 1e3 / r.timing.median) +
         ", \"runs_per_s\": " + num(1e3 / r.timing.median);
  j += "},\n";
  j += "  \"memory\": {\"session_peak_bytes\": " +
       std::to_string(r.stats.peak_bytes) +
       ", \"process_peak_bytes\": " +
       std::to_string(r.stats.process_peak_bytes) +
       ", \"peak_rss_bytes\": " + std::to_string(r.rssBytes) +
       ", \"device_pool_peak_bytes\": " +
       (r.onCuda ? std::to_string(r.stats.device_pool_peak_bytes) : "null") +
       ", \"device_peak_bytes\": " +
       (r.onCuda ? std::to_string(r.stats.device_peak_bytes) : "null") +
       "},\n";
  j += "  \"energy\": {\"available\": ";
  if (r.timed.energyAvailable && !r.timed.milliseconds.empty()) {
    j += "true, \"source\": \"rapl\", \"domains\": [";
    const std::vector<std::string> &names = r.timed.energyDomains;
    for (size_t k = 0; k < names.size(); ++k)
      j += (k ? ", " : "") + json::quote(names[k]);
    j += "], \"joules\": " + num(r.timed.joules) + ", \"joules_per_run\": " +
         num(r.timed.joules / double(r.timed.milliseconds.size())) + ", \"average_watts\": " +
         num(r.timed.joules / (r.timed.elapsedMs / 1e3));
  } else {
    j += "false, \"reason\": " +
         json::quote(r.timed.energyAvailable ? "no timed runs"
                                           : r.timed.energyReason);
  }
  j += "},\n";
  j += "  \"consistency\": {\"runs\": " + std::to_string(r.consistencyChecked) +
       ", \"bit_identical\": " +
       (r.consistencyChecked ? (r.bitIdentical ? "true" : "false") : "null") +
       "},\n";
  if (o.profile)
    j += "  \"profile\": " + profileJson(r.profile) + ",\n";
  j += "  \"stats\": {\"runs\": " + std::to_string(r.stats.num_runs) +
       ", \"peak_bytes\": " + std::to_string(r.stats.peak_bytes) +
       ", \"process_peak_bytes\": " +
       std::to_string(r.stats.process_peak_bytes) + "}\n}\n";
  return j;
}
