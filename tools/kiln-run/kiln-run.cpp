//===- kiln-run.cpp - Runs a model artifact and checks its outputs --------===//
//
// kiln-run model.kiln [--inputs DIR | --input NAME=FILE ... | --seed N]
//                     [--expected DIR] [--rtol R] [--atol A] [--threads N]
//                     [--warmup N] [--iterations N | --duration S]
//                     [--reference OTHER.kiln] [--save-outputs DIR]
//                     [--profile] [--trace FILE] [--json FILE] [--info]
//                     [--device cpu|cuda[:N]] [--no-cuda-graphs]
// kiln-run --list-devices
//
// Exit status: 0 every compared output passed (or nothing to compare, unless
// --require-expected), 1 an output mismatched, 2 an error (usage, files,
// load, run). docs/kiln-run.md
// has the details (random generator, tolerance rule, JSON schema).
//
//===----------------------------------------------------------------------===//
#include "kiln/Run/Measure.h"
#include "kiln/Run/Profile.h"
#include "kiln/Run/TensorIO.h"

#include "kiln/Json.h"
#include "kiln/runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace kiln;
using namespace kiln::run;

namespace {

const char *kUsage = R"(usage: kiln-run MODEL.kiln [options]

Runs a Kiln model artifact on the CPU or a CUDA GPU and compares its
outputs.

Inputs (in the model's input order; default: --seed 0):
  --inputs DIR         an ONNX test data folder: input_0.pb, input_1.pb, ...
                       (TensorProto) or input_N.npy; expected outputs are
                       read from output_N.pb / output_N.npy there too
  --input NAME=FILE    one input from a .npy or .pb file (repeatable); with
                       --seed, the inputs not given are random
  --seed N             random inputs: input k gets a splitmix64 stream
                       seeded with N + k; floats uniform in [-1, 1),
                       integers uniform in [0, 10), bools 0/1
Checking:
  --expected DIR       expected outputs output_N.pb / output_N.npy
  --reference M.kiln   expected outputs from another artifact (e.g. the
                       same model at fp32) run on the same inputs
  --require-expected   every output must have an expected value: an output
                       with none (or nothing to compare) is an error,
                       exit status 2 (test runners)
  --rtol R --atol A    pass when |actual - expected| <= A + R * |expected|
                       (default 1e-3 and 1e-7; NaN matches NaN, infinities
                       must match exactly)
                       Quality (max abs/rel error, cosine similarity, top-1
                       agreement along the last axis) is printed as well.
Running:
  --device D           cpu, cuda or cuda:N (default: the artifact's target);
                       without a CUDA device: "no CUDA device: <reason>",
                       exit status 2
  --no-cuda-graphs     CUDA: launch every kernel each run instead of
                       capturing the first run into a CUDA graph and
                       replaying it
  --list-devices       print this machine's CUDA devices (or why there are
                       none) and exit
  --threads N          threads of the model's parallel loops (0: all cores)
  --warmup N           untimed runs after the first (cold) run (default 0)
  --iterations N       timed runs after the warmup (default 0)
  --duration S         timed runs until S seconds have passed (at least
                       --iterations runs when both are given)
  --batch N            samples per run for the throughput figure (default:
                       dimension 0 of the first input, 1 for a scalar)
  --consistency-runs N extra runs whose outputs must be bit-identical to
                       the first run's (default 3; 0: no check)
  --profile            time every kernel of the timed runs (at least one)
                       and print per-kernel and per-category tables
  --trace FILE         write those runs' kernel timeline as a Chrome trace
                       (JSON for Perfetto / chrome://tracing); implies
                       --profile
Output:
  --save-outputs DIR   write output_N.npy into DIR (usable as --expected)
  --json FILE          machine-readable results (schema kiln.run-result v2:
                       docs/schemas/kiln.run-result.v2.schema.json)
  --info               print the artifact's metadata and exit
  --help               this text

Exit status: 0 pass (or nothing compared, without --require-expected),
1 an output mismatched, 2 error.
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  return 2;
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

std::string num(double v) {
  if (std::isnan(v) || std::isinf(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

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

void printInfo(const std::string &path, kiln_model *model) {
  json::Value root;
  std::string err;
  json::parse(kiln_model_metadata_json(model), root, err);
  auto str = [&](const json::Value *v) -> std::string {
    return v && v->isString() ? v->getString() : "";
  };
  std::printf("artifact: %s\n", path.c_str());
  std::printf("content hash: %s\n",
              hexHash(kiln_model_content_hash(model)).c_str());
  const json::Value *compiler = root.find("compiler");
  if (compiler)
    std::printf("compiler: %s %s\n", str(compiler->find("name")).c_str(),
                str(compiler->find("version")).c_str());
  std::printf("source: %s\n", str(root.find("source")).c_str());
  if (const json::Value *t = root.find("target")) {
    std::string features;
    if (const json::Value *f = t->find("features"))
      for (const json::Value &x : f->getArray())
        features += (features.empty() ? "" : ",") + str(&x);
    if (str(t->find("kind")) == "cuda")
      std::printf("target: cuda %s (host code %s)\n",
                  str(t->find("chip")).c_str(),
                  str(t->find("triple")).c_str());
    else
      std::printf("target: %s %s cpu=%s features=%s\n",
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
    std::printf("options: %s\n", opts.c_str());
  }
  std::printf("pipeline: %s\n", str(root.find("pipeline")).c_str());
  for (bool outputs : {false, true}) {
    size_t n = outputs ? kiln_model_num_outputs(model)
                       : kiln_model_num_inputs(model);
    std::printf("%s: %zu\n", outputs ? "outputs" : "inputs", n);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info;
      if (outputs)
        kiln_model_output_info(model, i, &info);
      else
        kiln_model_input_info(model, i, &info);
      std::printf("  %zu %s %s %s\n", i, info.name,
                  dtypeString(info.dtype).c_str(),
                  shapeString(std::vector<int64_t>(info.dims,
                                                   info.dims + info.rank))
                      .c_str());
    }
  }
  uint64_t weightBytes = 0;
  if (const json::Value *w = root.find("weights"))
    for (const json::Value &x : w->getArray())
      if (const json::Value *s = x.find("size"))
        weightBytes += uint64_t(s->getInteger());
  std::printf("weights: %zu (%llu bytes)\n", kiln_model_num_weights(model),
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
      std::printf("  %zu %s %s %s (%llu bytes)\n", i++,
                  str(x.find("name")).c_str(), str(x.find("dtype")).c_str(),
                  shapeString(shape).c_str(),
                  (unsigned long long)(size ? size->getInteger() : 0));
    }
  }
}

struct Options {
  std::string model;
  std::string inputsDir, expectedDir, saveDir, jsonPath;
  std::vector<std::pair<std::string, std::string>> inputFiles;
  bool haveSeed = false;
  uint64_t seed = 0;
  double rtol = 1e-3, atol = 1e-7;
  int threads = 0;
  long warmup = 0, iterations = 0;
  double duration = 0;
  long batch = -1;
  long consistencyRuns = 3;
  std::string referenceModel;
  bool info = false;
  bool profile = false;
  std::string tracePath;
  std::string device; // "": the artifact's target
  bool cudaGraphs = true;
  bool listDevices = false;
  bool requireExpected = false;
};

bool parseNumber(const char *text, double &out) {
  char *end;
  out = std::strtod(text, &end);
  return *text && *end == '\0';
}

bool parseInt(const char *text, long long &out, long long min) {
  char *end;
  errno = 0;
  out = std::strtoll(text, &end, 10);
  return *text && *end == '\0' && errno == 0 && out >= min;
}

// Returns -1 to go on, else an exit status.
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *&out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *v = nullptr;
    long long n;
    double d;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--info") {
      o.info = true;
    } else if (a == "--device" && value(v)) {
      o.device = v;
    } else if (a == "--no-cuda-graphs") {
      o.cudaGraphs = false;
    } else if (a == "--list-devices") {
      o.listDevices = true;
    } else if (a == "--inputs" && value(v)) {
      o.inputsDir = v;
    } else if (a == "--expected" && value(v)) {
      o.expectedDir = v;
    } else if (a == "--reference" && value(v)) {
      o.referenceModel = v;
    } else if (a == "--duration" && value(v)) {
      if (!parseNumber(v, d) || d <= 0)
        return fail(std::string("--duration wants seconds > 0, got '") + v +
                    "'");
      o.duration = d;
    } else if (a == "--batch" && value(v)) {
      if (!parseInt(v, n, 1))
        return fail(std::string("--batch wants a positive integer, got '") +
                    v + "'");
      o.batch = long(n);
    } else if (a == "--consistency-runs" && value(v)) {
      if (!parseInt(v, n, 0))
        return fail(std::string("--consistency-runs wants a non-negative "
                                "integer, got '") +
                    v + "'");
      o.consistencyRuns = long(n);
    } else if (a == "--save-outputs" && value(v)) {
      o.saveDir = v;
    } else if (a == "--json" && value(v)) {
      o.jsonPath = v;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--require-expected") {
      o.requireExpected = true;
    } else if (a == "--trace" && value(v)) {
      o.tracePath = v;
      o.profile = true;
    } else if (a == "--input" && value(v)) {
      std::string s = v;
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("--input wants NAME=FILE, got '" + s + "'");
      o.inputFiles.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    } else if (a == "--seed" && value(v)) {
      if (!parseInt(v, n, 0))
        return fail(std::string("--seed wants a non-negative integer, got '") +
                    v + "'");
      o.haveSeed = true;
      o.seed = uint64_t(n);
    } else if ((a == "--rtol" || a == "--atol") && value(v)) {
      if (!parseNumber(v, d) || d < 0)
        return fail(a + " wants a non-negative number, got '" + v + "'");
      (a == "--rtol" ? o.rtol : o.atol) = d;
    } else if (a == "--threads" && value(v)) {
      if (!parseInt(v, n, 0) || n > 4096)
        return fail(std::string("--threads wants 0..4096, got '") + v + "'");
      o.threads = int(n);
    } else if ((a == "--warmup" || a == "--iterations") && value(v)) {
      if (!parseInt(v, n, 0))
        return fail(a + " wants a non-negative integer, got '" + v + "'");
      (a == "--warmup" ? o.warmup : o.iterations) = long(n);
    } else if (!a.empty() && a[0] == '-') {
      std::fputs(kUsage, stderr);
      return fail("unknown or incomplete option '" + a + "'");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      return fail("more than one model given ('" + o.model + "', '" + a +
                  "')");
    }
  }
  if (o.listDevices)
    return -1; // needs no model
  if (o.model.empty()) {
    std::fputs(kUsage, stderr);
    return fail("no model given");
  }
  if (!o.inputsDir.empty() && (!o.inputFiles.empty() || o.haveSeed))
    return fail("--inputs cannot be combined with --input or --seed");
  if (!o.expectedDir.empty() && !o.referenceModel.empty())
    return fail("--expected cannot be combined with --reference");
  if (o.profile && o.iterations == 0)
    o.iterations = 1; // the profile is of the timed runs
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
    HostTensor &t = outputs[i];
    t.name = info.name;
    t.dtype = out[i].dtype;
    t.dims.assign(out[i].dims, out[i].dims + out[i].rank);
    t.allocate();
    if (t.numBytes())
      std::memcpy(t.data(), out[i].data, t.numBytes());
    kiln_tensor_release(&out[i]);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  int st = parseArgs(argc, argv, o);
  if (st >= 0)
    return st;

  if (o.listDevices) {
    // Exit status 0 either way: "no CUDA device" is an answer here.
    const char *text = nullptr;
    std::printf("cpu\n");
    if (kiln_list_cuda_devices(&text) == KILN_OK)
      std::fputs(text, stdout);
    else
      std::printf("%s\n", kiln_last_error());
    return 0;
  }

  Model model;
  auto tLoad = std::chrono::steady_clock::now();
  if (kiln_model_load(o.model.c_str(), &model.m) != KILN_OK)
    return fail(kiln_last_error());
  double loadMs = msSince(tLoad);
  if (o.info) {
    printInfo(o.model, model.m);
    return 0;
  }

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
      return fail("--input " + kv.first + ": the model has no input named '" +
                  kv.first + "'");
  }
  bool useSeed = o.inputsDir.empty() && (o.haveSeed || o.inputFiles.empty());
  std::string source;
  if (!o.inputsDir.empty())
    source = "dir";
  else if (!o.inputFiles.empty())
    source = useSeed ? "files+seed" : "files";
  else
    source = "seed";

  std::vector<HostTensor> inputs(numInputs);
  std::string err;
  for (size_t i = 0; i < numInputs; ++i) {
    HostTensor &t = inputs[i];
    const kiln_tensor_info &info = inInfo[i];
    std::vector<int64_t> want(info.dims, info.dims + info.rank);
    std::string file;
    if (!o.inputsDir.empty()) {
      file = findIndexed(o.inputsDir, "input", i);
      if (file.empty())
        return fail(o.inputsDir + ": no input_" + std::to_string(i) +
                    ".pb or .npy for input " + std::to_string(i) + " '" +
                    info.name + "'");
    } else if (byName.count(info.name)) {
      file = byName[info.name];
    }
    if (!file.empty()) {
      if (!readTensorFile(file, t, err))
        return fail(err);
      if (t.dtype == KILN_DTYPE_UINT16 && info.dtype == KILN_DTYPE_BFLOAT16)
        t.dtype = KILN_DTYPE_BFLOAT16; // .npy has no bfloat16: its bits
      if (t.dtype != info.dtype || t.dims != want)
        return fail(file + ": input " + std::to_string(i) + " '" + info.name +
                    "' is " + dtypeString(t.dtype) + " " +
                    shapeString(t.dims) + ", the model expects " +
                    dtypeString(info.dtype) + " " + shapeString(want));
    } else if (useSeed) {
      t.dtype = info.dtype;
      t.dims = want;
      fillRandom(t, o.seed, i);
    } else {
      return fail("no file for input " + std::to_string(i) + " '" +
                  info.name + "' (give --input " + info.name +
                  "=FILE, or --seed N for random values)");
    }
    t.name = info.name;
  }

  // Expected outputs (optional): files, or a reference model's outputs.
  std::string expectedDir = !o.expectedDir.empty() ? o.expectedDir : o.inputsDir;
  std::vector<HostTensor> expected(numOutputs);
  std::vector<bool> haveExpected(numOutputs, false);
  if (!o.referenceModel.empty()) {
    std::vector<HostTensor> refOut;
    if (!runReference(o.referenceModel, o.threads, inputs, refOut, err))
      return fail(err);
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
        return fail(err);
      if (expected[i].dtype == KILN_DTYPE_UINT16 &&
          outInfo[i].dtype == KILN_DTYPE_BFLOAT16)
        expected[i].dtype = KILN_DTYPE_BFLOAT16;
      haveExpected[i] = true;
    }
    if (!o.expectedDir.empty() &&
        std::none_of(haveExpected.begin(), haveExpected.end(),
                     [](bool b) { return b; }) &&
        numOutputs)
      return fail(o.expectedDir + ": no output_N.pb or output_N.npy files");
  }

  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = o.threads;
  so.device = o.device.empty() ? nullptr : o.device.c_str();
  so.cuda_graphs = o.cudaGraphs ? 1 : 0;
  auto tSession = std::chrono::steady_clock::now();
  if (kiln_session_create(model.m, &so, &model.s) != KILN_OK)
    return fail(kiln_last_error());
  double sessionMs = msSince(tSession);

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

  double coldMs;
  if (!runOnce(coldMs))
    return fail(kiln_last_error());
  // Keep the outputs of the cold run for checking and for the consistency
  // check of later runs.
  std::vector<HostTensor> outputs(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    HostTensor &t = outputs[i];
    t.name = outInfo[i].name;
    t.dtype = outInfo[i].dtype;
    t.dims.assign(outInfo[i].dims, outInfo[i].dims + outInfo[i].rank);
    t.allocate();
    if (t.numBytes())
      std::memcpy(t.data(), out[i].data, t.numBytes());
  }
  // Warmup, then the timed runs (--iterations N and/or --duration S).
  TimedRuns timed;
  if (!timeRuns(runOnce, o.warmup, o.iterations, o.duration,
                [&] {
                  return !o.profile ||
                         kiln_session_set_profiling(model.s, 1) == KILN_OK;
                },
                timed))
    return fail(kiln_last_error());
  const std::vector<double> &times = timed.milliseconds;
  double elapsedMs = timed.elapsedMs;
  double joules = timed.joules;
  // The profile is of the timed runs only, not the consistency runs.
  if (o.profile)
    kiln_session_set_profiling(model.s, 0);

  // Consistency: further runs must reproduce the first run's outputs bit
  // for bit (checked outside the timed runs, so timing is not disturbed).
  long consistencyChecked = 0;
  bool bitIdentical = true;
  std::vector<std::string> inconsistent;
  for (long r = 0; r < o.consistencyRuns; ++r) {
    double ms;
    if (!runOnce(ms))
      return fail(kiln_last_error());
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
  kiln_session_stats stats;
  kiln_session_get_stats(model.s, &stats);
  uint64_t rssBytes = peakRssBytes();

  // Throughput: samples per run, from --batch or the first input's dim 0.
  long batch = o.batch;
  std::string batchFrom = "--batch";
  if (batch < 0) {
    batch = 1;
    batchFrom = "default";
    if (numInputs && !inputs[0].dims.empty() && inputs[0].dims[0] > 0) {
      batch = long(inputs[0].dims[0]);
      batchFrom = "input '" + inputs[0].name + "' dimension 0";
    }
  }

  // Report.
  std::printf("model: %s (%s)\n", o.model.c_str(),
              hexHash(kiln_model_content_hash(model.m)).c_str());
  if (source == "dir")
    std::printf("inputs: %s\n", o.inputsDir.c_str());
  else if (source == "seed")
    std::printf("inputs: random, seed %llu\n", (unsigned long long)o.seed);
  else
    std::printf("inputs: files%s\n",
                useSeed ? (", the rest random with seed " +
                           std::to_string(o.seed)).c_str()
                        : "");
  if (!o.referenceModel.empty())
    std::printf("reference: %s\n", o.referenceModel.c_str());
  std::string device = kiln_session_device(model.s);
  bool onCuda = device.compare(0, 4, "cuda") == 0;
  std::string graphs = kiln_session_cuda_graphs(model.s);
  if (onCuda)
    std::printf("device: %s, CUDA graphs %s\n", device.c_str(),
                graphs.c_str());
  else
    std::printf("threads: %d\n", kiln_session_num_threads(model.s));

  bool allPass = true;
  size_t compared = 0;
  bool sameDtype = o.referenceModel.empty();
  std::vector<Comparison> results(numOutputs);
  std::vector<Quality> quality(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    const HostTensor &t = outputs[i];
    std::string head = "output " + std::to_string(i) + " '" + t.name + "' " +
                       dtypeString(t.dtype) + " " + shapeString(t.dims);
    if (!haveExpected[i]) {
      std::printf("%s: no expected output\n", head.c_str());
      continue;
    }
    ++compared;
    Comparison &c = results[i] =
        compare(t, expected[i], o.rtol, o.atol, sameDtype);
    allPass &= c.pass();
    if (!c.dtypeMatches || !c.shapeMatches) {
      std::printf("%s: expected %s %s: FAIL\n", head.c_str(),
                  dtypeString(expected[i].dtype).c_str(),
                  shapeString(expected[i].dims).c_str());
      continue;
    }
    Quality &q = quality[i] = assessQuality(t, expected[i]);
    std::printf("%s: max abs error %.3g, max rel error %.3g, mismatches "
                "%llu/%llu: %s\n",
                head.c_str(), c.maxAbsError, c.maxRelError,
                (unsigned long long)c.mismatches,
                (unsigned long long)c.count, c.pass() ? "PASS" : "FAIL");
    std::printf("  quality: cosine similarity %.6f", q.cosineSimilarity);
    if (q.top1Rows)
      std::printf(", top-1 agreement %.4f (%llu/%llu rows)",
                  q.top1Agreement(), (unsigned long long)q.top1Agree,
                  (unsigned long long)q.top1Rows);
    std::printf("\n");
  }

  TimingSummary ts = summarize(times);
  std::printf("cold: load %.3f ms, session %.3f ms, first run %.3f ms\n",
              loadMs, sessionMs, coldMs);
  if (!times.empty()) {
    std::printf("time: %zu runs after %ld warmup (%.3f s): min %.3f, median "
                "%.3f, mean %.3f, p90 %.3f, p99 %.3f, max %.3f, stddev %.3f "
                "ms\n",
                times.size(), o.warmup, elapsedMs / 1e3, ts.min, ts.median,
                ts.mean, ts.p90, ts.p99, ts.max, ts.stddev);
    std::printf("throughput: %.2f samples/s (batch %ld from %s), %.2f "
                "runs/s\n",
                double(batch) * 1e3 / ts.median, batch, batchFrom.c_str(),
                1e3 / ts.median);
  } else {
    std::printf("time: no timed runs (give --iterations N or --duration S)\n");
  }
  std::string deviceMemory =
      onCuda ? "peak " + std::to_string(stats.device_peak_bytes) +
                   " bytes (weights, inputs and outputs included; "
                   "intermediates peak " +
                   std::to_string(stats.device_pool_peak_bytes) + " bytes)"
             : std::string("none (CPU)");
  std::printf("memory: peak %llu bytes (session), %llu bytes (process "
              "allocator), peak RSS %llu bytes; device: %s\n",
              (unsigned long long)stats.peak_bytes,
              (unsigned long long)stats.process_peak_bytes,
              (unsigned long long)rssBytes, deviceMemory.c_str());
  if (!timed.energyAvailable)
    std::printf("energy: unavailable (%s)\n", timed.energyReason.c_str());
  else if (times.empty())
    std::printf("energy: no timed runs\n");
  else
    std::printf("energy: %.4f J per run, %.2f W average (RAPL, whole CPU "
                "package, other processes included)\n",
                joules / double(times.size()), joules / (elapsedMs / 1e3));
  if (consistencyChecked)
    std::printf("consistency: %s over %ld more runs\n",
                bitIdentical ? "bit-identical"
                             : ("NOT bit-identical (outputs " +
                                [&] {
                                  std::string s;
                                  for (const std::string &n : inconsistent)
                                    s += (s.empty() ? "'" : ", '") + n + "'";
                                  return s;
                                }() +
                                ")")
                                   .c_str(),
                consistencyChecked);
  if (compared)
    std::printf("result: %s\n", allPass ? "PASS" : "FAIL");
  else
    std::printf("result: no expected outputs, nothing compared\n");

  ProfileReport profile;
  if (o.profile) {
    kiln_session_set_profiling(model.s, 0);
    profile = collectProfile(model.m, model.s);
    printProfile(stdout, profile);
    if (!o.tracePath.empty()) {
      std::string e = writeChromeTrace(o.tracePath, profile, o.model);
      if (!e.empty())
        return fail(e);
    }
  }

  if (!o.saveDir.empty()) {
    mkdir(o.saveDir.c_str(), 0777);
    for (size_t i = 0; i < numOutputs; ++i) {
      std::string base = o.saveDir + "/output_" + std::to_string(i);
      if (!writeNpy(base + ".npy", outputs[i], err))
        return fail(err);
    }
  }

  if (!o.jsonPath.empty()) {
    std::string j = "{\n  \"schema\": \"kiln.run-result\",\n  \"version\": 2,\n";
    j += "  \"model\": " + json::quote(o.model) + ",\n";
    j += "  \"content_hash\": " +
         json::quote(hexHash(kiln_model_content_hash(model.m))) + ",\n";
    j += std::string("  \"device\": ") + (onCuda ? "\"cuda\"" : "\"cpu\"") +
         ",\n";
    if (onCuda)
      j += "  \"device_name\": " + json::quote(device) +
           ",\n  \"cuda_graphs\": " + json::quote(graphs) + ",\n";
    j += "  \"inputs\": {\"source\": " + json::quote(source);
    if (source == "dir")
      j += ", \"dir\": " + json::quote(o.inputsDir);
    if (useSeed)
      j += ", \"seed\": " + std::to_string(o.seed);
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
         std::to_string(kiln_session_num_threads(model.s)) + ",\n";
    j += "  \"tolerance\": {\"rtol\": " + num(o.rtol) +
         ", \"atol\": " + num(o.atol) + "},\n";
    j += "  \"outputs\": [";
    for (size_t i = 0; i < numOutputs; ++i) {
      const Comparison &c = results[i];
      const Quality &q = quality[i];
      j += std::string(i ? "," : "") + "\n    {\"name\": " +
           json::quote(outputs[i].name) + ", \"dtype\": " +
           json::quote(dtypeString(outputs[i].dtype)) +
           ", \"shape\": " + dimsJson(outputs[i].dims) +
           ", \"compared\": " + (haveExpected[i] ? "true" : "false");
      if (haveExpected[i]) {
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
    j += numOutputs ? "\n  ],\n" : "],\n";
    j += std::string("  \"pass\": ") +
         (compared ? (allPass ? "true" : "false") : "null") + ",\n";
    j += "  \"timing\": {\"load_ms\": " + num(loadMs) +
         ", \"session_ms\": " + num(sessionMs) + ", \"cold_ms\": " +
         num(coldMs) + ", \"warmup\": " + std::to_string(o.warmup) +
         ", \"iterations\": " + std::to_string(times.size()) +
         ", \"duration_s\": " + (o.duration > 0 ? num(o.duration) : "null") +
         ", \"elapsed_s\": " + num(elapsedMs / 1e3);
    if (!times.empty()) {
      j += ", \"min_ms\": " + num(ts.min) + ", \"median_ms\": " +
           num(ts.median) + ", \"mean_ms\": " + num(ts.mean) +
           ", \"p90_ms\": " + num(ts.p90) + ", \"p99_ms\": " + num(ts.p99) +
           ", \"max_ms\": " + num(ts.max) + ", \"stddev_ms\": " +
           num(ts.stddev) + ",\n             \"samples_ms\": [";
      for (size_t k = 0; k < times.size(); ++k)
        j += (k ? ", " : "") + num(times[k]);
      j += "]";
    }
    j += "},\n";
    j += "  \"throughput\": {\"batch\": " + std::to_string(batch) +
         ", \"batch_from\": " + json::quote(batchFrom);
    if (!times.empty())
      j += ", \"samples_per_s\": " + num(double(batch) * 1e3 / ts.median) +
           ", \"runs_per_s\": " + num(1e3 / ts.median);
    j += "},\n";
    j += "  \"memory\": {\"session_peak_bytes\": " +
         std::to_string(stats.peak_bytes) +
         ", \"process_peak_bytes\": " +
         std::to_string(stats.process_peak_bytes) +
         ", \"peak_rss_bytes\": " + std::to_string(rssBytes) +
         ", \"device_pool_peak_bytes\": " +
         (onCuda ? std::to_string(stats.device_pool_peak_bytes) : "null") +
         ", \"device_peak_bytes\": " +
         (onCuda ? std::to_string(stats.device_peak_bytes) : "null") +
         "},\n";
    j += "  \"energy\": {\"available\": ";
    if (timed.energyAvailable && !times.empty()) {
      j += "true, \"source\": \"rapl\", \"domains\": [";
      const std::vector<std::string> &names = timed.energyDomains;
      for (size_t k = 0; k < names.size(); ++k)
        j += (k ? ", " : "") + json::quote(names[k]);
      j += "], \"joules\": " + num(joules) + ", \"joules_per_run\": " +
           num(joules / double(times.size())) + ", \"average_watts\": " +
           num(joules / (elapsedMs / 1e3));
    } else {
      j += "false, \"reason\": " +
           json::quote(timed.energyAvailable ? "no timed runs"
                                             : timed.energyReason);
    }
    j += "},\n";
    j += "  \"consistency\": {\"runs\": " + std::to_string(consistencyChecked) +
         ", \"bit_identical\": " +
         (consistencyChecked ? (bitIdentical ? "true" : "false") : "null") +
         "},\n";
    if (o.profile)
      j += "  \"profile\": " + profileJson(profile) + ",\n";
    j += "  \"stats\": {\"runs\": " + std::to_string(stats.num_runs) +
         ", \"peak_bytes\": " + std::to_string(stats.peak_bytes) +
         ", \"process_peak_bytes\": " +
         std::to_string(stats.process_peak_bytes) + "}\n}\n";
    std::ofstream f(o.jsonPath, std::ios::trunc);
    f << j;
    if (!f)
      return fail(o.jsonPath + ": cannot write");
  }
  if (o.requireExpected && compared < numOutputs)
    return fail(std::to_string(numOutputs - compared) + " of " +
                std::to_string(numOutputs) +
                " outputs have no expected value (--require-expected)");
  return allPass ? 0 : 1;
}
