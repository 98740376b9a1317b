//===- ShapeInferenceTest.cpp - Unit tests of the shape helpers -----------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/ShapeInference.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

TEST(BroadcastShapes, NumpyRules) {
  SmallVector<int64_t> a = {2, 1, 4}, b = {3, 1};
  auto r = kiln::broadcastShapes(std::nullopt, {a, b});
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(*r, (SmallVector<int64_t>{2, 3, 4}));
}

TEST(BroadcastShapes, DynamicDims) {
  SmallVector<int64_t> a = {kDyn, 4}, b = {3, 1}, c = {kDyn, kDyn};
  auto r = kiln::broadcastShapes(std::nullopt, {a, b});
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(*r, (SmallVector<int64_t>{3, 4}));
  auto r2 = kiln::broadcastShapes(std::nullopt, {c, a});
  ASSERT_TRUE(succeeded(r2));
  EXPECT_EQ(*r2, (SmallVector<int64_t>{kDyn, 4}));
}

TEST(BroadcastShapes, Conflict) {
  MLIRContext ctx;
  SmallVector<int64_t> a = {2, 3}, b = {4, 3};
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  auto r = kiln::broadcastShapes(UnknownLoc::get(&ctx), {a, b});
  EXPECT_TRUE(failed(r));
  EXPECT_NE(message.find("not broadcastable"), std::string::npos) << message;
}

TEST(CompatibleReturnTypes, NoStaticConflict) {
  MLIRContext ctx;
  Type f32 = Float32Type::get(&ctx);
  Type dyn = RankedTensorType::get({kDyn, 4}, f32);
  Type stat = RankedTensorType::get({3, 4}, f32);
  Type other = RankedTensorType::get({3, 5}, f32);
  Type i32 = RankedTensorType::get({3, 4}, IntegerType::get(&ctx, 32));
  Type rank3 = RankedTensorType::get({3, 4, 1}, f32);
  // The result type may refine inference...
  EXPECT_TRUE(kiln::areCompatibleReturnTypes(TypeRange{dyn}, TypeRange{stat}));
  // ...or be less refined than it (a pass folded an operand to a constant).
  EXPECT_TRUE(kiln::areCompatibleReturnTypes(TypeRange{stat}, TypeRange{dyn}));
  // Never a different static size, element type, rank or count.
  EXPECT_FALSE(kiln::areCompatibleReturnTypes(TypeRange{dyn}, TypeRange{other}));
  EXPECT_FALSE(kiln::areCompatibleReturnTypes(TypeRange{stat}, TypeRange{other}));
  EXPECT_FALSE(kiln::areCompatibleReturnTypes(TypeRange{stat}, TypeRange{i32}));
  EXPECT_FALSE(kiln::areCompatibleReturnTypes(TypeRange{stat}, TypeRange{rank3}));
  EXPECT_FALSE(
      kiln::areCompatibleReturnTypes(TypeRange{stat}, TypeRange{stat, stat}));
}

TEST(NormalizeAxis, Ranges) {
  EXPECT_EQ(*kiln::normalizeAxis(std::nullopt, -1, 3), 2);
  EXPECT_EQ(*kiln::normalizeAxis(std::nullopt, 0, 3), 0);
  EXPECT_TRUE(failed(kiln::normalizeAxis(std::nullopt, 3, 3)));
}
} // namespace
