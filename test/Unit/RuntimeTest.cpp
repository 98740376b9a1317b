//===- RuntimeTest.cpp - Tests of the runtime (runtime/) ------------------===//
//
// The JSON parser, the artifact writer and reader, every rejection of a bad
// artifact, the side weights file, the allocator's accounting, and runs of a
// real code section (test/Runtime/TestModel.c) from one and from several
// threads.
//
//===----------------------------------------------------------------------===//
#include "Artifact.h"
#include "Profile.h"
#include "TestArtifact.h"
#include "kiln/ArtifactWriter.h"
#include "kiln/Json.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>
#include <unistd.h>

using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string tempDir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/kiln-runtime-test-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

std::string tempPath(const std::string &name) {
  return tempDir() + "/" + name;
}

void writeBytes(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Loads `path` and returns the status; the message goes to `message`.
kiln_status loadStatus(const std::string &path, std::string &message) {
  kiln_model *m = nullptr;
  kiln_status st = kiln_model_load(path.c_str(), &m);
  message = st == KILN_OK ? "" : kiln_last_error();
  kiln_model_free(m);
  return st;
}

// A file with a hand-made header and data area and a correct hash, for the
// header checks that a hash mismatch would otherwise hide.
std::string fileWithHeader(const std::string &header,
                           const std::vector<char> &data) {
  uint64_t dataOffset = (40 + header.size() + 63) / 64 * 64;
  std::vector<char> file(dataOffset + data.size(), 0);
  std::memcpy(file.data(), KILN_ARTIFACT_MAGIC, 8);
  auto put = [&](size_t off, uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      file[off + i] = char(v >> (8 * i));
  };
  put(8, 1, 4);
  put(16, header.size(), 8);
  put(24, dataOffset, 8);
  std::memcpy(file.data() + 40, header.data(), header.size());
  std::memcpy(file.data() + dataOffset, data.data(), data.size());
  uint64_t h = kiln_fnv1a64(KILN_FNV1A64_OFFSET_BASIS, header.data(),
                            header.size());
  h = kiln_fnv1a64(h, data.data(), data.size());
  put(32, h, 8);
  return std::string(file.begin(), file.end());
}

std::string goodArtifact() {
  static std::string path = [] {
    std::string p = tempPath("good.kiln");
    std::string err = test::writeTestArtifact(p);
    EXPECT_EQ(err, "");
    return p;
  }();
  return path;
}

struct Inputs {
  std::vector<float> x = std::vector<float>(32);
  std::vector<int32_t> s = std::vector<int32_t>(8);
  explicit Inputs(int seed) {
    for (int i = 0; i < 32; ++i)
      x[i] = float((i * 7 + seed * 13) % 19) * 0.125f - 1.0f;
    for (int j = 0; j < 8; ++j)
      s[j] = (j * 3 + seed) % 11 - 5;
  }
};

const int64_t kXDims[] = {4, 8};
const int64_t kSDims[] = {8};
const int64_t kYDims[] = {4, 8};
const int64_t kZDims[] = {1};

// Runs one session with caller-provided outputs; returns whether the
// outputs match the reference.
bool runAndCheck(kiln_session *session, int seed, std::string *error) {
  Inputs in(seed);
  std::vector<float> y(32, -99.0f), yRef(32);
  int64_t z = -1, zRef;
  kiln_tensor inputs[2] = {
      {in.x.data(), KILN_DTYPE_FLOAT32, 2, kXDims},
      {in.s.data(), KILN_DTYPE_INT32, 1, kSDims}};
  kiln_tensor outputs[2] = {{y.data(), KILN_DTYPE_FLOAT32, 2, kYDims},
                            {&z, KILN_DTYPE_INT64, 1, kZDims}};
  if (kiln_session_run(session, inputs, 2, outputs, 2) != KILN_OK) {
    if (error)
      *error = kiln_last_error();
    return false;
  }
  test::testModelReference(in.x.data(), in.s.data(), yRef.data(), &zRef);
  return y == yRef && z == zRef;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(RuntimeJson, ParsesValues) {
  json::Value v;
  std::string err;
  ASSERT_TRUE(json::parse(
      R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "s": "x\"\n\u00e9\ud83d\ude00",
          "big": 9007199254740993, "o": {}} )",
      v, err))
      << err;
  ASSERT_TRUE(v.isObject());
  const json::Value *a = v.find("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->getArray().size(), 7u);
  EXPECT_TRUE(a->getArray()[0].isInteger());
  EXPECT_EQ(a->getArray()[1].getInteger(), -2);
  EXPECT_FALSE(a->getArray()[2].isInteger());
  EXPECT_DOUBLE_EQ(a->getArray()[2].getNumber(), 3.5);
  EXPECT_FALSE(a->getArray()[3].isInteger());
  EXPECT_DOUBLE_EQ(a->getArray()[3].getNumber(), 1000.0);
  EXPECT_TRUE(a->getArray()[4].getBool());
  EXPECT_TRUE(a->getArray()[6].isNull());
  EXPECT_EQ(v.find("s")->getString(), "x\"\n\xc3\xa9\xf0\x9f\x98\x80");
  // Integers stay exact (2^53 + 1 is not a double).
  EXPECT_EQ(v.find("big")->getInteger(), 9007199254740993LL);
  EXPECT_TRUE(v.find("o")->isObject());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(RuntimeJson, RejectsInvalid) {
  const char *bad[] = {
      "",          "[1,]",        "{\"a\":1,}",      "{\"a\":1,\"a\":2}",
      "[1] x",     "// c\n[1]",   "01",              "1.",
      "-",         "\"\\x\"",     "\"\\ud800\"",     "\"a\nb\"",
      "[1 2]",     "{1:2}",       "tru",             "\"\xff\"",
      "\"\xc0\xaf\"", "{\"a\" 1}", "[\"unterminated", "1e"};
  for (const char *text : bad) {
    json::Value v;
    std::string err;
    EXPECT_FALSE(json::parse(text, v, err)) << "accepted: " << text;
    EXPECT_NE(err.find("JSON error at byte"), std::string::npos) << err;
  }
  std::string deep(100, '[');
  deep += std::string(100, ']');
  json::Value v;
  std::string err;
  EXPECT_FALSE(json::parse(deep, v, err));
  EXPECT_NE(err.find("nesting"), std::string::npos) << err;
}

TEST(RuntimeJson, QuoteRoundTrips) {
  std::string s = "a\"b\\c\n\x01\xc3\xa9";
  json::Value v;
  std::string err;
  ASSERT_TRUE(json::parse(json::quote(s), v, err)) << err;
  EXPECT_EQ(v.getString(), s);
}

//===----------------------------------------------------------------------===//
// Format helpers
//===----------------------------------------------------------------------===//

TEST(RuntimeFormat, Dtypes) {
  EXPECT_EQ(kiln_dtype_from_name("float32"), KILN_DTYPE_FLOAT32);
  EXPECT_EQ(kiln_dtype_from_name("bfloat16"), 16);
  EXPECT_EQ(kiln_dtype_from_name("float128"), KILN_DTYPE_UNDEFINED);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BOOL), "bool");
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BOOL), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_FLOAT16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_UINT64), 8u);
  // FNV-1a 64 of "a" (the reference value).
  EXPECT_EQ(kiln_fnv1a64(KILN_FNV1A64_OFFSET_BASIS, "a", 1),
            0xaf63dc4c8601ec8cull);
}

//===----------------------------------------------------------------------===//
// Writer and reader
//===----------------------------------------------------------------------===//

TEST(RuntimeArtifact, WriterReaderRoundTrip) {
  std::vector<char> code = test::readFile(test::kTestModelSo);
  ASSERT_FALSE(code.empty());
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  spec.setOption("note", "with \"quotes\"");
  spec.setOption("fast", true);
  std::string path = tempPath("roundtrip.kiln");
  ASSERT_EQ(writeArtifact(path, spec), "");

  std::vector<char> file = test::readFile(path);
  ArtifactHeader h;
  std::string err;
  ASSERT_EQ(parseArtifact(reinterpret_cast<unsigned char *>(file.data()),
                          file.size(), h, err),
            KILN_OK)
      << err;
  EXPECT_EQ(h.dataOffset % 64, 0u);
  EXPECT_EQ(h.codeOffset, 0u);
  EXPECT_EQ(h.codeSize, code.size());
  EXPECT_EQ(0, std::memcmp(file.data() + h.dataOffset, code.data(),
                           code.size()));
  ASSERT_EQ(h.inputs.size(), 2u);
  EXPECT_EQ(h.inputs[0].name, "x");
  EXPECT_EQ(h.inputs[0].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(h.inputs[1].dtype, KILN_DTYPE_INT32);
  ASSERT_EQ(h.outputs.size(), 2u);
  EXPECT_EQ(h.outputs[1].dtype, KILN_DTYPE_INT64);
  ASSERT_EQ(h.weights.size(), 2u);
  EXPECT_EQ(h.weights[1].name, "b");
  EXPECT_EQ(h.weights[1].offset % 64, 0u);
  EXPECT_EQ(h.weightsFile, "");
  const char *wBytes = file.data() + h.dataOffset + h.weightsOffset;
  EXPECT_EQ((h.dataOffset + h.weightsOffset) % 64, 0u);
  EXPECT_EQ(0, std::memcmp(wBytes + h.weights[0].offset, w.data(), 128));
  EXPECT_EQ(0, std::memcmp(wBytes + h.weights[1].offset, b.data(), 12));
  EXPECT_EQ(h.triple, spec.target.triple);
  EXPECT_EQ(h.features, spec.target.features);
  const json::Value *opts = h.root.find("options");
  ASSERT_TRUE(opts && opts->isObject());
  EXPECT_EQ(opts->find("note")->getString(), "with \"quotes\"");
  EXPECT_EQ(opts->find("opt_level")->getInteger(), 0);
  EXPECT_TRUE(opts->find("fast")->getBool());
  EXPECT_EQ(h.root.find("compiler")->find("version")->getString(), "test");

  // The C API sees the same metadata.
  Model model(path);
  auto inputs = model.inputs();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[1].name, "s");
  EXPECT_EQ(inputs[1].dims, (std::vector<int64_t>{8}));
  EXPECT_EQ(model.outputs()[0].dtype, KILN_DTYPE_FLOAT32);
  EXPECT_EQ(model.metadataJson(), h.json);
  EXPECT_EQ(model.contentHash(), h.hash);
  EXPECT_EQ(kiln_model_num_weights(model.get()), 2u);
  kiln_tensor_info info;
  EXPECT_EQ(kiln_model_input_info(model.get(), 2, &info),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("out of range"),
            std::string::npos);
}

TEST(RuntimeArtifact, WriterRejectsBadSpecs) {
  std::vector<char> code = test::readFile(test::kTestModelSo);
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  spec.weights[0].size = 100;
  EXPECT_NE(writeArtifact(tempPath("bad.kiln"), spec).find("need 128"),
            std::string::npos);
  spec = test::testModelSpec(code, w, b);
  spec.inputs[0].dtype = "float128";
  EXPECT_NE(writeArtifact(tempPath("bad.kiln"), spec).find("unknown dtype"),
            std::string::npos);
  spec = test::testModelSpec(code, w, b);
  spec.optionsJson = "[1]";
  EXPECT_NE(writeArtifact(tempPath("bad.kiln"), spec).find("not a JSON object"),
            std::string::npos);
  spec = test::testModelSpec(code, w, b);
  spec.code = nullptr;
  EXPECT_NE(writeArtifact(tempPath("bad.kiln"), spec).find("no code"),
            std::string::npos);
  EXPECT_NE(writeArtifact("/nonexistent-dir/x.kiln",
                          test::testModelSpec(code, w, b))
                .find("cannot open"),
            std::string::npos);
  // Nothing half-written is left behind.
  EXPECT_NE(access(tempPath("bad.kiln").c_str(), F_OK), 0);
}

TEST(RuntimeArtifact, SideWeightsFile) {
  std::string path = tempPath("side.kiln");
  ASSERT_EQ(test::writeTestArtifact(path, test::kTestModelSo,
                                    /*sideThreshold=*/16),
            "");
  std::vector<char> side = test::readFile(path + ".weights");
  ASSERT_EQ(side.size(), 128u + 12u); // w at 0, b at 128
  std::vector<float> w = test::testWeightW();
  EXPECT_EQ(0, std::memcmp(side.data(), w.data(), 128));
  EXPECT_EQ(0, std::memcmp(side.data() + 128, test::testWeightB().data(), 12));
  {
    std::vector<char> file = test::readFile(path);
    ArtifactHeader h;
    std::string err;
    ASSERT_EQ(parseArtifact(reinterpret_cast<unsigned char *>(file.data()),
                            file.size(), h, err),
              KILN_OK)
        << err;
    EXPECT_EQ(h.weightsFile, "side.kiln.weights");
  }
  {
    Model model(path);
    Session session(model, 1);
    std::string error;
    EXPECT_TRUE(runAndCheck(session.get(), 3, &error)) << error;
  }
  // The side file cut short, then missing.
  side.resize(40);
  writeBytes(path + ".weights", side);
  std::string msg;
  EXPECT_EQ(loadStatus(path, msg), KILN_ERROR_TRUNCATED);
  EXPECT_NE(msg.find("side weights file"), std::string::npos) << msg;
  std::remove((path + ".weights").c_str());
  EXPECT_EQ(loadStatus(path, msg), KILN_ERROR_IO);
  EXPECT_NE(msg.find("side weights file"), std::string::npos) << msg;
  // Rewriting below the threshold removes the stale side file.
  writeBytes(path + ".weights", side);
  ASSERT_EQ(test::writeTestArtifact(path), "");
  EXPECT_NE(access((path + ".weights").c_str(), F_OK), 0);
}

// Extra sections (a CUDA model's fatbin) sit between the code and the
// weights, 64-byte aligned; a reader that does not know them still finds
// the code and the weights.
TEST(RuntimeArtifact, ExtraSectionsBetweenCodeAndWeights) {
  std::vector<char> code = test::readFile(test::kTestModelSo);
  ASSERT_FALSE(code.empty());
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  std::string blob(1000, '\x5a');
  spec.sections.push_back(
      {"cuda-fatbin", "cuda-fatbin", blob.data(), uint64_t(blob.size())});
  std::string path = tempPath("sections.kiln");
  ASSERT_EQ(writeArtifact(path, spec), "");
  std::vector<char> file = test::readFile(path);
  ArtifactHeader h;
  std::string err;
  ASSERT_EQ(parseArtifact(reinterpret_cast<unsigned char *>(file.data()),
                          file.size(), h, err),
            KILN_OK)
      << err;
  const json::Value *sections = h.root.find("sections");
  ASSERT_TRUE(sections && sections->isArray());
  ASSERT_EQ(sections->getArray().size(), 3u);
  const json::Value &fatbin = sections->getArray()[1];
  EXPECT_EQ(fatbin.find("name")->getString(), "cuda-fatbin");
  EXPECT_EQ(fatbin.find("kind")->getString(), "cuda-fatbin");
  uint64_t off = uint64_t(fatbin.find("offset")->getInteger());
  EXPECT_EQ(off % 64, 0u);
  EXPECT_GE(off, h.codeSize);
  EXPECT_EQ(uint64_t(fatbin.find("size")->getInteger()), blob.size());
  EXPECT_EQ(0, std::memcmp(file.data() + h.dataOffset + off, blob.data(),
                           blob.size()));
  EXPECT_GE(h.weightsOffset, off + blob.size());
  const char *wBytes = file.data() + h.dataOffset + h.weightsOffset;
  EXPECT_EQ(0, std::memcmp(wBytes + h.weights[0].offset, w.data(), 128));

  // Names are unique and not the writer's own.
  spec.sections.push_back({"code", "raw", blob.data(), 1});
  EXPECT_NE(writeArtifact(path, spec).find("section 'code'"),
            std::string::npos);
  spec.sections.back().name = "cuda-fatbin";
  EXPECT_NE(writeArtifact(path, spec).find("given twice"), std::string::npos);
}

// Target kind "cuda": the chip and the host triple, no CPU features.
TEST(RuntimeArtifact, CudaTargetHeader) {
  std::vector<char> code(16, 'x');
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  spec.target = ArtifactTarget();
  spec.target.kind = "cuda";
  spec.target.triple = "x86_64-pc-linux-gnu";
  spec.target.chip = "sm_80";
  std::string header = renderArtifactHeader(spec, 0, 64, 0, "");
  EXPECT_NE(header.find("\"target\": {\"kind\": \"cuda\", \"chip\": "
                        "\"sm_80\", \"triple\": \"x86_64-pc-linux-gnu\"}"),
            std::string::npos)
      << header;
  json::Value root;
  std::string err;
  ASSERT_TRUE(json::parse(header, root, err)) << err;
  EXPECT_EQ(root.find("target")->find("cpu"), nullptr);
}

TEST(RuntimeArtifact, SideWeightsAtTheDefaultThresholdStayInline) {
  ArtifactSpec spec;
  EXPECT_EQ(spec.sideWeightsThreshold, 2ull << 30);
}

//===----------------------------------------------------------------------===//
// Bad artifacts
//===----------------------------------------------------------------------===//

struct Mutated {
  std::string path;
  explicit Mutated(const std::string &name,
                   void (*mutate)(std::vector<char> &)) {
    std::vector<char> bytes = test::readFile(goodArtifact());
    mutate(bytes);
    path = tempPath(name);
    writeBytes(path, bytes);
  }
};

void expectLoadError(const std::string &path, kiln_status want,
                     const std::string &fragment) {
  std::string msg;
  kiln_status st = loadStatus(path, msg);
  EXPECT_EQ(st, want) << kiln_status_string(st) << ": " << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos)
      << "message: " << msg << "\nexpected to contain: " << fragment;
}

TEST(RuntimeBadArtifact, TheGoodOneLoads) {
  std::string msg;
  EXPECT_EQ(loadStatus(goodArtifact(), msg), KILN_OK) << msg;
}

TEST(RuntimeBadArtifact, Missing) {
  expectLoadError(tempPath("nope.kiln"), KILN_ERROR_IO, "cannot open");
  expectLoadError(tempDir(), KILN_ERROR_IO, "not a regular file");
  kiln_model *m;
  EXPECT_EQ(kiln_model_load(nullptr, &m), KILN_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeBadArtifact, WrongMagic) {
  Mutated f("magic.kiln", [](std::vector<char> &b) { b[0] = 'X'; });
  expectLoadError(f.path, KILN_ERROR_NOT_ARTIFACT, "not a Kiln artifact");
  Mutated empty("empty.kiln", [](std::vector<char> &b) { b.clear(); });
  expectLoadError(empty.path, KILN_ERROR_NOT_ARTIFACT, "not a Kiln artifact");
  Mutated text("text.kiln", [](std::vector<char> &b) {
    std::string s = "hello, this is not a model at all\n";
    b.assign(s.begin(), s.end());
  });
  expectLoadError(text.path, KILN_ERROR_NOT_ARTIFACT, "not a Kiln artifact");
}

TEST(RuntimeBadArtifact, WrongVersion) {
  Mutated f("version.kiln", [](std::vector<char> &b) { b[8] = 2; });
  expectLoadError(f.path, KILN_ERROR_VERSION,
                  "artifact format version 2, this runtime reads 1");
}

TEST(RuntimeBadArtifact, Truncated) {
  Mutated prefix("trunc1.kiln", [](std::vector<char> &b) { b.resize(20); });
  expectLoadError(prefix.path, KILN_ERROR_TRUNCATED, "truncated");
  Mutated magicOnly("trunc0.kiln", [](std::vector<char> &b) { b.resize(5); });
  expectLoadError(magicOnly.path, KILN_ERROR_TRUNCATED, "truncated");
  Mutated header("trunc2.kiln", [](std::vector<char> &b) { b.resize(100); });
  expectLoadError(header.path, KILN_ERROR_TRUNCATED, "truncated");
  Mutated data("trunc3.kiln",
               [](std::vector<char> &b) { b.resize(b.size() - 10); });
  expectLoadError(data.path, KILN_ERROR_TRUNCATED, "truncated");
  Mutated half("trunc4.kiln",
               [](std::vector<char> &b) { b.resize(b.size() / 2); });
  expectLoadError(half.path, KILN_ERROR_TRUNCATED, "truncated");
}

TEST(RuntimeBadArtifact, Corrupted) {
  Mutated data("corrupt1.kiln", [](std::vector<char> &b) { b.back() ^= 1; });
  expectLoadError(data.path, KILN_ERROR_CORRUPTED, "corrupted");
  Mutated header("corrupt2.kiln", [](std::vector<char> &b) { b[45] ^= 4; });
  expectLoadError(header.path, KILN_ERROR_CORRUPTED, "corrupted");
  Mutated hash("corrupt3.kiln", [](std::vector<char> &b) { b[33] ^= 1; });
  expectLoadError(hash.path, KILN_ERROR_CORRUPTED, "corrupted");
}

std::string writeWithTarget(const std::string &name, ArtifactTarget target) {
  std::vector<char> code = test::readFile(test::kTestModelSo);
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  spec.target = std::move(target);
  std::string path = tempPath(name);
  EXPECT_EQ(writeArtifact(path, spec), "");
  return path;
}

TEST(RuntimeBadArtifact, WrongTarget) {
#if defined(__x86_64__)
  const char *other = "aarch64-unknown-linux-gnu";
  const char *otherArch = "aarch64";
  const char *mine = "x86_64-pc-linux-gnu";
#else
  const char *other = "x86_64-pc-linux-gnu";
  const char *otherArch = "x86_64";
  const char *mine = "aarch64-unknown-linux-gnu";
#endif
  expectLoadError(writeWithTarget("arch.kiln", {"cpu", other, "generic", {}}),
                  KILN_ERROR_UNSUPPORTED_TARGET, otherArch);
  expectLoadError(writeWithTarget("kind.kiln", {"rocm", mine, "gfx90a", {}}),
                  KILN_ERROR_UNSUPPORTED_TARGET, "kind \"rocm\"");
  // A CUDA target must carry its kernels (CudaRuntimeTest loads good ones).
  expectLoadError(
      writeWithTarget("nofatbin.kiln", {"cuda", mine, "", {}, "sm_90"}),
      KILN_ERROR_BAD_HEADER, "without a 'cuda-fatbin' section");
  expectLoadError(
      writeWithTarget("os.kiln", {"cpu", std::string(mine).substr(0, 7) +
                                             "-apple-darwin",
                                  "generic", {}}),
      KILN_ERROR_UNSUPPORTED_TARGET, "not a Linux target");
  expectLoadError(writeWithTarget("unknownfeat.kiln",
                                  {"cpu", mine, "x", {"kiln-no-such-feature"}}),
                  KILN_ERROR_UNSUPPORTED_TARGET,
                  "cannot check CPU features (unknown to this runtime or not "
                  "reported by this host): kiln-no-such-feature");
}

TEST(RuntimeBadArtifact, MissingCpuFeature) {
#if defined(__x86_64__)
  // A feature this host lacks (AMD-only ones first: most CI hosts are
  // Intel; AVX-512 ones for AMD hosts).
  const char *candidates[] = {"sse4a", "fma4", "xop", "avx512vp2intersect",
                              "avx512er", "avx512fp16", "amx-tile"};
  std::string lacking;
  for (const char *f : candidates) {
    bool known;
    if (!hostHasCpuFeature(f, known) && known) {
      lacking = f;
      break;
    }
  }
  if (lacking.empty())
    GTEST_SKIP() << "this host has every candidate feature";
  expectLoadError(writeWithTarget("feat.kiln", {"cpu", "x86_64-pc-linux-gnu",
                                                "test", {"sse2", lacking}}),
                  KILN_ERROR_UNSUPPORTED_TARGET,
                  "CPU features this host lacks: " + lacking);
  // Present features (with LLVM's '+' and a disabled '-' one) pass.
  std::string msg;
  EXPECT_EQ(loadStatus(writeWithTarget("feat2.kiln",
                                       {"cpu", "x86_64-pc-linux-gnu", "test",
                                        {"+sse2", "sse4.1", "-" + lacking}}),
                       msg),
            KILN_OK)
      << msg;
  bool known;
  EXPECT_TRUE(hostHasCpuFeature("sse2", known));
  EXPECT_TRUE(known);
  // Tuning flags need nothing.
  EXPECT_TRUE(hostHasCpuFeature("+fast-gather", known));
  EXPECT_TRUE(hostHasCpuFeature("prefer-256-bit", known));
  EXPECT_TRUE(known);
#else
  GTEST_SKIP() << "x86 feature names";
#endif
}

std::string writeWithCode(const std::string &name,
                          const std::vector<char> &code) {
  std::vector<float> w = test::testWeightW(), b = test::testWeightB();
  ArtifactSpec spec = test::testModelSpec(code, w, b);
  std::string path = tempPath(name);
  EXPECT_EQ(writeArtifact(path, spec), "");
  return path;
}

TEST(RuntimeBadArtifact, BadCode) {
  expectLoadError(
      writeWithCode("noentry.kiln", test::readFile(test::kTestModelNoEntrySo)),
      KILN_ERROR_CODE, "does not export kiln_entry");
  expectLoadError(
      writeWithCode("abi2.kiln", test::readFile(test::kTestModelAbi2So)),
      KILN_ERROR_CODE, "code ABI version 2, this runtime runs version 1");
  std::string junk = "this is not an ELF shared object";
  expectLoadError(
      writeWithCode("junk.kiln", std::vector<char>(junk.begin(), junk.end())),
      KILN_ERROR_CODE, "cannot load it");
}

// dlopen matches loaded objects by path and /proc/self/fd/N paths repeat:
// each load must still get its own code.
TEST(RuntimeBadArtifact, CodeOfDifferentModelsDoesNotAlias) {
  std::string noEntry =
      writeWithCode("alias-noentry.kiln",
                    test::readFile(test::kTestModelNoEntrySo));
  for (int i = 0; i < 3; ++i) {
    std::string msg;
    {
      Model good(goodArtifact()); // loaded while the other one loads
      EXPECT_EQ(loadStatus(noEntry, msg), KILN_ERROR_CODE) << msg;
    }
    EXPECT_EQ(loadStatus(goodArtifact(), msg), KILN_OK) << msg;
    EXPECT_EQ(loadStatus(noEntry, msg), KILN_ERROR_CODE) << msg;
  }
}

const char *kHeaderTemplate = R"({
  "format": "kiln-artifact", "version": 1,
  "compiler": {"name": "t", "version": "0"}, "source": "",
  "target": {"kind": "cpu", "triple": "TRIPLE", "cpu": "", "features": []},
  "options": {}, "pipeline": "", "entry": "kiln_entry",
  "inputs": INPUTS,
  "outputs": [{"name": "y", "dtype": "float32", "shape": [2]}],
  "weights": WEIGHTS,
  "sections": [{"name": "code", "kind": "elf-shared-object", "offset": 0,
                "size": 64},
               {"name": "weights", "kind": "raw", "offset": 64, "size": 64,
                "file": null}]
})";

std::string header(const std::string &inputs, const std::string &weights) {
  std::string h = kHeaderTemplate;
#if defined(__x86_64__)
  const char *triple = "x86_64-pc-linux-gnu";
#else
  const char *triple = "aarch64-unknown-linux-gnu";
#endif
  h.replace(h.find("TRIPLE"), 6, triple);
  h.replace(h.find("INPUTS"), 6, inputs);
  h.replace(h.find("WEIGHTS"), 7, weights);
  return h;
}

void expectHeaderError(const std::string &name, const std::string &text,
                       kiln_status want, const std::string &fragment) {
  std::string path = tempPath(name);
  std::string file = fileWithHeader(text, std::vector<char>(128, 0));
  writeBytes(path, std::vector<char>(file.begin(), file.end()));
  expectLoadError(path, want, fragment);
}

// "aliases": outputs written in an input's buffer (docs/artifact.md).
TEST(RuntimeBadArtifact, BadAliases) {
  const std::string okWeights =
      R"([{"name": "w", "dtype": "float32", "shape": [2], "offset": 0, "size": 8}])";
  auto aliased = [&](const std::string &inputs, const std::string &aliases) {
    std::string h = header(inputs, okWeights);
    h.replace(h.find("\"weights\""), 9, "\"aliases\": " + aliases +
                                               ", \"weights\"");
    return h;
  };
  const std::string x = R"([{"name": "x", "dtype": "float32", "shape": [2]}])";
  // Well-formed: passes every header check (fails at dlopen).
  expectHeaderError("alias-ok.kiln",
                    aliased(x, R"([{"output": "y", "input": "x"}])"),
                    KILN_ERROR_CODE, "cannot load it");
  expectHeaderError("alias-name.kiln",
                    aliased(x, R"([{"output": "y", "input": "z"}])"),
                    KILN_ERROR_BAD_HEADER,
                    "alias of output 'y' and input 'z': no such input");
  expectHeaderError(
      "alias-shape.kiln",
      aliased(R"([{"name": "x", "dtype": "float32", "shape": [3]}])",
              R"([{"output": "y", "input": "x"}])"),
      KILN_ERROR_BAD_HEADER, "their dtypes or shapes differ");
  expectHeaderError(
      "alias-dtype.kiln",
      aliased(R"([{"name": "x", "dtype": "float16", "shape": [2]}])",
              R"([{"output": "y", "input": "x"}])"),
      KILN_ERROR_BAD_HEADER, "their dtypes or shapes differ");
  expectHeaderError(
      "alias-twice.kiln",
      aliased(R"([{"name": "x", "dtype": "float32", "shape": [2]},
                  {"name": "x2", "dtype": "float32", "shape": [2]}])",
              R"([{"output": "y", "input": "x"}, {"output": "y", "input": "x2"}])"),
      KILN_ERROR_BAD_HEADER, "each output and input may alias only once");
  expectHeaderError("alias-kind.kiln", aliased(x, R"(["y"])"),
                    KILN_ERROR_BAD_HEADER,
                    "\"aliases\" entries must be {\"output\", \"input\"}");
}

TEST(RuntimeBadArtifact, BadHeader) {
  const std::string okInputs =
      R"([{"name": "x", "dtype": "float32", "shape": [2]}])";
  const std::string okWeights =
      R"([{"name": "w", "dtype": "float32", "shape": [2], "offset": 0, "size": 8}])";
  // The template itself passes every header check (it fails at dlopen).
  expectHeaderError("hdr-ok.kiln", header(okInputs, okWeights),
                    KILN_ERROR_CODE, "cannot load it");
  expectHeaderError("hdr-json.kiln", "{\"format\": ", KILN_ERROR_BAD_HEADER,
                    "JSON error");
  expectHeaderError("hdr-array.kiln", "[]", KILN_ERROR_BAD_HEADER,
                    "not a JSON object");
  std::string noInputs = header(okInputs, okWeights);
  noInputs.replace(noInputs.find("\"inputs\""), 8, "\"inputz\"");
  expectHeaderError("hdr-noinputs.kiln", noInputs, KILN_ERROR_BAD_HEADER,
                    "missing \"inputs\"");
  // The optional kernel table: ids are the entries' indices, nodes strings.
  auto withKernels = [&](const std::string &kernels) {
    std::string h = header(okInputs, okWeights);
    h.replace(h.find("\"inputs\""), 8, "\"kernels\": " + kernels +
                                            ", \"inputs\"");
    return h;
  };
  expectHeaderError("hdr-kernels-ok.kiln",
                    withKernels(R"([{"id": 0, "name": "k", "category": "gemm",
                                     "onnx_nodes": ["n"]}])"),
                    KILN_ERROR_CODE, "cannot load it");
  expectHeaderError("hdr-kernels-obj.kiln", withKernels("{}"),
                    KILN_ERROR_BAD_HEADER,
                    "\"kernels\" is an object, expected an array");
  expectHeaderError("hdr-kernels-id.kiln",
                    withKernels(R"([{"id": 1, "name": "k", "category": "gemm",
                                     "onnx_nodes": []}])"),
                    KILN_ERROR_BAD_HEADER,
                    "kernel 0: \"id\" is 1, expected the entry's index");
  expectHeaderError("hdr-kernels-nodes.kiln",
                    withKernels(R"([{"id": 0, "name": "k", "category": "gemm",
                                     "onnx_nodes": [3]}])"),
                    KILN_ERROR_BAD_HEADER,
                    "kernel 0: \"onnx_nodes\" entries must be strings");
  expectHeaderError("hdr-kernels-name.kiln",
                    withKernels(R"([{"id": 0, "category": "gemm",
                                     "onnx_nodes": []}])"),
                    KILN_ERROR_BAD_HEADER, "kernel 0: missing \"name\"");
  expectHeaderError(
      "hdr-dtype.kiln",
      header(R"([{"name": "x", "dtype": "complex64", "shape": [2]}])",
             okWeights),
      KILN_ERROR_BAD_HEADER, "input 'x': unknown dtype \"complex64\"");
  expectHeaderError(
      "hdr-dynamic.kiln",
      header(R"([{"name": "x", "dtype": "float32", "shape": [-1, 2]}])",
             okWeights),
      KILN_ERROR_BAD_HEADER,
      "input 'x': dim -1 in its shape; a dynamic dim is a symbol name");
  expectHeaderError(
      "hdr-shape.kiln",
      header(R"([{"name": "x", "dtype": "float32", "shape": [2.5]}])",
             okWeights),
      KILN_ERROR_BAD_HEADER, "shape entries must be integers");
  expectHeaderError(
      "hdr-wsize.kiln",
      header(okInputs, R"([{"name": "w", "dtype": "float32", "shape": [2],
                            "offset": 0, "size": 12}])"),
      KILN_ERROR_BAD_HEADER, "weight 'w': size 12, its dtype and shape need 8");
  expectHeaderError(
      "hdr-walign.kiln",
      header(okInputs, R"([{"name": "w", "dtype": "float32", "shape": [2],
                            "offset": 8, "size": 8}])"),
      KILN_ERROR_BAD_HEADER, "not 64-byte aligned");
  expectHeaderError(
      "hdr-wrange.kiln",
      header(okInputs, R"([{"name": "w", "dtype": "float32", "shape": [32],
                            "offset": 0, "size": 128}])"),
      KILN_ERROR_BAD_HEADER, "outside the weights section");
  std::string bigSection = header(okInputs, okWeights);
  bigSection.replace(bigSection.find("\"size\": 64,"), 11, "\"size\": 640,");
  expectHeaderError("hdr-trunc.kiln", bigSection, KILN_ERROR_TRUNCATED,
                    "section 'weights' ends past the end");
  std::string v2 = header(okInputs, okWeights);
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 7");
  expectHeaderError("hdr-version.kiln", v2, KILN_ERROR_VERSION,
                    "version 7 in the header");
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

TEST(RuntimeRun, EndToEnd) {
  Model model(goodArtifact());
  Session session(model, 2);
  EXPECT_EQ(kiln_session_num_threads(session.get()), 2);
  std::string error;
  EXPECT_TRUE(runAndCheck(session.get(), 1, &error)) << error;
  EXPECT_TRUE(runAndCheck(session.get(), 2, &error)) << error;
  kiln_session_stats stats = session.stats();
  EXPECT_EQ(stats.num_runs, 2u);
  EXPECT_GT(stats.total_run_ns, 0u);
  // The model's scratch buffer went through the runtime's allocator.
  EXPECT_GE(stats.peak_bytes, 4096u);
  EXPECT_EQ(stats.current_bytes, 0u);
  EXPECT_GE(stats.process_peak_bytes, stats.peak_bytes);
}

TEST(RuntimeRun, RuntimeAllocatedOutputsAndAccounting) {
  Model model(goodArtifact());
  Session session(model, 1);
  Inputs in(5);
  std::vector<float> yRef(32);
  int64_t zRef;
  test::testModelReference(in.x.data(), in.s.data(), yRef.data(), &zRef);
  {
    auto outs = session.run({Tensor::of(in.x.data(), {4, 8}),
                             Tensor::of(in.s.data(), {8})});
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(outs[0].data()) % 64, 0u);
    EXPECT_EQ(outs[0].dims(), (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(outs[1].dtype(), KILN_DTYPE_INT64);
    EXPECT_EQ(std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + 32),
              yRef);
    EXPECT_EQ(*outs[1].as<int64_t>(), zRef);
    kiln_session_stats stats = session.stats();
    // Outputs live: 128 + 8 bytes; the scratch buffer came and went.
    EXPECT_EQ(stats.current_bytes, 136u);
    EXPECT_EQ(stats.peak_bytes, 136u + 4096u);
  }
  EXPECT_EQ(session.stats().current_bytes, 0u);

  // An output may outlive its session and model.
  kiln_tensor outs[2] = {};
  {
    Model m2(goodArtifact());
    Session s2(m2, 1);
    kiln_tensor inputs[2] = {{in.x.data(), KILN_DTYPE_FLOAT32, 2, kXDims},
                             {in.s.data(), KILN_DTYPE_INT32, 1, kSDims}};
    ASSERT_EQ(kiln_session_run(s2.get(), inputs, 2, outs, 2), KILN_OK)
        << kiln_last_error();
  }
  EXPECT_EQ(static_cast<float *>(outs[0].data)[3], yRef[3]);
  kiln_tensor_release(&outs[0]);
  kiln_tensor_release(&outs[1]);
  EXPECT_EQ(outs[0].data, nullptr);
}

TEST(RuntimeRun, SessionKeepsTheModelAlive) {
  kiln_model *m;
  ASSERT_EQ(kiln_model_load(goodArtifact().c_str(), &m), KILN_OK);
  kiln_session *s;
  ASSERT_EQ(kiln_session_create(m, nullptr, &s), KILN_OK);
  kiln_model_free(m);
  std::string error;
  EXPECT_TRUE(runAndCheck(s, 4, &error)) << error;
  kiln_session_free(s);
}

TEST(RuntimeRun, SessionOptions) {
  Model model(goodArtifact());
  kiln_session_options o;
  kiln_session_options_init(&o);
  kiln_session *s = nullptr;
  ASSERT_EQ(kiln_session_create(model.get(), &o, &s), KILN_OK);
  EXPECT_GE(kiln_session_num_threads(s), 1);
  kiln_session_free(s);
  o.device = "cpu";
  ASSERT_EQ(kiln_session_create(model.get(), &o, &s), KILN_OK);
  kiln_session_free(s);
  // A CPU artifact runs on the CPU only.
  o.device = "cuda";
  EXPECT_EQ(kiln_session_create(model.get(), &o, &s),
            KILN_ERROR_UNSUPPORTED_TARGET);
  EXPECT_NE(std::string(kiln_last_error()).find("\"cuda\""), std::string::npos);
  o.device = "gpu";
  EXPECT_EQ(kiln_session_create(model.get(), &o, &s),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("\"gpu\""), std::string::npos);
  o.device = "cuda:x";
  EXPECT_EQ(kiln_session_create(model.get(), &o, &s),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("cuda:N"), std::string::npos);
  o.device = "cpu";
  o.num_threads = -3;
  EXPECT_EQ(kiln_session_create(model.get(), &o, &s),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeRun, WrongInputsAreErrors) {
  Model model(goodArtifact());
  Session session(model, 1);
  Inputs in(0);
  std::vector<float> y(32);
  int64_t z;
  kiln_tensor outputs[2] = {{y.data(), KILN_DTYPE_FLOAT32, 2, kYDims},
                            {&z, KILN_DTYPE_INT64, 1, kZDims}};
  auto expectRunError = [&](std::vector<kiln_tensor> inputs,
                            kiln_tensor *outs, size_t nOut, kiln_status want,
                            const std::string &fragment) {
    kiln_status st = kiln_session_run(session.get(), inputs.data(),
                                      inputs.size(), outs, nOut);
    EXPECT_EQ(st, want) << kiln_status_string(st);
    EXPECT_NE(std::string(kiln_last_error()).find(fragment), std::string::npos)
        << "message: " << kiln_last_error() << "\nwanted: " << fragment;
  };
  kiln_tensor x = {in.x.data(), KILN_DTYPE_FLOAT32, 2, kXDims};
  kiln_tensor s = {in.s.data(), KILN_DTYPE_INT32, 1, kSDims};
  expectRunError({x}, outputs, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "1 inputs given, the model has 2");
  expectRunError({x, s}, outputs, 1, KILN_ERROR_TENSOR_MISMATCH,
                 "1 outputs given, the model has 2");
  kiln_tensor xHalf = x;
  xHalf.dtype = KILN_DTYPE_FLOAT16;
  expectRunError({xHalf, s}, outputs, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "input 0 'x': dtype float16 given, the model expects float32");
  const int64_t wrongDims[] = {4, 7};
  kiln_tensor xShape = x;
  xShape.dims = wrongDims;
  expectRunError({xShape, s}, outputs, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "input 0 'x': shape [4, 7] given, the model expects [4, 8]");
  kiln_tensor sRank = s;
  sRank.rank = 2;
  sRank.dims = kXDims;
  expectRunError({x, sRank}, outputs, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "input 1 's': shape [4, 8] given, the model expects [8]");
  kiln_tensor sNull = s;
  sNull.data = nullptr;
  expectRunError({x, sNull}, outputs, 2, KILN_ERROR_INVALID_ARGUMENT,
                 "input 1 's': data is NULL");
  kiln_tensor xOdd = x;
  xOdd.data = reinterpret_cast<char *>(in.x.data()) + 1;
  expectRunError({xOdd, s}, outputs, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "not aligned to its element size");
  kiln_tensor badOut[2] = {outputs[0], outputs[1]};
  badOut[1].dtype = KILN_DTYPE_INT32;
  expectRunError({x, s}, badOut, 2, KILN_ERROR_TENSOR_MISMATCH,
                 "output 1 'z': dtype int32 given, the model expects int64");
  EXPECT_EQ(kiln_session_run(nullptr, nullptr, 0, nullptr, 0),
            KILN_ERROR_INVALID_ARGUMENT);
  // None of the failures counted as a run; a good call still works.
  EXPECT_EQ(session.stats().num_runs, 0u);
  std::string error;
  EXPECT_TRUE(runAndCheck(session.get(), 9, &error)) << error;

  // The C++ wrapper turns the status into an exception.
  try {
    session.run({Tensor::of(in.x.data(), {4, 8})});
    FAIL() << "no exception";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), KILN_ERROR_TENSOR_MISMATCH);
  }
}

TEST(RuntimeRun, OneSessionFromFourThreads) {
  Model model(goodArtifact());
  Session session(model, 1);
  constexpr int kThreads = 4, kRuns = 200;
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads)
        std::this_thread::yield(); // start together
      for (int r = 0; r < kRuns; ++r) {
        // Distinct inputs per thread and run: a mixed-up buffer shows.
        if (!runAndCheck(session.get(), t * 1000 + r, &errors[t]))
          failures.fetch_add(1);
      }
    });
  }
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0) << errors[0] << errors[1];
  kiln_session_stats stats = session.stats();
  EXPECT_EQ(stats.num_runs, uint64_t(kThreads * kRuns));
  EXPECT_EQ(stats.current_bytes, 0u);
  // At most four scratch buffers are live at once.
  EXPECT_GE(stats.peak_bytes, 4096u);
  EXPECT_LE(stats.peak_bytes, 4u * 4096u);
}

// Profiling one session from four threads while a second session of the
// same model runs unprofiled: every launch of the profiled one is counted,
// on its own thread and inside its run; the other records nothing.
TEST(RuntimeRun, ProfileOneSessionFromFourThreads) {
  Model model(goodArtifact());
  std::vector<KernelInfo> kernels = model.kernels();
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[1].name, "add_0");
  EXPECT_EQ(kernels[2].category, "reduction");
  EXPECT_EQ(kernels[1].onnxNodes, (std::vector<std::string>{"Add", "Add_1"}));
  kiln_kernel_info info;
  EXPECT_EQ(kiln_model_kernel_info(model.get(), 3, &info),
            KILN_ERROR_INVALID_ARGUMENT);

  Session profiled(model, 1), plain(model, 1);
  std::string error;
  ASSERT_TRUE(runAndCheck(profiled.get(), 1, &error)) << error; // not profiled
  profiled.setProfiling(true);
  constexpr int kThreads = 4, kRuns = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads + 1);
  for (int t = 0; t <= kThreads; ++t)
    threads.emplace_back([&, t] {
      kiln_session *s = t == kThreads ? plain.get() : profiled.get();
      for (int r = 0; r < kRuns; ++r)
        if (!runAndCheck(s, t * 1000 + r, &errors[t]))
          failures.fetch_add(1);
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0) << errors[0];
  profiled.setProfiling(false);
  ASSERT_TRUE(runAndCheck(profiled.get(), 2, &error)) << error; // not counted

  kiln_profile_summary summary = profiled.profileSummary();
  EXPECT_EQ(summary.runs, uint64_t(kThreads * kRuns));
  EXPECT_EQ(summary.num_events, uint64_t(kThreads * kRuns * 4));
  EXPECT_EQ(summary.dropped_events, 0u);
  EXPECT_LE(summary.kernel_ns, summary.run_ns);
  for (const kiln_kernel_stats &k : profiled.kernelStats()) {
    EXPECT_EQ(k.launches, uint64_t(kThreads * kRuns));
    EXPECT_LE(k.min_ns, k.max_ns);
    EXPECT_LE(k.max_ns, k.total_ns);
  }
  // Each run's kernels follow its event, in order, on its thread.
  std::vector<kiln_profile_event> events = profiled.profileEvents();
  ASSERT_EQ(events.size(), summary.num_events);
  std::set<uint32_t> threadIds;
  for (size_t i = 0; i < events.size(); i += 4) {
    const kiln_profile_event &run = events[i];
    ASSERT_EQ(run.kernel, -1);
    threadIds.insert(run.thread);
    for (int k = 0; k < 3; ++k) {
      const kiln_profile_event &e = events[i + 1 + size_t(k)];
      EXPECT_EQ(e.kernel, k);
      EXPECT_EQ(e.thread, run.thread);
      EXPECT_EQ(e.run, run.run);
      EXPECT_GE(e.start_ns, run.start_ns);
      EXPECT_LE(e.end_ns, run.end_ns);
      if (k)
        EXPECT_GE(e.start_ns, events[i + size_t(k)].end_ns);
    }
  }
  EXPECT_EQ(threadIds.size(), size_t(kThreads));

  // The unprofiled session saw nothing; reset clears the profiled one.
  EXPECT_EQ(plain.profileSummary().runs, 0u);
  EXPECT_EQ(plain.kernelStats()[0].launches, 0u);
  profiled.resetProfile();
  EXPECT_EQ(profiled.profileSummary().num_events, 0u);
  EXPECT_EQ(profiled.kernelStats()[0].launches, 0u);
}

// The OpenMP variant: parallel loops inside each run, allocations from the
// worker threads, and four user threads running one session at once (each
// gets its own OpenMP team of the session's thread count).
TEST(RuntimeRun, OpenMPModelFromFourThreads) {
  if (!*test::kTestModelOmpSo)
    GTEST_SKIP() << "built without OpenMP";
  std::string path = tempPath("omp.kiln");
  ASSERT_EQ(test::writeTestArtifact(path, test::kTestModelOmpSo), "");
  kiln_session_stats before{};
  {
    Model model(path);
    Session session(model, 3);
    before = session.stats();
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    std::vector<std::string> errors(4);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int r = 0; r < 50; ++r)
          if (!runAndCheck(session.get(), 7 + t * 100 + r, &errors[t]))
            failures.fetch_add(1);
      });
    for (std::thread &th : threads)
      th.join();
    EXPECT_EQ(failures.load(), 0) << errors[0];
    kiln_session_stats after = session.stats();
    EXPECT_EQ(after.num_runs, 200u);
    EXPECT_EQ(after.current_bytes, 0u);
    // Every block came back, the workers' included.
    EXPECT_EQ(after.process_current_bytes, before.process_current_bytes);
    EXPECT_GE(after.process_peak_bytes, after.peak_bytes);
  }
}

// Random damage to the header with the hash fixed up, so it reaches the
// JSON parser and the field checks: every load must end in a status, never
// a crash.
TEST(RuntimeBadArtifact, RandomHeaderDamageNeverCrashes) {
  std::vector<char> good = test::readFile(goodArtifact());
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | (unsigned char)good[16 + i];
  uint64_t dataOffset = 0;
  for (int i = 7; i >= 0; --i)
    dataOffset = dataOffset << 8 | (unsigned char)good[24 + i];
  const char alphabet[] = "{}[]\":,0123456789-eE.tfn \\ux";
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<char> bytes = good;
    int edits = 1 + int(next() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = 40 + next() % headerSize;
      bytes[at] = alphabet[next() % (sizeof(alphabet) - 1)];
    }
    uint64_t h = kiln_fnv1a64(KILN_FNV1A64_OFFSET_BASIS, bytes.data() + 40,
                              headerSize);
    h = kiln_fnv1a64(h, bytes.data() + dataOffset, bytes.size() - dataOffset);
    for (int i = 0; i < 8; ++i)
      bytes[32 + i] = char(h >> (8 * i));
    std::string path = tempPath("fuzz.kiln");
    writeBytes(path, bytes);
    std::string msg;
    kiln_status st = loadStatus(path, msg);
    if (st == KILN_OK) {
      ++ok;
    } else {
      ++errors;
      EXPECT_FALSE(msg.empty());
    }
  }
  EXPECT_GT(errors, 200); // most edits break the header
}

//===----------------------------------------------------------------------===//
// Kernel profile aggregation (runtime/lib/Profile.cpp)
//===----------------------------------------------------------------------===//

TEST(RuntimeProfile, AggregatesRunsPerKernel) {
  Profile p(3);
  // Run 0: kernel 0 twice (a kernel in a loop), kernel 2 once.
  p.addRun({{0, 0, 0, 100, 150}, {2, 0, 0, 150, 400}, {0, 0, 0, 400, 420}},
           90, 500, 7);
  // Run 1 on another thread: kernel 0 once; an unknown kernel and a
  // backwards interval are ignored.
  p.addRun({{0, 0, 0, 1000, 1100}, {5, 0, 0, 1000, 1001},
            {1, 0, 0, 1200, 1100}},
           990, 1300, 8);
  kiln_profile_summary s;
  p.summary(s);
  EXPECT_EQ(s.runs, 2u);
  EXPECT_EQ(s.run_ns, 410u + 310u);
  EXPECT_EQ(s.kernel_ns, 50u + 250u + 20u + 100u);
  EXPECT_EQ(s.dropped_events, 0u);
  kiln_kernel_stats k;
  ASSERT_TRUE(p.kernelStats(0, k));
  EXPECT_EQ(k.launches, 3u);
  EXPECT_EQ(k.total_ns, 170u);
  EXPECT_EQ(k.min_ns, 20u);
  EXPECT_EQ(k.max_ns, 100u);
  ASSERT_TRUE(p.kernelStats(1, k));
  EXPECT_EQ(k.launches, 0u);
  EXPECT_EQ(k.min_ns, 0u); // never launched: 0, not UINT64_MAX
  ASSERT_TRUE(p.kernelStats(2, k));
  EXPECT_EQ(k.total_ns, 250u);
  EXPECT_FALSE(p.kernelStats(3, k));

  // The timeline: each run's event, then its kernels, tagged with the run
  // and the thread.
  ASSERT_EQ(s.num_events, 2u + 3u + 1u);
  std::vector<kiln_profile_event> e(s.num_events);
  ASSERT_EQ(p.events(0, e.size(), e.data()), e.size());
  EXPECT_EQ(e[0].kernel, -1);
  EXPECT_EQ(e[0].start_ns, 90u);
  EXPECT_EQ(e[0].end_ns, 500u);
  EXPECT_EQ(e[2].kernel, 2);
  EXPECT_EQ(e[2].thread, 7u);
  EXPECT_EQ(e[4].kernel, -1);
  EXPECT_EQ(e[4].run, 1u);
  EXPECT_EQ(e[5].kernel, 0);
  EXPECT_EQ(e[5].run, 1u);
  EXPECT_EQ(e[5].thread, 8u);
  EXPECT_EQ(p.events(5, 10, e.data()), 1u);
  EXPECT_EQ(p.events(6, 10, e.data()), 0u);

  p.reset();
  p.summary(s);
  EXPECT_EQ(s.runs, 0u);
  EXPECT_EQ(s.num_events, 0u);
  ASSERT_TRUE(p.kernelStats(0, k));
  EXPECT_EQ(k.launches, 0u);
}

TEST(RuntimeProfile, EventCapDropsButStillCounts) {
  Profile p(1, /*maxEvents=*/4);
  for (int run = 0; run < 3; ++run)
    p.addRun({{0, 0, 0, 10, 20}, {0, 0, 0, 20, 40}}, 0, 50, 1);
  kiln_profile_summary s;
  p.summary(s);
  EXPECT_EQ(s.num_events, 4u);
  EXPECT_EQ(s.dropped_events, 9u - 4u);
  kiln_kernel_stats k;
  ASSERT_TRUE(p.kernelStats(0, k));
  EXPECT_EQ(k.launches, 6u);
  EXPECT_EQ(k.total_ns, 90u);
}

TEST(RuntimeProfile, ConcurrentRunsAllCount) {
  Profile p(2);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t)
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 250; ++i)
        p.addRun({{0, 0, 0, 0, 3}, {1, 0, 0, 3, 10}}, 0, 10, t);
    });
  for (std::thread &t : threads)
    t.join();
  kiln_profile_summary s;
  p.summary(s);
  EXPECT_EQ(s.runs, 1000u);
  EXPECT_EQ(s.kernel_ns, 10000u);
  kiln_kernel_stats k;
  ASSERT_TRUE(p.kernelStats(1, k));
  EXPECT_EQ(k.launches, 1000u);
  EXPECT_EQ(k.total_ns, 7000u);
}

} // namespace

//===----------------------------------------------------------------------===//
// Symbolic dims (test/Runtime/TestDynamicModel.c)
//===----------------------------------------------------------------------===//

namespace {

TEST(RuntimeShapeExpr, Constraints) {
  const std::vector<std::string> symbols = {"past", "seq", "total"};
  const int64_t good[] = {3, 1, 4}, bad[] = {3, 1, 10};
  std::string err;
  ShapeConstraint eq, le;
  ASSERT_TRUE(parseShapeConstraint("past + seq == total", symbols, eq, err))
      << err;
  EXPECT_TRUE(eq.equal);
  EXPECT_TRUE(eq.check(good, 3, err)) << err;
  EXPECT_FALSE(eq.check(bad, 3, err));
  EXPECT_EQ(err, "4 != 10");
  ASSERT_TRUE(parseShapeConstraint("past + seq <= total", symbols, le, err))
      << err;
  EXPECT_FALSE(le.equal);
  EXPECT_TRUE(le.check(bad, 3, err)) << err;
  ShapeConstraint x;
  EXPECT_FALSE(parseShapeConstraint("past <= seq == total", symbols, x, err));
  EXPECT_FALSE(parseShapeConstraint("past == seq == total", symbols, x, err));
  EXPECT_FALSE(parseShapeConstraint("past < seq", symbols, x, err));
  EXPECT_EQ(err, "expected one 'lhs <= rhs' or 'lhs == rhs'");
}

TEST(RuntimeShapeExpr, ParsesAndEvaluates) {
  const std::vector<std::string> symbols = {"n", "m", "h.w"};
  const int64_t values[] = {7, 3, 10};
  auto eval = [&](const std::string &text) -> int64_t {
    ShapeExpr e;
    std::string err;
    EXPECT_TRUE(parseShapeExpr(text, symbols, e, err)) << text << ": " << err;
    int64_t v = -12345;
    EXPECT_TRUE(e.evaluate(values, 3, v, err)) << text << ": " << err;
    EXPECT_EQ(e.text, text);
    return v;
  };
  EXPECT_EQ(eval("n"), 7);
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("n * m"), 21);
  EXPECT_EQ(eval("n + m * 2"), 13);   // * before +
  EXPECT_EQ(eval("(n + m) * 2"), 20);
  EXPECT_EQ(eval("n - m - 1"), 3);    // left to right
  EXPECT_EQ(eval("n / 2"), 3);
  EXPECT_EQ(eval("n % 4"), 3);
  EXPECT_EQ(eval("(h.w + 2 - 3) / 2 + 1"), 5);
  EXPECT_EQ(eval("(m - n) / 2 + 5"), 3);  // floor: -4 / 2 = -2
  EXPECT_EQ(eval("(m - n - 1) / 2 + 5"), 2); // -5 / 2 floors to -3
  EXPECT_EQ(eval("(m - n) % 3"), 2);      // -4 % 3 is 2
  EXPECT_EQ(eval("((((n))))"), 7);
  int64_t index;
  ShapeExpr e;
  std::string err;
  ASSERT_TRUE(parseShapeExpr("m", symbols, e, err));
  EXPECT_TRUE(e.isSymbol(index));
  EXPECT_EQ(index, 1);
  ASSERT_TRUE(parseShapeExpr("m + 0", symbols, e, err));
  EXPECT_FALSE(e.isSymbol(index));

  auto parseError = [&](const std::string &text, const std::string &want) {
    ShapeExpr x;
    std::string error;
    EXPECT_FALSE(parseShapeExpr(text, symbols, x, error)) << text;
    EXPECT_NE(error.find(want), std::string::npos)
        << text << ": " << error << "\nwanted: " << want;
  };
  parseError("", "found the end");
  parseError("n +", "found the end");
  parseError("q * 2", "unknown symbol 'q' at offset 0");
  parseError("n m", "unexpected 'm' at offset 2");
  parseError("(n + 1", "expected ')'");
  parseError("n)", "unexpected ')'");
  parseError("-n", "no negative numbers");
  parseError("2n", "a number followed by a name");
  parseError("n ^ 2", "unexpected '^'");
  parseError("99999999999999999999", "integer literal too large");
  parseError(std::string(200, '(') + "n" + std::string(200, ')'),
             "nested deeper than 64");

  auto evalError = [&](const std::string &text, const std::string &want) {
    ShapeExpr x;
    std::string error;
    ASSERT_TRUE(parseShapeExpr(text, symbols, x, error)) << error;
    int64_t v;
    EXPECT_FALSE(x.evaluate(values, 3, v, error)) << text << " = " << v;
    EXPECT_NE(error.find(want), std::string::npos)
        << text << ": " << error << "\nwanted: " << want;
  };
  evalError("m - n", "is negative (-4)");
  evalError("n / (m - 3)", "divides by zero");
  evalError("n % (m - 4)", "divides by a negative value (-1)");
  evalError("4611686018427387904 * 2", "overflows");
  evalError("9223372036854775807 + n", "overflows");
}

TEST(RuntimeShapeExpr, SymbolNames) {
  EXPECT_TRUE(isShapeSymbolName("batch"));
  EXPECT_TRUE(isShapeSymbolName("_x.y2"));
  EXPECT_FALSE(isShapeSymbolName(""));
  EXPECT_FALSE(isShapeSymbolName("2x"));
  EXPECT_FALSE(isShapeSymbolName("a b"));
  EXPECT_FALSE(isShapeSymbolName("a-b"));
  EXPECT_EQ(checkShapeSymbols({"a", "b"}), "");
  EXPECT_NE(checkShapeSymbols({"a", "a"}).find("listed twice"),
            std::string::npos);
  EXPECT_NE(checkShapeSymbols({"a*b"}).find("is not a name"),
            std::string::npos);
}

std::string dynamicArtifact() {
  static std::string path = [] {
    std::string p = tempPath("dynamic.kiln");
    EXPECT_EQ(test::writeTestDynamicArtifact(p), "");
    return p;
  }();
  return path;
}

TEST(RuntimeDynamic, WriterReaderRoundTrip) {
  std::vector<char> file = test::readFile(dynamicArtifact());
  ASSERT_FALSE(file.empty());
  ArtifactHeader h;
  std::string err;
  ASSERT_EQ(parseArtifact(reinterpret_cast<unsigned char *>(file.data()),
                          file.size(), h, err),
            KILN_OK)
      << err;
  EXPECT_NE(h.json.find("\"symbols\": [\"n\", \"m\"]"), std::string::npos)
      << h.json;
  EXPECT_NE(h.json.find("\"shape\": [\"n\", \"m * 2\"]"), std::string::npos)
      << h.json;
  EXPECT_NE(h.json.find("\"shape\": [1, \"m\"]"), std::string::npos) << h.json;
  EXPECT_EQ(h.symbols, (std::vector<std::string>{"n", "m"}));
  ASSERT_EQ(h.inputs.size(), 2u);
  EXPECT_EQ(h.inputs[1].shape, (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(h.inputs[1].dimName(0), "");
  EXPECT_EQ(h.inputs[1].dimName(1), "m");
  ASSERT_EQ(h.outputs.size(), 3u);
  EXPECT_EQ(h.outputs[1].dimName(0), "(n + 1) / 2");
  EXPECT_FALSE(h.outputs[2].isSymbolic());
  EXPECT_EQ(h.outputs[2].bytes, 8u);

  // The C API: -1 dims, names and expressions, NULL for static dims and
  // bad indices.
  Model model(dynamicArtifact());
  kiln_tensor_info info;
  ASSERT_EQ(kiln_model_output_info(model.get(), 0, &info), KILN_OK);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_EQ(info.dims[1], -1);
  EXPECT_STREQ(kiln_model_input_dim_name(model.get(), 0, 0), "n");
  EXPECT_STREQ(kiln_model_output_dim_name(model.get(), 0, 1), "m * 2");
  EXPECT_EQ(kiln_model_input_dim_name(model.get(), 1, 0), nullptr);
  EXPECT_EQ(kiln_model_output_dim_name(model.get(), 2, 0), nullptr);
  EXPECT_EQ(kiln_model_input_dim_name(model.get(), 5, 0), nullptr);
  EXPECT_EQ(kiln_model_input_dim_name(model.get(), 0, 2), nullptr);
  EXPECT_EQ(kiln_model_input_dim_name(model.get(), 0, -1), nullptr);
  EXPECT_EQ(kiln_model_input_dim_name(nullptr, 0, 0), nullptr);
  // The C++ wrapper.
  auto outs = model.outputs();
  EXPECT_EQ(outs[1].dimNames,
            (std::vector<std::string>{"(n + 1) / 2", "m"}));
  EXPECT_TRUE(outs[1].isSymbolic());
  EXPECT_FALSE(outs[2].isSymbolic());
  EXPECT_EQ(model.inputs()[1].dims, (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(model.inputDimName(1, 1), "m");
  EXPECT_EQ(model.inputDimName(1, 0), "");
  // A static model has none.
  Model stat(goodArtifact());
  EXPECT_EQ(kiln_model_input_dim_name(stat.get(), 0, 0), nullptr);
  EXPECT_FALSE(stat.inputs()[0].isSymbolic());
}

TEST(RuntimeDynamic, WriterRejectsBadSymbolicSpecs) {
  std::vector<char> code = test::readFile(test::kTestDynamicModelSo);
  ASSERT_FALSE(code.empty());
  const float w = 1;
  std::string path = tempPath("bad-dyn.kiln");
  auto expectWriteError = [&](const ArtifactSpec &spec,
                              const std::string &want) {
    std::string err = writeArtifact(path, spec);
    EXPECT_NE(err.find(want), std::string::npos)
        << "error: " << err << "\nwanted: " << want;
  };
  ArtifactSpec spec = test::testDynamicModelSpec(code, &w);
  spec.inputs[0].dimNames[0] = "q";
  expectWriteError(spec, "input 'x': dim 0: bad expression \"q\": unknown "
                         "symbol 'q'");
  spec = test::testDynamicModelSpec(code, &w);
  spec.inputs[0].dimNames[0] = "n * 2";
  expectWriteError(spec, "input 'x': dim 0 is \"n * 2\"; an input dim must "
                         "be one of the symbols");
  spec = test::testDynamicModelSpec(code, &w);
  spec.outputs[0].dimNames[1] = "m *";
  expectWriteError(spec, "output 'y': dim 1: bad expression \"m *\"");
  spec = test::testDynamicModelSpec(code, &w);
  spec.symbols.push_back("unused");
  expectWriteError(spec, "symbol 'unused' is the dim of no input");
  spec = test::testDynamicModelSpec(code, &w);
  spec.symbols = {"n", "n"};
  expectWriteError(spec, "listed twice");
  spec = test::testDynamicModelSpec(code, &w);
  spec.inputs[0].dimNames = {"n"};
  expectWriteError(spec, "input 'x': 1 dimNames for 2 dims");
  spec = test::testDynamicModelSpec(code, &w);
  spec.inputs[1].dimNames[1] = "";
  expectWriteError(spec, "input 'b': invalid dim -1 (a dynamic dim needs its "
                         "symbol in dimNames)");
  spec = test::testDynamicModelSpec(code, &w);
  spec.symbols.clear();
  expectWriteError(spec, "but the spec has no symbols");
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(RuntimeBadArtifact, BadSymbolicHeader) {
  const std::string okWeights =
      R"([{"name": "w", "dtype": "float32", "shape": [2], "offset": 0, "size": 8}])";
  // symbols, inputs, outputs (the rest of kHeaderTemplate).
  auto dyn = [&](const std::string &symbols, const std::string &inputs,
                 const std::string &outputs) {
    std::string h = header(inputs, okWeights);
    const std::string y =
        R"([{"name": "y", "dtype": "float32", "shape": [2]}])";
    h.replace(h.find(y), y.size(), outputs);
    if (!symbols.empty())
      h.replace(h.find("\"inputs\""), 8, "\"symbols\": " + symbols +
                                             ", \"inputs\"");
    return h;
  };
  const std::string in =
      R"([{"name": "x", "dtype": "float32", "shape": ["n", 4]}])";
  const std::string out =
      R"([{"name": "y", "dtype": "float32", "shape": ["n * 2", 4]}])";
  // Well-formed: passes every header check (fails at dlopen).
  expectHeaderError("sym-ok.kiln", dyn(R"(["n"])", in, out), KILN_ERROR_CODE,
                    "cannot load it");
  // "constraints": "lhs <= rhs" over the symbols.
  auto constrained = [&](const std::string &constraints) {
    std::string h = dyn(R"(["n"])", in, out);
    h.replace(h.find("\"inputs\""), 8,
              "\"constraints\": " + constraints + ", \"inputs\"");
    return h;
  };
  expectHeaderError("sym-constraint-ok.kiln", constrained(R"(["n <= 64"])"),
                    KILN_ERROR_CODE, "cannot load it");
  expectHeaderError("sym-constraint-symbol.kiln",
                    constrained(R"(["n <= k * 2"])"), KILN_ERROR_BAD_HEADER,
                    "constraint \"n <= k * 2\": right side:");
  expectHeaderError("sym-constraint-op.kiln", constrained(R"(["n < 3"])"),
                    KILN_ERROR_BAD_HEADER,
                    "constraint \"n < 3\": expected one 'lhs <= rhs'");
  expectHeaderError("sym-constraint-kind.kiln", constrained("[3]"),
                    KILN_ERROR_BAD_HEADER,
                    "\"constraints\" entries must be strings");
  expectHeaderError(
      "sym-unknown-in.kiln",
      dyn(R"(["n"])",
          R"([{"name": "x", "dtype": "float32", "shape": ["n", "k"]}])", out),
      KILN_ERROR_BAD_HEADER,
      "input 'x': dim 1: unknown symbol 'k' (the symbols are n)");
  expectHeaderError(
      "sym-unknown-out.kiln",
      dyn(R"(["n"])", in,
          R"([{"name": "y", "dtype": "float32", "shape": ["n * k"]}])"),
      KILN_ERROR_BAD_HEADER,
      "output 'y': dim 0: bad expression \"n * k\": unknown symbol 'k' at "
      "offset 4");
  expectHeaderError(
      "sym-bad-expr.kiln",
      dyn(R"(["n"])", in,
          R"([{"name": "y", "dtype": "float32", "shape": ["(n + 1"]}])"),
      KILN_ERROR_BAD_HEADER,
      "output 'y': dim 0: bad expression \"(n + 1\": expected ')'");
  expectHeaderError(
      "sym-expr-input.kiln",
      dyn(R"(["n"])",
          R"([{"name": "x", "dtype": "float32", "shape": ["n + 1"]}])", out),
      KILN_ERROR_BAD_HEADER,
      "input 'x': dim 0 is \"n + 1\"; an input dim must be one of the "
      "symbols, not an expression");
  expectHeaderError("sym-unused.kiln", dyn(R"(["n", "seq"])", in, out),
                    KILN_ERROR_BAD_HEADER,
                    "symbol 'seq' is the dim of no input");
  // Symbols on a static artifact: none is used.
  expectHeaderError(
      "sym-static.kiln",
      dyn(R"(["n"])",
          R"([{"name": "x", "dtype": "float32", "shape": [2, 4]}])",
          R"([{"name": "y", "dtype": "float32", "shape": [2]}])"),
      KILN_ERROR_BAD_HEADER, "symbol 'n' is the dim of no input");
  expectHeaderError("sym-none.kiln", dyn("", in, out), KILN_ERROR_BAD_HEADER,
                    "input 'x': dim 0 is \"n\" but the header declares no "
                    "\"symbols\"");
  expectHeaderError("sym-empty.kiln", dyn("[]", in, out),
                    KILN_ERROR_BAD_HEADER, "declares no \"symbols\"");
  expectHeaderError("sym-notarray.kiln", dyn(R"("n")", in, out),
                    KILN_ERROR_BAD_HEADER,
                    "\"symbols\" must be an array of names");
  expectHeaderError("sym-notstring.kiln", dyn("[1]", in, out),
                    KILN_ERROR_BAD_HEADER,
                    "\"symbols\" entries must be strings");
  expectHeaderError("sym-twice.kiln", dyn(R"(["n", "n"])", in, out),
                    KILN_ERROR_BAD_HEADER, "symbol 'n' is listed twice");
  expectHeaderError("sym-name.kiln", dyn(R"(["n", "a b"])", in, out),
                    KILN_ERROR_BAD_HEADER,
                    "symbol \"a b\" is not a name");
  std::string weightSym = dyn(R"(["n"])", in, out);
  weightSym.replace(weightSym.find("\"shape\": [2], \"offset\""), 12,
                    "\"shape\": [\"n\"]");
  expectHeaderError("sym-weight.kiln", weightSym, KILN_ERROR_BAD_HEADER,
                    "weight 'w': dim 0 is \"n\"; weights have static shapes");
  expectHeaderError(
      "sym-float.kiln",
      dyn(R"(["n"])",
          R"([{"name": "x", "dtype": "float32", "shape": ["n", 4.5]}])", out),
      KILN_ERROR_BAD_HEADER, "shape entries must be integers or symbol "
                             "strings");
}

struct DynInputs {
  int64_t n, m;
  std::vector<float> x, b;
  int64_t xDims[2], bDims[2];
  DynInputs(int64_t n_, int64_t m_, int seed) : n(n_), m(m_) {
    x.resize(size_t(n * m));
    b.resize(size_t(m));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float((int64_t(i) * 7 + seed * 13) % 23) * 0.25f - 2.0f;
    for (size_t j = 0; j < b.size(); ++j)
      b[j] = float(int64_t(j) * 3 + seed) * 0.5f;
    xDims[0] = n;
    xDims[1] = m;
    bDims[0] = 1;
    bDims[1] = m;
  }
  std::vector<kiln_tensor> tensors() {
    return {{x.data(), KILN_DTYPE_FLOAT32, 2, xDims},
            {b.data(), KILN_DTYPE_FLOAT32, 2, bDims}};
  }
};

// Runs at (n, m) with runtime-allocated outputs and checks values and dims.
void runDynamic(kiln_session *session, int64_t n, int64_t m, int seed,
                std::string &failure) {
  DynInputs in(n, m, seed);
  std::vector<kiln_tensor> inputs = in.tensors();
  kiln_tensor outs[3] = {};
  if (kiln_session_run(session, inputs.data(), 2, outs, 3) != KILN_OK) {
    failure = kiln_last_error();
    return;
  }
  int64_t half = (n + 1) / 2;
  std::vector<float> y(size_t(n * 2 * m)), even(size_t(half * m));
  int64_t count;
  test::testDynamicModelReference(n, m, in.x.data(), in.b.data(), y.data(),
                                  even.data(), &count);
  std::vector<int64_t> yDims(outs[0].dims, outs[0].dims + outs[0].rank),
      evenDims(outs[1].dims, outs[1].dims + outs[1].rank),
      countDims(outs[2].dims, outs[2].dims + outs[2].rank);
  if (yDims != std::vector<int64_t>{n, 2 * m} ||
      evenDims != std::vector<int64_t>{half, m} ||
      countDims != std::vector<int64_t>{1})
    failure = "wrong output dims at n=" + std::to_string(n) +
              ", m=" + std::to_string(m);
  // memcmp's pointers must not be null even for 0 bytes (UBSan): an empty
  // output's data may be.
  else if ((!y.empty() &&
            std::memcmp(outs[0].data, y.data(), y.size() * 4) != 0) ||
           (!even.empty() &&
            std::memcmp(outs[1].data, even.data(), even.size() * 4) != 0) ||
           *static_cast<int64_t *>(outs[2].data) != count)
    failure = "wrong values at n=" + std::to_string(n) +
              ", m=" + std::to_string(m);
  for (kiln_tensor &t : outs)
    kiln_tensor_release(&t);
}

TEST(RuntimeDynamic, ASymbolOfZeroRunsOnEmptyTensors) {
  // An empty KV cache before the prompt: a symbol of 0 gives empty outputs.
  Model model(dynamicArtifact());
  Session session(model, 1);
  std::string failure;
  runDynamic(session.get(), 0, 3, 1, failure);
  EXPECT_EQ(failure, "");
  runDynamic(session.get(), 2, 3, 1, failure); // and then a non-empty run
  EXPECT_EQ(failure, "");
}

TEST(RuntimeDynamic, RunsAtThreeShapes) {
  Model model(dynamicArtifact());
  Session session(model, 1);
  const int64_t shapes[][2] = {{1, 1}, {4, 3}, {7, 16}};
  for (const auto &nm : shapes) {
    std::string failure;
    runDynamic(session.get(), nm[0], nm[1], int(nm[0] + nm[1]), failure);
    EXPECT_EQ(failure, "") << "n=" << nm[0] << " m=" << nm[1];
  }
  // The intermediate of n * m floats came and went each time.
  kiln_session_stats stats = session.stats();
  EXPECT_EQ(stats.num_runs, 3u);
  EXPECT_EQ(stats.current_bytes, 0u);
  // 7 x 16: y (896 bytes), even (256) and count (8) live with the scratch
  // buffer (448).
  EXPECT_EQ(stats.peak_bytes, 896u + 256u + 8u + 448u);

  // Caller-provided outputs of the right shape for this run.
  DynInputs in(5, 2, 3);
  std::vector<kiln_tensor> inputs = in.tensors();
  std::vector<float> y(20, -1), even(6, -1), yRef(20), evenRef(6);
  int64_t count = -1, countRef;
  const int64_t yDims[] = {5, 4}, evenDims[] = {3, 2}, countDims[] = {1};
  kiln_tensor outs[3] = {{y.data(), KILN_DTYPE_FLOAT32, 2, yDims},
                         {even.data(), KILN_DTYPE_FLOAT32, 2, evenDims},
                         {&count, KILN_DTYPE_INT64, 1, countDims}};
  ASSERT_EQ(kiln_session_run(session.get(), inputs.data(), 2, outs, 3),
            KILN_OK)
      << kiln_last_error();
  test::testDynamicModelReference(5, 2, in.x.data(), in.b.data(),
                                  yRef.data(), evenRef.data(), &countRef);
  EXPECT_EQ(y, yRef);
  EXPECT_EQ(even, evenRef);
  EXPECT_EQ(count, 10);
}

TEST(RuntimeDynamic, RuntimeAllocatedOutputsOwnTheirDims) {
  kiln_tensor outs[3] = {};
  {
    Model model(dynamicArtifact());
    Session session(model, 1);
    DynInputs in(3, 5, 1);
    std::vector<kiln_tensor> inputs = in.tensors();
    ASSERT_EQ(kiln_session_run(session.get(), inputs.data(), 2, outs, 3),
              KILN_OK)
        << kiln_last_error();
    // Reused as caller-provided buffers (kiln-run does so): the dims the
    // runtime wrote describe them.
    ASSERT_EQ(kiln_session_run(session.get(), inputs.data(), 2, outs, 3),
              KILN_OK)
        << kiln_last_error();
    // ... but not for another shape.
    DynInputs other(4, 5, 1);
    std::vector<kiln_tensor> otherInputs = other.tensors();
    EXPECT_EQ(kiln_session_run(session.get(), otherInputs.data(), 2, outs, 3),
              KILN_ERROR_TENSOR_MISMATCH);
    EXPECT_STREQ(kiln_last_error(),
                 "output 0 'y': shape [3, 10] given, the model expects "
                 "[4, 10] ([n, m * 2] for n=4, m=5)");
  }
  // The session and the model are gone; the dims live with the data.
  ASSERT_EQ(outs[0].rank, 2);
  EXPECT_EQ(outs[0].dims[0], 3);
  EXPECT_EQ(outs[0].dims[1], 10);
  EXPECT_EQ(outs[1].dims[0], 2);
  EXPECT_EQ(outs[1].dims[1], 5);
  EXPECT_EQ(outs[2].rank, 1);
  EXPECT_EQ(outs[2].dims[0], 1);
  EXPECT_EQ(*static_cast<int64_t *>(outs[2].data), 15);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(outs[0].data) % 64, 0u);
  for (kiln_tensor &t : outs)
    kiln_tensor_release(&t);

  // A static model's outputs own theirs too.
  kiln_tensor staticOuts[2] = {};
  {
    Model model(goodArtifact());
    Session session(model, 1);
    Inputs in(2);
    kiln_tensor inputs[2] = {{in.x.data(), KILN_DTYPE_FLOAT32, 2, kXDims},
                             {in.s.data(), KILN_DTYPE_INT32, 1, kSDims}};
    ASSERT_EQ(kiln_session_run(session.get(), inputs, 2, staticOuts, 2),
              KILN_OK);
  }
  EXPECT_EQ(staticOuts[0].dims[0], 4);
  EXPECT_EQ(staticOuts[0].dims[1], 8);
  EXPECT_EQ(staticOuts[1].dims[0], 1);
  for (kiln_tensor &t : staticOuts)
    kiln_tensor_release(&t);
}

TEST(RuntimeDynamic, WrongShapesAreErrors) {
  Model model(dynamicArtifact());
  Session session(model, 1);
  DynInputs in(3, 4, 0);
  auto expectRunError = [&](std::vector<kiln_tensor> inputs,
                            kiln_tensor *outs, kiln_status want,
                            const std::string &message) {
    kiln_tensor none[3] = {};
    kiln_status st = kiln_session_run(session.get(), inputs.data(),
                                      inputs.size(), outs ? outs : none, 3);
    EXPECT_EQ(st, want) << kiln_status_string(st);
    EXPECT_EQ(std::string(kiln_last_error()), message);
    for (kiln_tensor &t : none)
      kiln_tensor_release(&t);
  };
  std::vector<kiln_tensor> good = in.tensors();
  // A symbol conflict between two inputs: b's m is 5, x's 4.
  std::vector<float> b5(5);
  const int64_t b5Dims[] = {1, 5};
  std::vector<kiln_tensor> conflict = good;
  conflict[1] = {b5.data(), KILN_DTYPE_FLOAT32, 2, b5Dims};
  expectRunError(conflict, nullptr, KILN_ERROR_TENSOR_MISMATCH,
                 "input 'b' dim 1 is 5 but 'm' is 4 (from input 'x' dim 1)");
  // Rank mismatch.
  std::vector<kiln_tensor> rank = good;
  rank[0].rank = 1;
  expectRunError(rank, nullptr, KILN_ERROR_TENSOR_MISMATCH,
                 "input 0 'x': shape [3] given, the model expects [n, m]");
  // A static dim of a dynamic input.
  const int64_t b2Dims[] = {2, 4};
  std::vector<kiln_tensor> staticDim = good;
  staticDim[1].dims = b2Dims;
  expectRunError(staticDim, nullptr, KILN_ERROR_TENSOR_MISMATCH,
                 "input 1 'b': shape [2, 4] given, the model expects [1, m]");
  // A negative size.
  std::vector<kiln_tensor> zero = good;
  const int64_t negDims[] = {-2, 4};
  zero[0].dims = negDims;
  expectRunError(zero, nullptr, KILN_ERROR_TENSOR_MISMATCH,
                 "input 0 'x': dim 0 ('n') is -2, not a size");
  // The dtype is checked as before.
  std::vector<kiln_tensor> dtype = good;
  dtype[0].dtype = KILN_DTYPE_FLOAT16;
  expectRunError(dtype, nullptr, KILN_ERROR_TENSOR_MISMATCH,
                 "input 0 'x': dtype float16 given, the model expects "
                 "float32");
  // Caller-provided outputs of a wrong shape.
  std::vector<float> y(24), even(8);
  int64_t count;
  const int64_t yWrong[] = {3, 4}, evenDims[] = {2, 4}, countDims[] = {1};
  kiln_tensor outs[3] = {{y.data(), KILN_DTYPE_FLOAT32, 2, yWrong},
                         {even.data(), KILN_DTYPE_FLOAT32, 2, evenDims},
                         {&count, KILN_DTYPE_INT64, 1, countDims}};
  expectRunError(good, outs, KILN_ERROR_TENSOR_MISMATCH,
                 "output 0 'y': shape [3, 4] given, the model expects "
                 "[3, 8] ([n, m * 2] for n=3, m=4)");
  const int64_t yDims[] = {3, 8}, evenWrong[] = {1, 4};
  outs[0].dims = yDims;
  outs[1].dims = evenWrong;
  expectRunError(good, outs, KILN_ERROR_TENSOR_MISMATCH,
                 "output 1 'even': shape [1, 4] given, the model expects "
                 "[2, 4] ([(n + 1) / 2, m] for n=3, m=4)");
  // None of these ran; the right shapes still do.
  EXPECT_EQ(session.stats().num_runs, 0u);
  outs[1].dims = evenDims;
  ASSERT_EQ(kiln_session_run(session.get(), good.data(), 2, outs, 3), KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(count, 12);
  EXPECT_EQ(session.stats().current_bytes, 0u);
}

// The header's "constraints": what the model's shapes assume of the
// symbols (a slice bound within its dim), checked on every call; the
// writer and the reader take only "lhs <= rhs" over the symbols.
TEST(RuntimeDynamic, ConstraintsAreCheckedOnEveryRun) {
  std::vector<char> code = test::readFile(test::kTestDynamicModelSo);
  ASSERT_FALSE(code.empty());
  const float w = test::kTestDynamicWeight;
  ArtifactSpec spec = test::testDynamicModelSpec(code, &w);
  std::string path = tempPath("constrained.kiln");
  for (const char *bad : {"n < 3", "n <= q", "n <= m <= 3", "<= m"}) {
    spec.constraints = {bad};
    std::string err = writeArtifact(path, spec);
    EXPECT_NE(err.find(std::string("constraint \"") + bad + "\""),
              std::string::npos)
        << bad << ": " << err;
  }
  spec.constraints = {"n <= m * 2", "1 <= m"};
  ASSERT_EQ(writeArtifact(path, spec), "");
  Model model(path);
  Session session(model, 1);
  DynInputs ok(8, 4, 1), broken(9, 4, 1);
  kiln_tensor outs[3] = {};
  std::vector<kiln_tensor> in = ok.tensors();
  ASSERT_EQ(kiln_session_run(session.get(), in.data(), 2, outs, 3), KILN_OK)
      << kiln_last_error();
  for (kiln_tensor &t : outs)
    kiln_tensor_release(&t);
  in = broken.tensors();
  EXPECT_EQ(kiln_session_run(session.get(), in.data(), 2, outs, 3),
            KILN_ERROR_TENSOR_MISMATCH);
  EXPECT_EQ(std::string(kiln_last_error()),
            "the inputs' shapes break the model's constraint 'n <= m * 2' "
            "(9 > 8 for n=9, m=4)");
  EXPECT_EQ(outs[0].data, nullptr);
}

// Four threads run one session, each at its own shapes: the shapes are
// per call.
TEST(RuntimeDynamic, OneSessionFourThreadsDifferentShapes) {
  Model model(dynamicArtifact());
  Session session(model, 1);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 100 && failures[size_t(t)].empty(); ++r)
        runDynamic(session.get(), 1 + (t + r) % 6, 1 + (t * 3 + r) % 9, r,
                   failures[size_t(t)]);
    });
  for (std::thread &th : threads)
    th.join();
  for (const std::string &f : failures)
    EXPECT_EQ(f, "");
  EXPECT_EQ(session.stats().num_runs, 400u);
  EXPECT_EQ(session.stats().current_bytes, 0u);
}

// Random damage to the symbolic part of a dynamic header ("symbols" to
// "weights") with the hash fixed up: every load ends in a status, and the
// expressions of those that load evaluate (or fail) without a crash. (The
// code is not run: a changed output shape would not fit what it writes.)
TEST(RuntimeDynamic, RandomSymbolicDamageNeverCrashes) {
  std::vector<char> good = test::readFile(dynamicArtifact());
  ASSERT_FALSE(good.empty());
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
      v = v << 8 | (unsigned char)good[at + size_t(i)];
    return v;
  };
  uint64_t headerSize = u64(16), dataOffset = u64(24);
  std::string header(good.data() + 40, headerSize);
  size_t from = header.find("\"symbols\""), to = header.find("\"weights\"");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const char alphabet[] = "nm()+-*/%0123456789 \"[],.x";
  uint64_t state = 777;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<char> bytes = good;
    int edits = 1 + int(next() % 3);
    for (int e = 0; e < edits; ++e)
      bytes[40 + from + next() % (to - from)] =
          alphabet[next() % (sizeof(alphabet) - 1)];
    uint64_t h = kiln_fnv1a64(KILN_FNV1A64_OFFSET_BASIS, bytes.data() + 40,
                              headerSize);
    h = kiln_fnv1a64(h, bytes.data() + dataOffset, bytes.size() - dataOffset);
    for (int i = 0; i < 8; ++i)
      bytes[32 + i] = char(h >> (8 * i));
    ArtifactHeader parsed;
    std::string err;
    kiln_status st = parseArtifact(
        reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(),
        parsed, err);
    if (st != KILN_OK) {
      ++errors;
      EXPECT_FALSE(err.empty());
      continue;
    }
    ++ok;
    std::vector<int64_t> values(parsed.symbols.size(), 3);
    for (const TensorDesc &t : parsed.outputs)
      for (const ShapeExpr &e : t.dimExprs) {
        int64_t v;
        std::string why;
        if (!e.empty() && !e.evaluate(values.data(), values.size(), v, why))
          EXPECT_FALSE(why.empty());
      }
    std::string path = tempPath("fuzz-dyn.kiln");
    writeBytes(path, bytes);
    std::string msg;
    EXPECT_EQ(loadStatus(path, msg), KILN_OK) << msg;
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(ok, 0); // some edits keep it valid (a digit for a digit, ...)
}

// A cuda artifact with symbols loads (--info works) but no session opens.
TEST(RuntimeDynamic, CudaArtifactWithSymbolsIsRefused) {
  std::vector<char> code = test::readFile(test::kTestCudaModelSo);
  ASSERT_FALSE(code.empty());
  const float w[4] = {1, 2, 3, 4};
  ArtifactSpec spec;
  spec.compilerVersion = "test";
#if defined(__x86_64__)
  spec.target = {"cuda", "x86_64-pc-linux-gnu", "", {}, "sm_80"};
#else
  spec.target = {"cuda", "aarch64-unknown-linux-gnu", "", {}, "sm_80"};
#endif
  spec.pipeline = "none";
  spec.symbols = {"n"};
  spec.inputs = {{"x", "float32", {-1, 4}, {"n", ""}}};
  spec.outputs = {{"y", "float32", {-1, 4}, {"n", ""}}};
  spec.weights = {{"w", "float32", {4}, w, sizeof(w)}};
  spec.kernelsJson =
      R"([{"id": 0, "name": "k0_add", "category": "elementwise", )"
      R"("onnx_nodes": ["Add"]}])";
  std::string fatbin = test::kFakeFatbin;
  spec.sections.push_back(
      {"cuda-fatbin", "cuda-fatbin", fatbin.c_str(), fatbin.size() + 1});
  spec.code = code.data();
  spec.codeSize = code.size();
  std::string path = tempPath("cuda-dyn.kiln");
  ASSERT_EQ(writeArtifact(path, spec), "");
  kiln_model *m = nullptr;
  kiln_status st = kiln_model_load(path.c_str(), &m);
  if (st == KILN_ERROR_UNSUPPORTED_TARGET)
    GTEST_SKIP() << kiln_last_error();
  ASSERT_EQ(st, KILN_OK) << kiln_last_error();
  kiln_session *s = nullptr;
  EXPECT_EQ(kiln_session_create(m, nullptr, &s),
            KILN_ERROR_UNSUPPORTED_TARGET);
  EXPECT_NE(std::string(kiln_last_error()).find("not supported yet"),
            std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(s, nullptr);
  kiln_model_free(m);
}

} // namespace
