//===- kiln-run.cpp - Runs a model artifact and checks its outputs --------===//
//
// kiln-run model.kiln [--inputs DIR | --input NAME=FILE ... | --seed N]
//                     [--expected DIR] [--rtol R] [--atol A] [--threads N]
//                     [--warmup N] [--iterations N] [--save-outputs DIR]
//                     [--profile] [--trace FILE] [--json FILE] [--info]
//
// Exit status: 0 every compared output passed (or nothing to compare), 1 an
// output mismatched, 2 an error (usage, files, load, run). docs/kiln-run.md
// has the details (random generator, tolerance rule, JSON schema).
//
//===----------------------------------------------------------------------===//
#include "Profile.h"
#include "TensorIO.h"

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

Runs a Kiln model artifact on the CPU and compares its outputs.

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
  --rtol R --atol A    pass when |actual - expected| <= A + R * |expected|
                       (default 1e-3 and 1e-7; NaN matches NaN, infinities
                       must match exactly)
Running:
  --threads N          threads of the model's parallel loops (0: all cores)
  --warmup N           untimed runs after the first (cold) run (default 0)
  --iterations N       timed runs after the warmup (default 0)
  --profile            time every kernel of the timed runs (at least one)
                       and print per-kernel and per-category tables
  --trace FILE         write those runs' kernel timeline as a Chrome trace
                       (JSON for Perfetto / chrome://tracing); implies
                       --profile
Output:
  --save-outputs DIR   write output_N.npy into DIR (usable as --expected)
  --json FILE          machine-readable results (schema kiln.run-result v1)
  --info               print the artifact's metadata and exit
  --help               this text

Exit status: 0 pass (or nothing compared), 1 an output mismatched, 2 error.
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
    std::printf("target: %s %s cpu=%s features=%s\n",
                str(t->find("kind")).c_str(), str(t->find("triple")).c_str(),
                str(t->find("cpu")).c_str(),
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
  bool info = false;
  bool profile = false;
  std::string tracePath;
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
    } else if (a == "--inputs" && value(v)) {
      o.inputsDir = v;
    } else if (a == "--expected" && value(v)) {
      o.expectedDir = v;
    } else if (a == "--save-outputs" && value(v)) {
      o.saveDir = v;
    } else if (a == "--json" && value(v)) {
      o.jsonPath = v;
    } else if (a == "--profile") {
      o.profile = true;
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
  if (o.model.empty()) {
    std::fputs(kUsage, stderr);
    return fail("no model given");
  }
  if (!o.inputsDir.empty() && (!o.inputFiles.empty() || o.haveSeed))
    return fail("--inputs cannot be combined with --input or --seed");
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

} // namespace

int main(int argc, char **argv) {
  Options o;
  int st = parseArgs(argc, argv, o);
  if (st >= 0)
    return st;

  Model model;
  if (kiln_model_load(o.model.c_str(), &model.m) != KILN_OK)
    return fail(kiln_last_error());
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

  // Expected outputs (optional).
  std::string expectedDir = !o.expectedDir.empty() ? o.expectedDir : o.inputsDir;
  std::vector<HostTensor> expected(numOutputs);
  std::vector<bool> haveExpected(numOutputs, false);
  if (!expectedDir.empty()) {
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
  if (kiln_session_create(model.m, &so, &model.s) != KILN_OK)
    return fail(kiln_last_error());

  std::vector<kiln_tensor> in(numInputs), out(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    in[i] = {inputs[i].data(), inputs[i].dtype, int32_t(inputs[i].dims.size()),
             inputs[i].dims.data()};
  for (size_t i = 0; i < numOutputs; ++i)
    out[i] = {nullptr, 0, 0, nullptr}; // the runtime allocates them

  auto runOnce = [&](double &ms) {
    auto t0 = std::chrono::steady_clock::now();
    kiln_status s =
        kiln_session_run(model.s, in.data(), in.size(), out.data(), out.size());
    auto t1 = std::chrono::steady_clock::now();
    ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
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
  // Keep the outputs of the cold run for checking; later runs write into
  // scratch copies.
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
  for (long w = 0; w < o.warmup; ++w) {
    double ms;
    if (!runOnce(ms))
      return fail(kiln_last_error());
  }
  if (o.profile && kiln_session_set_profiling(model.s, 1) != KILN_OK)
    return fail(kiln_last_error());
  std::vector<double> times;
  for (long r = 0; r < o.iterations; ++r) {
    double ms;
    if (!runOnce(ms))
      return fail(kiln_last_error());
    times.push_back(ms);
  }
  kiln_session_stats stats;
  kiln_session_get_stats(model.s, &stats);

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
  std::printf("threads: %d\n", kiln_session_num_threads(model.s));

  bool allPass = true;
  size_t compared = 0;
  std::vector<Comparison> results(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    const HostTensor &t = outputs[i];
    std::string head = "output " + std::to_string(i) + " '" + t.name + "' " +
                       dtypeString(t.dtype) + " " + shapeString(t.dims);
    if (!haveExpected[i]) {
      std::printf("%s: no expected output\n", head.c_str());
      continue;
    }
    ++compared;
    Comparison &c = results[i] = compare(t, expected[i], o.rtol, o.atol);
    allPass &= c.pass();
    if (!c.dtypeMatches || !c.shapeMatches) {
      std::printf("%s: expected %s %s: FAIL\n", head.c_str(),
                  dtypeString(expected[i].dtype).c_str(),
                  shapeString(expected[i].dims).c_str());
      continue;
    }
    std::printf("%s: max abs error %.3g, max rel error %.3g, mismatches "
                "%llu/%llu: %s\n",
                head.c_str(), c.maxAbsError, c.maxRelError,
                (unsigned long long)c.mismatches,
                (unsigned long long)c.count, c.pass() ? "PASS" : "FAIL");
  }

  double median = 0, minMs = 0, mean = 0;
  if (!times.empty()) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    minMs = sorted.front();
    for (double t : times)
      mean += t;
    mean /= double(n);
  }
  std::printf("time: cold run %.3f ms", coldMs);
  if (!times.empty())
    std::printf("; %zu runs after %ld warmup: median %.3f ms, min %.3f ms, "
                "mean %.3f ms",
                times.size(), o.warmup, median, minMs, mean);
  std::printf("\n");
  std::printf("memory: peak %llu bytes (session), %llu bytes (process)\n",
              (unsigned long long)stats.peak_bytes,
              (unsigned long long)stats.process_peak_bytes);
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
    std::string j = "{\n  \"schema\": \"kiln.run-result\",\n  \"version\": 1,\n";
    j += "  \"model\": " + json::quote(o.model) + ",\n";
    j += "  \"content_hash\": " +
         json::quote(hexHash(kiln_model_content_hash(model.m))) + ",\n";
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
    j += "  \"threads\": " +
         std::to_string(kiln_session_num_threads(model.s)) + ",\n";
    j += "  \"tolerance\": {\"rtol\": " + num(o.rtol) +
         ", \"atol\": " + num(o.atol) + "},\n";
    j += "  \"outputs\": [";
    for (size_t i = 0; i < numOutputs; ++i) {
      const Comparison &c = results[i];
      j += std::string(i ? "," : "") + "\n    {\"name\": " +
           json::quote(outputs[i].name) + ", \"dtype\": " +
           json::quote(dtypeString(outputs[i].dtype)) +
           ", \"shape\": " + dimsJson(outputs[i].dims) +
           ", \"compared\": " + (haveExpected[i] ? "true" : "false");
      if (haveExpected[i])
        j += ", \"max_abs_error\": " + num(c.maxAbsError) +
             ", \"max_rel_error\": " + num(c.maxRelError) +
             ", \"mismatches\": " + std::to_string(c.mismatches) +
             ", \"elements\": " + std::to_string(c.count) +
             ", \"shape_matches\": " + (c.shapeMatches ? "true" : "false") +
             ", \"dtype_matches\": " + (c.dtypeMatches ? "true" : "false") +
             ", \"pass\": " + (c.pass() ? "true" : "false");
      j += "}";
    }
    j += numOutputs ? "\n  ],\n" : "],\n";
    j += std::string("  \"pass\": ") +
         (compared ? (allPass ? "true" : "false") : "null") + ",\n";
    j += "  \"timing\": {\"cold_ms\": " + num(coldMs) +
         ", \"warmup\": " + std::to_string(o.warmup) +
         ", \"iterations\": " + std::to_string(times.size());
    if (!times.empty())
      j += ", \"median_ms\": " + num(median) + ", \"min_ms\": " + num(minMs) +
           ", \"mean_ms\": " + num(mean);
    j += "},\n";
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
  return allPass ? 0 : 1;
}
