//===- KilnToLinalg.cpp - The convert-kiln-to-linalg pass -----------------===//
//
// Drives the per-family patterns (Elementwise.cpp, Reduction.cpp, NN.cpp,
// Shape.cpp, Quant.cpp) with a dialect conversion: every kiln op must go, and
// one that cannot is reported with its ONNX node name.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln::lowering;

kiln::KilnTypeConverter::KilnTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](IntegerType type) -> Type { return toSignless(type); });
  addConversion([](RankedTensorType type) -> Type {
    return toSignlessType(type);
  });
  // ui8 <-> i8 have the same bits: a cast between them is a no-op the
  // conversion needs only while both forms are alive.
  auto materialize = [](OpBuilder &b, Type type, ValueRange inputs,
                        Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(materialize);
  addTargetMaterialization(materialize);
}

namespace {

/// Dynamic dims whose symbolic size is a constant (a Slice [i, i + 1) of a
/// loop's iteration number i is one long) become static, where the op and
/// its users accept the refined type (func.return does not: @main's
/// signature stays). The lowerings then broadcast such a dim as ONNX does
/// a 1; they take a dynamic dim to be the other operand's size.
void refineConstantDims(func::FuncOp main, const kiln::SymbolicShapes &shapes) {
  MLIRContext *context = main.getContext();
  ScopedDiagnosticHandler quiet(context, [](Diagnostic &) { return success(); });
  main.walk([&](Operation *op) {
    if (!isa<kiln::KilnDialect>(op->getDialect()) || op->getNumRegions())
      return;
    for (OpResult result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.hasStaticShape() ||
          llvm::any_of(result.getUsers(), [](Operation *user) {
            return isa<func::ReturnOp>(user);
          }))
        continue;
      std::optional<kiln::SymbolicDims> dims = shapes.shapeOf(result);
      if (!dims)
        continue;
      SmallVector<int64_t> shape(type.getShape());
      bool changed = false;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (auto c = dyn_cast<AffineConstantExpr>((*dims)[d]);
            c && type.isDynamicDim(d) && c.getValue() >= 0) {
          shape[d] = c.getValue();
          changed = true;
        }
      if (!changed)
        continue;
      result.setType(type.clone(shape));
      bool accepted = succeeded(mlir::verify(op, /*verifyRecursively=*/false));
      for (Operation *user : result.getUsers())
        accepted = accepted &&
                   succeeded(mlir::verify(user, /*verifyRecursively=*/false));
      if (!accepted)
        result.setType(type);
    }
  });
}

/// kiln.constant -> arith.constant with a signless element type.
struct ConstantLowering : OpConversionPattern<kiln::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    TypedAttr value;
    if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
      value = dense.getType() == type ? dense
                                      : dense.bitcast(type.getElementType());
    } else if (auto resource =
                   dyn_cast<DenseResourceElementsAttr>(op.getValue())) {
      value = DenseResourceElementsAttr::get(type, resource.getRawHandle());
    } else {
      return unsupported(op, "constant attribute kind");
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, value);
    return success();
  }
};

struct ConvertKilnToLinalgPass
    : kiln::impl::ConvertKilnToLinalgBase<ConvertKilnToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    // Dynamic dims: sized from the symbolic shapes of the graph
    // (kiln/Analysis/SymbolicShapes.h), by the patterns that handle them.
    // Any other op with a dynamic shape is reported with its ONNX node.
    auto main = module.lookupSymbol<func::FuncOp>("main");
    std::optional<kiln::SymbolicShapes> shapes;
    std::optional<DynamicDims> dynamicDims;
    bool dynamic = false;
    module.walk([&](Operation *op) {
      if (!isa<kiln::KilnDialect>(op->getDialect()) || hasStaticShapes(op))
        return;
      if (!main || op->getParentOfType<func::FuncOp>() != main) {
        (void)unsupported(op, "dynamic shape outside @main");
        dynamic = true;
        return;
      }
      if (!shapes)
        shapes.emplace(main);
      // Control flow sizes nothing from the symbolic shapes: its results
      // are what its regions compute (a Loop's scan outputs, written into
      // tensors that grow, have a data-dependent length).
      if (isa<kiln::IfOp, kiln::LoopOp, kiln::ScanOp, kiln::YieldOp>(op))
        return;
      if (!supportsDynamicShapes(op)) {
        (void)unsupported(op, "dynamic shape (this op's lowering needs static "
                              "shapes; give them with "
                              "--input-shapes=name:AxBxC)");
        dynamic = true;
        return;
      }
      for (Value result : op->getResults())
        if (isa<RankedTensorType>(result.getType()) && !shapes->shapeOf(result)) {
          Operation *at = shapes->whyUnknown(result);
          (void)unsupported(
              op, at && at != op
                      ? "dynamic shape: the size of a dynamic dim is not "
                        "known in terms of the inputs' dims since " +
                            describe(at)
                      : Twine("dynamic shape: the size of a dynamic dim of "
                              "its result is not known in terms of the "
                              "inputs' dims"));
          dynamic = true;
          return;
        }
    });
    if (dynamic)
      return signalPassFailure();
    if (shapes && !shapes->symbols().empty()) {
      // For the entry (kiln-cpu-prepare-entry, kiln-cpu-dynamic-entry): the
      // symbols, and each dynamic input's and output's dims over them.
      Builder b(context);
      unsigned n = shapes->symbols().size();
      SmallVector<Attribute> names;
      for (const kiln::ShapeSymbol &symbol : shapes->symbols())
        names.push_back(b.getStringAttr(symbol.name));
      module->setAttr("kiln.symbols", b.getArrayAttr(names));
      auto shapeAttr = [&](Value v) -> Attribute {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        std::optional<kiln::SymbolicDims> dims = shapes->shapeOf(v);
        if (!type || type.hasStaticShape() || !dims)
          return {};
        return AffineMapAttr::get(AffineMap::get(0, n, *dims, context));
      };
      for (unsigned i = 0; i < main.getNumArguments(); ++i)
        if (Attribute a = shapeAttr(main.getArgument(i)))
          main.setArgAttr(i, "kiln.shape", a);
      auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
      for (unsigned i = 0; i < main.getNumResults(); ++i) {
        Value v = ret.getOperand(i);
        if (Attribute a = shapeAttr(v)) {
          main.setResultAttr(i, "kiln.shape", a);
        } else if (!cast<RankedTensorType>(v.getType()).hasStaticShape()) {
          main.emitError() << "cannot lower output " << i
                           << " to the CPU: the size of a dynamic dim is "
                              "not known in terms of the inputs' dims";
          return signalPassFailure();
        }
      }
    }
    if (shapes) {
      refineConstantDims(main, *shapes);
      dynamicDims.emplace(*shapes, main);
    }

    // Every op a kiln op lowers to takes its location: wrapped with the kiln
    // op's name, it tells the kernel profiler where a kernel came from
    // (kiln/Transforms/Origin.h).
    module.walk([](Operation *op) {
      if (isa<kiln::KilnDialect>(op->getDialect()) &&
          !isa<kiln::ConstantOp, kiln::NoneOp>(op))
        kiln::tagOrigin(op);
    });

    kiln::KilnTypeConverter converter;
    ConversionTarget target(*context);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           scf::SCFDialect,
                           bufferization::BufferizationDialect>();
    target.addIllegalDialect<kiln::KilnDialect>();
    // Optional inputs: the patterns read `none` operands as "absent"; the
    // kiln.none ops die with their users.
    target.addLegalOp<kiln::NoneOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(context);
    kiln::populateKilnToLinalgPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                  converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    // The conversion driver names an op it could not legalize by its kiln
    // name only; say which ONNX node it was.
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      std::string message = diag.str();
      StringRef prefix = "failed to legalize operation '";
      if (diag.getSeverity() != DiagnosticSeverity::Error ||
          !StringRef(message).starts_with(prefix))
        return failure();
      StringRef opName = StringRef(message).drop_front(prefix.size());
      opName = opName.take_until([](char c) { return c == '\''; });
      std::string node;
      Location loc = kiln::stripOrigins(diag.getLocation());
      if (auto nameLoc = dyn_cast<NameLoc>(loc))
        node = " (ONNX node '" + nameLoc.getName().str() + "')";
      emitError(loc) << "cannot lower " << opName << node
                     << " to the CPU: no lowering for this op or these "
                        "operand types";
      return success();
    });
    ConversionConfig config;
    if (dynamicDims)
      config.listener = &*dynamicDims;
    if (failed(applyPartialConversion(module, target, std::move(patterns),
                                      config)) ||
        (dynamicDims && dynamicDims->hadErrors()))
      return signalPassFailure();

    module.walk([](kiln::NoneOp op) {
      if (op->use_empty())
        op->erase();
    });
  }
};

} // namespace

void kiln::populateCoreToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<ConstantLowering>(converter, patterns.getContext());
}

void kiln::populateKilnToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  populateCoreToLinalgPatterns(converter, patterns);
  populateElementwiseToLinalgPatterns(converter, patterns);
  populateReductionToLinalgPatterns(converter, patterns);
  populateNNToLinalgPatterns(converter, patterns);
  populateShapeToLinalgPatterns(converter, patterns);
  populateQuantToLinalgPatterns(converter, patterns);
  populateControlFlowToSCFPatterns(converter, patterns);
}
