//===- KnownValuesTest.cpp - Unit tests of kiln::getKnownIntValues --------===//
//
// IR is parsed from strings where its ops exist in the dialect; ops of other
// families that the evaluator matches by name (kiln.mul, kiln.cast, ...) are
// built unverified with OperationState, so that the by-name paths are tested
// before those ops exist.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;
using Ints = SmallVector<int64_t>;

class KnownValues : public ::testing::Test {
protected:
  KnownValues() {
    ctx.getOrLoadDialect<kiln::KilnDialect>();
    ctx.getOrLoadDialect<func::FuncDialect>();
    ctx.allowUnregisteredDialects();
  }

  /// Parses `body` as the body of `func.func @f(<args>)` ending in a return
  /// of nothing, and returns the values named by the results of its ops in
  /// order (`values[i]` is the i-th op's first result).
  void parse(StringRef args, StringRef body) {
    std::string text = ("func.func @f(" + args + ") {\n" + body + "\n  return\n}\n").str();
    module = parseSourceString<ModuleOp>(text, &ctx);
    ASSERT_TRUE(module) << text;
    func = cast<func::FuncOp>(module->getBody()->front());
    values.clear();
    for (Operation &op : func.getBody().front().without_terminator())
      values.push_back(op.getNumResults() ? op.getResult(0) : Value());
    builder.emplace(func.getBody().front().getTerminator());
  }

  /// An op of another family, by name, unverified, before the terminator.
  Value make(StringRef name, ValueRange operands, Type resultType) {
    OperationState state(builder->getUnknownLoc(), name);
    state.addOperands(operands);
    state.addTypes(resultType);
    return builder->create(state)->getResult(0);
  }

  Type i64Tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder->getI64Type());
  }

  Ints known(Value v) {
    std::optional<Ints> r = kiln::getKnownIntValues(v);
    EXPECT_TRUE(r.has_value());
    return r.value_or(Ints{});
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  SmallVector<Value> values;
  std::optional<OpBuilder> builder;
};

TEST_F(KnownValues, Constants) {
  parse("", R"(
    %0 = kiln.constant dense<[3, -1, 7]> : tensor<3xi64>
    %1 = kiln.constant dense<5> : tensor<4xi32>
    %2 = kiln.constant dense<[255, 1]> : tensor<2xui8>
    %3 = kiln.constant dense<[true, false]> : tensor<2xi1>
    %4 = kiln.constant dense<-2> : tensor<i8>
    %5 = kiln.constant dense<1> : tensor<300xi64>
    %6 = kiln.constant dense<1.5> : tensor<2xf32>)");
  EXPECT_EQ(known(values[0]), (Ints{3, -1, 7}));
  EXPECT_EQ(known(values[1]), (Ints{5, 5, 5, 5}));
  EXPECT_EQ(known(values[2]), (Ints{255, 1}));
  EXPECT_EQ(known(values[3]), (Ints{1, 0}));
  EXPECT_EQ(known(values[4]), (Ints{-2}));
  EXPECT_FALSE(kiln::getKnownIntValues(values[5]).has_value()) << "over the cap";
  EXPECT_FALSE(kiln::getKnownIntValues(values[6]).has_value()) << "not integer";
  EXPECT_EQ(kiln::getKnownFloatValues(values[6]), (SmallVector<double>{1.5, 1.5}));
}

TEST_F(KnownValues, DenseResource) {
  std::string text = R"(
    func.func @f() {
      %0 = kiln.constant dense_resource<blob> : tensor<2xi32>
      %1 = kiln.constant dense_resource<floats> : tensor<1xf32>
      return
    }
    {-#
      dialect_resources: { builtin: {
        blob: "0x04000000FEFFFFFF09000000",
        floats: "0x040000000000C03F"
      } }
    #-})";
  module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module);
  auto f = cast<func::FuncOp>(module->getBody()->front());
  auto it = f.getBody().front().begin();
  Value ints = it->getResult(0);
  Value floats = std::next(it)->getResult(0);
  EXPECT_EQ(known(ints), (Ints{-2, 9}));
  EXPECT_EQ(kiln::getKnownFloatValues(floats), (SmallVector<double>{1.5}));
}

TEST_F(KnownValues, ShapeOfPartiallyStaticTensor) {
  parse("%x: tensor<?x128x8xf32>", R"(
    %0 = kiln.shape %x : (tensor<?x128x8xf32>) -> tensor<3xi64>
    %1 = kiln.shape %x {start = 1 : i64} : (tensor<?x128x8xf32>) -> tensor<2xi64>
    %2 = kiln.shape %x {start = -2 : i64, end = -1 : i64} : (tensor<?x128x8xf32>) -> tensor<1xi64>
    %3 = kiln.shape %x {start = 5 : i64} : (tensor<?x128x8xf32>) -> tensor<0xi64>
    %4 = kiln.size %x : (tensor<?x128x8xf32>) -> tensor<i64>)");
  EXPECT_EQ(known(values[0]), (Ints{kDyn, 128, 8}));
  EXPECT_EQ(known(values[1]), (Ints{128, 8}));
  EXPECT_EQ(known(values[2]), (Ints{128}));
  EXPECT_EQ(known(values[3]), (Ints{}));
  EXPECT_EQ(known(values[4]), (Ints{kDyn}));
  // The unknown dim is known to be dim 0 of %x.
  auto dims = kiln::getKnownDims(values[0]);
  ASSERT_TRUE(dims);
  EXPECT_TRUE((*dims)[0].isDimOf(func.getArgument(0), 0));
  EXPECT_FALSE((*dims)[1].isDimOf(func.getArgument(0), 1));
}

TEST_F(KnownValues, ExportedViewPattern) {
  parse("%x: tensor<?x128x8xf32>", R"(
    %s = kiln.shape %x : (tensor<?x128x8xf32>) -> tensor<3xi64>
    %i = kiln.constant dense<1> : tensor<i64>
    %d = kiln.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %ax = kiln.constant dense<0> : tensor<1xi64>
    %u = kiln.unsqueeze %d, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %j = kiln.constant dense<[0, -1]> : tensor<2xi64>
    %g = kiln.gather %s, %j {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
    %c = kiln.concat %g, %u {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
    %q = kiln.squeeze %u, %ax : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
    %r = kiln.reshape %c, %ax : (tensor<3xi64>, tensor<1xi64>) -> tensor<3xi64>)");
  EXPECT_EQ(known(values[2]), (Ints{128}));
  EXPECT_EQ(known(values[4]), (Ints{128}));
  EXPECT_EQ(known(values[6]), (Ints{kDyn, 8}));
  EXPECT_EQ(known(values[7]), (Ints{kDyn, 8, 128}));
  EXPECT_EQ(known(values[8]), (Ints{128}));
  EXPECT_EQ(known(values[9]), (Ints{kDyn, 8, 128}));
  auto dims = kiln::getKnownDims(values[7]);
  ASSERT_TRUE(dims);
  EXPECT_TRUE((*dims)[0].isDimOf(func.getArgument(0), 0));
}

TEST_F(KnownValues, GatherOutOfRangeAndUnknownIndex) {
  parse("%x: tensor<2x3xf32>, %i: tensor<1xi64>", R"(
    %s = kiln.shape %x : (tensor<2x3xf32>) -> tensor<2xi64>
    %bad = kiln.constant dense<[5, -2]> : tensor<2xi64>
    %g = kiln.gather %s, %bad : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    %h = kiln.gather %s, %i : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>)");
  EXPECT_EQ(known(values[2]), (Ints{kDyn, 2}));
  EXPECT_EQ(known(values[3]), (Ints{kDyn}));
  EXPECT_EQ(known(func.getArgument(1)), (Ints{kDyn})) << "count from the type";
}

TEST_F(KnownValues, Slice) {
  parse("", R"(
    %v = kiln.constant dense<[1, 2, 3, 4, 5]> : tensor<5xi64>
    %none = kiln.none
    %s = kiln.constant dense<-1> : tensor<1xi64>
    %e = kiln.constant dense<-9223372036854775807> : tensor<1xi64>
    %st = kiln.constant dense<-2> : tensor<1xi64>
    %r = kiln.slice %v, %s, %e, %none, %st : (tensor<5xi64>, tensor<1xi64>, tensor<1xi64>, none, tensor<1xi64>) -> tensor<3xi64>
    %one = kiln.constant dense<1> : tensor<1xi32>
    %max = kiln.constant dense<2147483647> : tensor<1xi32>
    %t = kiln.slice %v, %one, %max, %none, %none : (tensor<5xi64>, tensor<1xi32>, tensor<1xi32>, none, none) -> tensor<4xi64>)");
  EXPECT_EQ(known(values[5]), (Ints{5, 3, 1}));
  EXPECT_EQ(known(values[8]), (Ints{2, 3, 4, 5}));
}

TEST_F(KnownValues, ElementwiseByName) {
  parse("%x: tensor<?x6xf32>", R"(
    %s = kiln.shape %x : (tensor<?x6xf32>) -> tensor<2xi64>
    %a = kiln.constant dense<[-7, 8]> : tensor<2xi64>
    %two = kiln.constant dense<2> : tensor<i64>
    %zero = kiln.constant dense<0> : tensor<i64>
    %sum = kiln.add %s, %a : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>)");
  Value s = values[0], a = values[1], two = values[2], zero = values[3];
  Type vec = i64Tensor({2});
  EXPECT_EQ(known(values[4]), (Ints{kDyn, 14}));
  EXPECT_EQ(known(make("kiln.sub", {a, two}, vec)), (Ints{-9, 6}));
  EXPECT_EQ(known(make("kiln.mul", {two, s}, vec)), (Ints{kDyn, 12}));
  // ONNX Div on integers truncates toward zero (as ONNX Runtime does).
  EXPECT_EQ(known(make("kiln.div", {a, two}, vec)), (Ints{-3, 4}));
  EXPECT_EQ(known(make("kiln.div", {a, zero}, vec)), (Ints{kDyn, kDyn}));
  EXPECT_EQ(known(make("kiln.max", {a, two, zero}, vec)), (Ints{2, 8}));
  EXPECT_EQ(known(make("kiln.min", {a, two}, vec)), (Ints{-7, 2}));
  Type bools = RankedTensorType::get({2}, builder->getI1Type());
  Value eq = make("kiln.equal", {a, make("kiln.identity", {a}, vec)}, bools);
  EXPECT_EQ(known(eq), (Ints{1, 1}));
  Value lt = make("kiln.equal", {s, a}, bools);
  EXPECT_EQ(known(make("kiln.where", {eq, s, a}, vec)), (Ints{kDyn, 6}));
  EXPECT_EQ(known(make("kiln.where", {lt, s, a}, vec)), (Ints{kDyn, 8}));
  EXPECT_EQ(known(make("kiln.neg", {a}, vec)), (Ints{7, -8}));
  EXPECT_EQ(known(make("kiln.abs", {a}, vec)), (Ints{7, 8}));
  EXPECT_EQ(known(make("kiln.neg", {s}, vec)), (Ints{kDyn, -6}));
  EXPECT_EQ(known(make("kiln.relu", {a}, vec)), (Ints{kDyn, kDyn}))
      << "an op the evaluator does not know";
}

TEST_F(KnownValues, CastAndIdentity) {
  parse("", R"(
    %big = kiln.constant dense<[4294967297, -1]> : tensor<2xi64>
    %f = kiln.constant dense<[2.7, -2.7]> : tensor<2xf32>)");
  Value toI32 = make("kiln.cast", {values[0]},
                     RankedTensorType::get({2}, builder->getI32Type()));
  EXPECT_EQ(known(toI32), (Ints{1, -1}));
  Value fromFloat = make("kiln.cast", {values[1]}, i64Tensor({2}));
  EXPECT_EQ(known(fromFloat), (Ints{2, -2}));
  Value toFloat = make("kiln.cast", {toI32},
                       RankedTensorType::get({2}, builder->getF32Type()));
  EXPECT_EQ(kiln::getKnownFloatValues(toFloat), (SmallVector<double>{1, -1}));
  EXPECT_EQ(known(make("kiln.identity", {values[0]}, i64Tensor({2}))),
            (Ints{4294967297, -1}));
}

TEST_F(KnownValues, Generators) {
  parse("", R"(
    %s = kiln.constant dense<[2, 2]> : tensor<2xi64>
    %fill = kiln.constant_of_shape %s {value = dense<3> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x2xi64>
    %v = kiln.constant dense<[[1], [2]]> : tensor<2x1xi64>
    %e = kiln.expand %v, %s : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi64>
    %a = kiln.constant dense<1> : tensor<i64>
    %b = kiln.constant dense<8> : tensor<i64>
    %c = kiln.constant dense<3> : tensor<i64>
    %r = kiln.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>)");
  EXPECT_EQ(known(values[1]), (Ints{3, 3, 3, 3}));
  EXPECT_EQ(known(values[3]), (Ints{1, 1, 2, 2}));
  EXPECT_EQ(known(values[7]), (Ints{1, 4, 7}));
}

TEST_F(KnownValues, DepthAndDagLimits) {
  parse("", R"(
    %c = kiln.constant dense<[1, 2]> : tensor<2xi64>)");
  Type vec = i64Tensor({2});
  Value chain = values[0];
  for (int i = 0; i < 100; ++i)
    chain = make("kiln.identity", {chain}, vec);
  EXPECT_EQ(known(chain), (Ints{kDyn, kDyn})) << "beyond the depth limit";
  // 30 levels of x + x: 2^30 paths, one visit each thanks to memoization.
  Value dag = values[0];
  for (int i = 0; i < 30; ++i)
    dag = make("kiln.add", {dag, dag}, vec);
  EXPECT_EQ(known(dag), (Ints{int64_t(1) << 30, int64_t(2) << 30}));
}

TEST_F(KnownValues, NotShapeLike) {
  parse("%x: tensor<?xi64>, %y: tensor<4xf32>", "");
  EXPECT_FALSE(kiln::getKnownIntValues(func.getArgument(0)).has_value());
  EXPECT_FALSE(kiln::getKnownIntValues(func.getArgument(1)).has_value());
  EXPECT_FALSE(kiln::getKnownFloatValues(func.getArgument(1)).has_value());
  EXPECT_FALSE(kiln::getKnownIntValues(Value()).has_value());
}

TEST_F(KnownValues, BuildWithInferredTypes) {
  // How the importer builds ops: operands and attributes, types inferred.
  parse("%x: tensor<?x128x8xf32>, %y: tensor<2x5xf32>", R"(
    %s = kiln.shape %x : (tensor<?x128x8xf32>) -> tensor<3xi64>
    %none = kiln.none)");
  Location loc = builder->getUnknownLoc();
  Value x = func.getArgument(0), y = func.getArgument(1);
  Value shape = values[0], none = values[1];
  auto reshape = kiln::ReshapeOp::create(*builder, loc, ValueRange{x, shape},
                                         ArrayRef<NamedAttribute>{});
  EXPECT_EQ(reshape.getType(),
            RankedTensorType::get({kDyn, 128, 8}, builder->getF32Type()));
  NamedAttribute attrs[] = {
      builder->getNamedAttr("axis", builder->getI64IntegerAttr(1)),
      builder->getNamedAttr("num_outputs", builder->getI64IntegerAttr(3))};
  auto split = kiln::SplitOp::create(*builder, loc, ValueRange{y, none}, attrs);
  ASSERT_EQ(split.getNumResults(), 3u);
  EXPECT_EQ(cast<RankedTensorType>(split.getResult(2).getType()).getShape(),
            (ArrayRef<int64_t>{2, 1}));
  EXPECT_TRUE(succeeded(verify(func)));
}

TEST(ClampSliceAxis, OnnxRules) {
  auto count = [](int64_t d, int64_t s, int64_t e, int64_t st) {
    return kiln::clampSliceAxis(d, s, e, st).count;
  };
  EXPECT_EQ(count(10, 0, INT64_MAX, 1), 10);
  EXPECT_EQ(count(10, -3, -1, 1), 2);
  EXPECT_EQ(count(10, 1, 8, 3), 3);
  EXPECT_EQ(count(10, 8, 2, 1), 0);
  EXPECT_EQ(count(10, -1, -INT64_MAX, -1), 10);
  EXPECT_EQ(count(10, 20, 0, -3), 3); // start clamps to 9: 9, 6, 3
  EXPECT_EQ(kiln::clampSliceAxis(10, 20, 0, -3).start, 9);
  EXPECT_EQ(count(0, 0, -1, -1), 0);
}
} // namespace
