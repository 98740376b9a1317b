//===- AutoKeep.cpp - Running artifacts for --auto-keep -------------------===//

#include "kiln/Quantization/Runner.h"
#include "kiln/Run/Measurement.h"

#include "kiln/runtime.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

namespace kiln {
namespace autokeep {

namespace {
struct ModelHandle {
  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
  ~ModelHandle() {
    if (session)
      kiln_session_free(session);
    if (model)
      kiln_model_free(model);
  }
};

bool loadModel(const std::string &path, ModelHandle &h, std::string &error) {
  if (kiln_model_load(path.c_str(), &h.model) != KILN_OK) {
    error = path + ": " + kiln_last_error();
    return false;
  }
  return true;
}

/// The file name an input's .npy may have: its name with the characters
/// a file name cannot hold ('/', and ':' for portability) as '_'.
std::string fileNameOf(const std::string &inputName) {
  std::string name = inputName;
  for (char &c : name)
    if (c == '/' || c == ':' || c == '\\')
      c = '_';
  return name;
}

/// DIR/input_N.npy, DIR/input_N.pb (ONNX's test_data_set layout) or
/// DIR/<input name>.npy, or "" when none exists.
std::string findInput(const std::filesystem::path &dir, size_t n,
                      const std::string &inputName) {
  for (const char *ext : {".npy", ".pb"}) {
    std::filesystem::path p = dir / ("input_" + std::to_string(n) + ext);
    if (std::filesystem::exists(p))
      return p.string();
  }
  std::filesystem::path p = dir / (fileNameOf(inputName) + ".npy");
  if (!inputName.empty() && std::filesystem::exists(p))
    return p.string();
  return "";
}

/// The model's first input's name ("" when it has none).
std::string firstInputName(const kiln_model *model) {
  if (kiln_model_num_inputs(model) == 0)
    return "";
  kiln_tensor_info info;
  kiln_model_input_info(model, 0, &info);
  return info.name;
}

/// True when `dir` holds the first input of a set.
bool holdsSet(const std::filesystem::path &dir, const kiln_model *model) {
  return !findInput(dir, 0, firstInputName(model)).empty();
}

/// True when `dir` holds tensor files (.npy, .pb): a set, maybe incomplete.
bool holdsTensors(const std::filesystem::path &dir) {
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".npy" || ext == ".pb"))
      return true;
  }
  return false;
}

bool readSet(const std::filesystem::path &dir, const kiln_model *model,
             InputSet &set, std::string &error) {
  set.label = dir.string();
  size_t n = kiln_model_num_inputs(model);
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info info;
    kiln_model_input_info(model, i, &info);
    std::string path = findInput(dir, i, info.name);
    if (path.empty()) {
      error = dir.string() + ": no input_" + std::to_string(i) +
              ".npy, input_" + std::to_string(i) + ".pb or " +
              fileNameOf(info.name) + ".npy for the model's input '" +
              info.name + "'";
      return false;
    }
    run::HostTensor t;
    bool ok = path.size() > 4 && path.substr(path.size() - 4) == ".npy"
                  ? run::readNpy(path, t, error)
                  : run::readTensorProto(path, t, error);
    if (!ok) {
      error = "the model's input '" + std::string(info.name) + "': " + error;
      return false;
    }
    std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    if (t.dtype != info.dtype || t.dims != dims) {
      error = path + ": " + run::dtypeString(t.dtype) + " " +
              run::shapeString(t.dims) + ", but the model's input '" +
              info.name + "' is " + run::dtypeString(info.dtype) + " " +
              run::shapeString(dims);
      return false;
    }
    t.name = info.name;
    set.tensors.push_back(std::move(t));
  }
  return true;
}
} // namespace

static bool isFloatDtype(int32_t dtype) {
  return dtype == KILN_DTYPE_FLOAT32 || dtype == KILN_DTYPE_FLOAT16 ||
         dtype == KILN_DTYPE_BFLOAT16 || dtype == KILN_DTYPE_FLOAT64;
}

bool loadInputSets(const std::string &artifactPath,
                   const std::string &calibrationDir, uint64_t seed,
                   unsigned numRandomSets, std::vector<InputSet> &sets,
                   std::string &error) {
  ModelHandle h;
  if (!loadModel(artifactPath, h, error))
    return false;
  sets.clear();
  if (calibrationDir.empty()) {
    size_t n = kiln_model_num_inputs(h.model);
    for (unsigned s = 0; s < numRandomSets; ++s) {
      InputSet set;
      set.label = "seed " + std::to_string(seed + s);
      for (size_t i = 0; i < n; ++i) {
        kiln_tensor_info info;
        kiln_model_input_info(h.model, i, &info);
        run::HostTensor t;
        t.name = info.name;
        t.dtype = info.dtype;
        t.dims.assign(info.dims, info.dims + info.rank);
        t.allocate();
        run::fillRandom(t, seed + s, i);
        set.tensors.push_back(std::move(t));
      }
      sets.push_back(std::move(set));
    }
    return true;
  }
  std::filesystem::path dir(calibrationDir);
  if (!std::filesystem::is_directory(dir)) {
    error = "'" + calibrationDir + "' is not a directory";
    return false;
  }
  if (holdsSet(dir, h.model)) {
    InputSet set;
    if (!readSet(dir, h.model, set, error))
      return false;
    sets.push_back(std::move(set));
    return true;
  }
  std::vector<std::filesystem::path> subdirs;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    // A folder with tensor files but not every input is an error that
    // names the missing input (readSet), not a set silently left out.
    if (entry.is_directory() && holdsTensors(entry.path()))
      subdirs.push_back(entry.path());
  std::sort(subdirs.begin(), subdirs.end());
  if (subdirs.empty()) {
    std::string first = firstInputName(h.model);
    error = "'" + calibrationDir + "' holds no input set: neither " +
            "input_0.npy/.pb or " + fileNameOf(first) +
            ".npy (the model's input '" + first +
            "') nor folders that do";
    return false;
  }
  for (const auto &sub : subdirs) {
    InputSet set;
    if (!readSet(sub, h.model, set, error))
      return false;
    sets.push_back(std::move(set));
  }
  return true;
}

bool runArtifact(const std::string &artifactPath,
                 const std::vector<InputSet> &sets, Outputs &outputs,
                 std::string &error) {
  ModelHandle h;
  if (!loadModel(artifactPath, h, error))
    return false;
  kiln_session_options options;
  kiln_session_options_init(&options);
  options.num_threads = 1;
  if (kiln_session_create(h.model, &options, &h.session) != KILN_OK) {
    error = artifactPath + ": " + kiln_last_error();
    return false;
  }
  size_t no = kiln_model_num_outputs(h.model);
  outputs.assign(sets.size(), {});
  for (size_t s = 0; s < sets.size(); ++s) {
    std::vector<kiln_tensor> in;
    for (const run::HostTensor &t : sets[s].tensors)
      in.push_back({const_cast<void *>(t.data()), t.dtype,
                    int32_t(t.dims.size()), t.dims.data()});
    std::vector<kiln_tensor> out(no);
    for (kiln_tensor &t : out)
      std::memset(&t, 0, sizeof(t));
    if (kiln_session_run(h.session, in.data(), in.size(), out.data(), no) !=
        KILN_OK) {
      error = artifactPath + ": " + kiln_last_error();
      return false;
    }
    for (size_t i = 0; i < no; ++i) {
      outputs[s].push_back(run::copyOutput(out[i]));
      kiln_tensor_release(&out[i]);
    }
  }
  return true;
}


run::Quality compareOutput(const Outputs &reference, const Outputs &actual,
                           size_t index) {
  // The sets stacked along a new leading axis: one comparison, so that the
  // cosine is that of all sets together and top-1 counts every row.
  auto stack = [&](const Outputs &outputs, run::HostTensor &t) {
    for (size_t s = 0; s < outputs.size(); ++s) {
      const run::HostTensor &x = outputs[s][index];
      if (s == 0) {
        t.dtype = x.dtype;
        t.dims = x.dims;
        t.dims.insert(t.dims.begin(), int64_t(outputs.size()));
        t.allocate();
      }
      if (x.dtype != t.dtype || x.numBytes() * outputs.size() != t.numBytes())
        return false;
      std::memcpy(reinterpret_cast<char *>(t.data()) + s * x.numBytes(),
                  x.data(), x.numBytes());
    }
    return !outputs.empty();
  };
  run::HostTensor ref, act;
  if (reference.size() != actual.size() || !stack(reference, ref) ||
      !stack(actual, act) || !isFloatDtype(ref.dtype))
    return run::Quality();
  return run::assessQuality(act, ref);
}

Error measure(const Outputs &reference, const Outputs &actual) {
  Error e;
  double dot = 0, refNorm = 0, actNorm = 0;
  bool nonFinite = false;
  for (size_t s = 0; s < reference.size() && s < actual.size(); ++s)
    for (size_t i = 0; i < reference[s].size() && i < actual[s].size(); ++i) {
      const run::HostTensor &r = reference[s][i], &a = actual[s][i];
      if (!isFloatDtype(r.dtype) || r.numElements() != a.numElements())
        continue;
      for (uint64_t k = 0; k < r.numElements(); ++k) {
        double x = r.at(k), y = a.at(k);
        if (!std::isfinite(x))
          continue;
        if (!std::isfinite(y)) {
          nonFinite = true;
          continue;
        }
        e.maxAbs = std::max(e.maxAbs, std::fabs(x - y));
        e.maxRef = std::max(e.maxRef, std::fabs(x));
        dot += x * y;
        refNorm += x * x;
        actNorm += y * y;
      }
    }
  if (nonFinite) {
    e.maxAbs = e.relative = INFINITY;
    e.cosine = NAN;
    return e;
  }
  e.relative = e.maxRef > 0 ? e.maxAbs / e.maxRef : e.maxAbs;
  e.cosine = refNorm > 0 && actNorm > 0
                 ? dot / (std::sqrt(refNorm) * std::sqrt(actNorm))
                 : (refNorm == actNorm ? 1.0 : 0.0);
  return e;
}

} // namespace autokeep
} // namespace kiln
