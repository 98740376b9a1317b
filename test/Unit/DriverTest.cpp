//===- DriverTest.cpp - The compiler as a library (kiln/Driver) -----------===//
//
// Invocations compile what kiln-compile compiles, keep their state to
// themselves (two at once, on two threads, give what one at a time gives,
// statistics included), collect diagnostics instead of printing them, and
// read flags as the command line does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Driver/Flags.h"
#include "kiln/Driver/Invocation.h"
#include "kiln/Driver/ProgressPrinter.h"
#include "kiln/Transforms/Statistics.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <thread>

using namespace kiln;

namespace {

std::string corpus(const std::string &name) {
  return std::string(KILN_SOURCE_DIR) + "/test/Fuzz/corpus/onnx-import/" +
         name;
}

struct Result {
  bool ok = false;
  std::string output, diagnostics;
  std::vector<StatisticValue> statistics;
};

Result compile(const std::string &model, Stage stage, CompileOptions options) {
  Result r;
  Invocation inv(options);
  inv.setDebugStream(nullptr);
  r.ok = inv.importFile(model) && inv.run(stage);
  if (r.ok)
    r.output = inv.getOutput();
  r.diagnostics = inv.getDiagnosticsText();
  r.statistics = inv.getStatistics().get();
  return r;
}

CompileOptions o3() {
  CompileOptions options;
  options.optLevel = 3;
  return options;
}

bool sameStatistics(const std::vector<StatisticValue> &a,
                    const std::vector<StatisticValue> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].pass != b[i].pass || a[i].name != b[i].name ||
        a[i].value != b[i].value)
      return false;
  return true;
}

TEST(Driver, GraphStageIsTheOptimizedIR) {
  Result r = compile(corpus("conv_with_strides_padding.onnx"), Stage::Graph,
                     o3());
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_NE(r.output.find("func.func @main"), std::string::npos);
  EXPECT_NE(r.output.find("kiln.conv"), std::string::npos);
  // -O3 prefers channels-last convolutions.
  EXPECT_NE(r.output.find("nhwc"), std::string::npos) << r.output;
}

TEST(Driver, TwoInvocationsOnTwoThreadsGiveWhatEachGivesAlone) {
  std::string a = corpus("conv_with_strides_padding.onnx");
  std::string b = corpus("batchnorm_example.onnx");
  Result aloneA = compile(a, Stage::Linalg, o3());
  Result aloneB = compile(b, Stage::Linalg, CompileOptions());
  ASSERT_TRUE(aloneA.ok) << aloneA.diagnostics;
  ASSERT_TRUE(aloneB.ok) << aloneB.diagnostics;
  EXPECT_NE(aloneA.output, aloneB.output);
  for (int round = 0; round < 3; ++round) {
    Result togetherA, togetherB;
    std::thread ta([&] { togetherA = compile(a, Stage::Linalg, o3()); });
    std::thread tb(
        [&] { togetherB = compile(b, Stage::Linalg, CompileOptions()); });
    ta.join();
    tb.join();
    ASSERT_TRUE(togetherA.ok) << togetherA.diagnostics;
    ASSERT_TRUE(togetherB.ok) << togetherB.diagnostics;
    EXPECT_EQ(aloneA.output, togetherA.output);
    EXPECT_EQ(aloneB.output, togetherB.output);
    // Each invocation counts only its own passes.
    EXPECT_TRUE(sameStatistics(aloneA.statistics, togetherA.statistics));
    EXPECT_TRUE(sameStatistics(aloneB.statistics, togetherB.statistics));
  }
}

TEST(Driver, ArtifactBytesAreTheSameAloneAndConcurrently) {
  std::string a = corpus("gemm_default_scalar_bias.onnx");
  std::string b = corpus("softmax_axis_1.onnx");
  Result aloneA = compile(a, Stage::Artifact, CompileOptions());
  Result aloneB = compile(b, Stage::Artifact, CompileOptions());
  ASSERT_TRUE(aloneA.ok) << aloneA.diagnostics;
  ASSERT_TRUE(aloneB.ok) << aloneB.diagnostics;
  ASSERT_GT(aloneA.output.size(), 64u);
  EXPECT_EQ(aloneA.output.substr(0, 8), std::string("KILNART\0", 8).substr(0, 8))
      << "not an artifact";
  Result togetherA, togetherB;
  std::thread ta(
      [&] { togetherA = compile(a, Stage::Artifact, CompileOptions()); });
  std::thread tb(
      [&] { togetherB = compile(b, Stage::Artifact, CompileOptions()); });
  ta.join();
  tb.join();
  ASSERT_TRUE(togetherA.ok && togetherB.ok)
      << togetherA.diagnostics << togetherB.diagnostics;
  EXPECT_TRUE(aloneA.output == togetherA.output);
  EXPECT_TRUE(aloneB.output == togetherB.output);
}

TEST(Driver, StatisticsBelongToTheInvocation) {
  std::string model = corpus("conv_with_strides_padding.onnx");
  Result first = compile(model, Stage::Graph, o3());
  Result second = compile(model, Stage::Graph, o3());
  ASSERT_TRUE(first.ok && second.ok);
  // A process-wide table would have doubled the counts.
  EXPECT_TRUE(sameStatistics(first.statistics, second.statistics));
  uint64_t total = 0;
  for (const StatisticValue &v : first.statistics)
    total += v.value;
  EXPECT_GT(total, 0u) << "the graph pipeline changed nothing it counts";
}

TEST(Driver, BytesImportAsTheFileDoes) {
  std::string path = corpus("matmul_2d.onnx");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer));
  Invocation fromFile{CompileOptions()}, fromBytes{CompileOptions()};
  ASSERT_TRUE(fromFile.importFile(path) && fromFile.run(Stage::Graph));
  ASSERT_TRUE(fromBytes.importOnnxBytes((*buffer)->getBuffer(), path) &&
              fromBytes.run(Stage::Graph));
  EXPECT_EQ(fromFile.getOutput(), fromBytes.getOutput());
}

TEST(Driver, ErrorsAreCollectedNotPrinted) {
  Invocation missing{CompileOptions()};
  EXPECT_FALSE(missing.importFile("/nonexistent/model.onnx"));
  ASSERT_TRUE(missing.hasErrors());
  EXPECT_NE(missing.getDiagnosticsText().find("/nonexistent/model.onnx"),
            std::string::npos);

  CompileOptions int8;
  int8.precision = Precision::Int8;
  Invocation inv(int8);
  ASSERT_TRUE(inv.importFile(corpus("matmul_2d.onnx")));
  EXPECT_FALSE(inv.run(Stage::Artifact));
  ASSERT_EQ(inv.getDiagnostics().size(), 1u);
  const Diagnostic &d = inv.getDiagnostics()[0];
  EXPECT_TRUE(d.fromDriver);
  EXPECT_EQ(d.severity, Diagnostic::Severity::Error);
  EXPECT_NE(d.message.find("--precision=int8 needs --calibration"),
            std::string::npos);

  Invocation garbage{CompileOptions()};
  EXPECT_FALSE(garbage.importOnnxBytes("not a model", "bytes.onnx"));
  EXPECT_NE(garbage.getDiagnosticsText().find("not a valid ONNX model"),
            std::string::npos);
}

TEST(Driver, NoSourceIsAnError) {
  Invocation inv{CompileOptions()};
  EXPECT_FALSE(inv.run(Stage::Graph));
  EXPECT_TRUE(inv.hasErrors());
}

TEST(DriverFlags, ParseAsTheCommandLineDoes) {
  CompileOptions o;
  std::string error = parseCompileFlags(
      {"--precision=fp16", "-O3", "--disable-pass=cse,kiln-fuse-attention",
       "--input-shapes=x:1x3x224x224", "--no-parallel", "--kernels",
       "library", "--keep-fp32=Softmax", "--keep-fp32=MatMul",
       "--profile-hooks=false"},
      o);
  ASSERT_EQ(error, "");
  EXPECT_EQ(o.precision, Precision::FP16);
  EXPECT_EQ(o.optLevel, 3u);
  EXPECT_EQ(o.disabledPasses,
            (std::vector<std::string>{"cse", "kiln-fuse-attention"}));
  EXPECT_EQ(o.inputShapes["x"], (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_FALSE(o.parallel);
  EXPECT_EQ(o.kernels, KernelStrategy::Library);
  EXPECT_EQ(o.keepFp32, (std::vector<std::string>{"Softmax", "MatMul"}));
  EXPECT_FALSE(o.profileHooks);
}

TEST(DriverFlags, BadFlagsSayWhich) {
  CompileOptions o;
  EXPECT_NE(parseCompileFlags({"--no-such-flag"}, o).find("--no-such-flag"),
            std::string::npos);
  EXPECT_NE(parseCompileFlags({"--precision=fp8"}, o).find("fp8"),
            std::string::npos);
  EXPECT_NE(parseCompileFlags({"-O7"}, o).find("-O0 to -O3"),
            std::string::npos);
  EXPECT_NE(parseCompileFlags({"--input-shapes=x"}, o).find("name:d0xd1"),
            std::string::npos);
  EXPECT_NE(parseCompileFlags({"--cpu"}, o).find("needs a value"),
            std::string::npos);
}

TEST(DriverOptions, ValidateNamesTheFlags) {
  CompileOptions o;
  o.disabledPasses = {"no-such-pass"};
  EXPECT_NE(o.validate(Stage::Graph).find("unknown pass 'no-such-pass'"),
            std::string::npos);
  CompileOptions ptx;
  EXPECT_NE(ptx.validate(Stage::Ptx).find("needs --target=cuda"),
            std::string::npos);
  CompileOptions fine;
  EXPECT_EQ(fine.validate(Stage::Artifact), "");
}

} // namespace

namespace {
TEST(DriverProgress, PlainLinesPerStageWhenNotATerminal) {
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    kiln::ProgressPrinter printer(os, /*enabled=*/true, /*delaySeconds=*/0);
    printer.update({"graph passes", "cse", 1, 0});
    printer.update({"graph passes", "canonicalize", 2, 0});
    printer.update({"auto-keep", "fc1", 1, 2});
    printer.update({"auto-keep", "fc2", 2, 2});
    printer.update({"linking", "", 0, 0});
    printer.finish();
  }
  EXPECT_NE(text.find("graph passes #1: cse\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("canonicalize"), std::string::npos) << text;
  EXPECT_NE(text.find("auto-keep 1/2: fc1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("auto-keep 2/2: fc2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("linking\n"), std::string::npos) << text;
}

TEST(DriverProgress, NothingBeforeTheDelayOrWhenDisabled) {
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    kiln::ProgressPrinter late(os, true, /*delaySeconds=*/3600);
    late.update({"graph passes", "cse", 1, 0});
    late.finish();
    kiln::ProgressPrinter off(os, false, 0);
    off.update({"graph passes", "cse", 1, 0});
    off.finish();
  }
  EXPECT_EQ(text, "");
}

TEST(Driver, ProgressReportsTheStages) {
  std::vector<std::string> stages;
  Invocation inv{CompileOptions()};
  inv.setProgressCallback([&](const Progress &p) {
    if (stages.empty() || stages.back() != p.stage)
      stages.push_back(p.stage);
  });
  ASSERT_TRUE(inv.importFile(corpus("gemm_default_scalar_bias.onnx")));
  ASSERT_TRUE(inv.run(Stage::Artifact)) << inv.getDiagnosticsText();
  EXPECT_EQ(stages, (std::vector<std::string>{"import", "graph passes",
                                              "lowering", "code generation",
                                              "linking"}));
}
} // namespace
