//===- HostCode.cpp - The host side of a CUDA model: device memory, ABI ---===//
//
// The host function @main that buildCudaPipeline leaves holds allocations,
// copies and gpu.launch_func ops. Here it becomes the code of the artifact
// (docs/cuda-backend.md, "Host code"; runtime/include/kiln/cuda_abi.h):
//
//   - kiln-cuda-copies-to-kernels (before the loops are mapped): a copy the
//     runtime's memcpy cannot do (a strided view, a constant of the host
//     module) becomes a linalg.copy, so a kernel of its own;
//   - kiln-cuda-sink-globals (before outlining): the small constants left in
//     the IR (memref.get_global) move into the kernels that read them, so
//     outlining copies them into the gpu.module (device globals) instead of
//     passing a host pointer to a kernel;
//   - kiln-cuda-device-memory: a result computed into a fresh buffer and
//     copied into its out-parameter is computed there directly; each
//     intermediate memref.alloc becomes a
//     gpu.alloc right before its first use and gets a gpu.dealloc right
//     after its last one, memref.copy becomes gpu.memcpy, all of them and
//     the launches async on one stream (gpu.wait async at the entry, a
//     synchronous gpu.wait before the return): gpu-to-llvm makes them
//     mgpuStreamCreate, mgpuMemAlloc, mgpuLaunchKernel, mgpuMemFree,
//     mgpuStreamSynchronize;
//   - kiln-cuda-instrument-launches: the artifact's kernel table
//     (kiln.kernels, as the CPU's) and the profiling hooks around launches;
//   - kiln-cuda-entry-wrapper (after the LLVM lowering): the exported
//     kiln_entry(void **buffers) calling @main with one memref descriptor
//     per device pointer.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Host/HostCodegen.h"
#include "kiln/Target/CUDA/CudaBackend.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;

namespace kiln::cuda {
namespace {

constexpr StringLiteral kBegin = "kiln_abi_prof_begin";
constexpr StringLiteral kEnd = "kiln_abi_prof_end";
constexpr StringLiteral kEntryTypes = "kiln.cuda.entry_types";

bool isDenseIdentity(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.hasStaticShape() && memref.getLayout().isIdentity();
}

/// The ONNX node named in `op`'s location, for messages.
std::string nodeOf(Operation *op) {
  std::string node = findOnnxNode(op->getLoc());
  return node.empty() ? "?" : node;
}

/// memref.copy ops the runtime's memcpy (one contiguous block) cannot do
/// become linalg.copy, which the pipeline maps onto a copy kernel: copies
/// between strided views (a concat's insert into a subview) and copies
/// from a constant of the host module (its data is not on the device).
struct CopiesToKernelsPass
    : PassWrapper<CopiesToKernelsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopiesToKernelsPass)
  StringRef getArgument() const override {
    return "kiln-cuda-copies-to-kernels";
  }
  StringRef getDescription() const override {
    return "Turn memref.copy ops that are not one contiguous device-to-"
           "device block into linalg.copy (a copy kernel)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    host::copiesToLinalg(getOperation(), [](memref::CopyOp copy) {
      return !isDenseIdentity(copy.getSource().getType()) ||
             !isDenseIdentity(copy.getTarget().getType()) ||
             copy.getSource().getDefiningOp<memref::GetGlobalOp>();
    });
  }
};

/// Clones each host memref.get_global into the gpu.launch bodies that read
/// it. Outlining then copies the memref.global into the kernel module: the
/// constant lives on the device, not behind a host pointer passed to a
/// kernel.
struct SinkGlobalsPass
    : PassWrapper<SinkGlobalsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SinkGlobalsPass)
  StringRef getArgument() const override { return "kiln-cuda-sink-globals"; }
  StringRef getDescription() const override {
    return "Move memref.get_global ops into the gpu.launch bodies using them";
  }
  void runOnOperation() override {
    SmallVector<memref::GetGlobalOp> globals;
    getOperation().walk([&](memref::GetGlobalOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        globals.push_back(op);
    });
    for (memref::GetGlobalOp global : globals) {
      llvm::SmallDenseMap<Operation *, Value> clones;
      for (OpOperand &use : llvm::make_early_inc_range(global->getUses())) {
        auto launch = use.getOwner()->getParentOfType<gpu::LaunchOp>();
        if (!launch)
          continue;
        Value &clone = clones[launch];
        if (!clone) {
          OpBuilder b(&launch.getBody().front(),
                      launch.getBody().front().begin());
          clone = b.clone(*global)->getResult(0);
        }
        use.set(clone);
      }
      if (global->use_empty())
        global.erase();
    }
  }
};

/// Intermediates, copies and launches of @main onto the device (see the
/// file comment). Fails, naming the ONNX node, on anything else that would
/// touch a buffer on the host.
struct DeviceMemoryPass
    : PassWrapper<DeviceMemoryPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DeviceMemoryPass)
  StringRef getArgument() const override { return "kiln-cuda-device-memory"; }
  StringRef getDescription() const override {
    return "Host @main: allocations, copies and launches as stream-ordered "
           "gpu ops on one stream; deallocation after the last use";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect>();
  }

  /// buffer-results-to-out-params copies each result into its
  /// out-parameter (its hoist-static-allocs needs memref's
  /// AllocationOpInterface models, which the CPU pipeline does without):
  /// when the result is a fresh allocation the copy is the last use of, and
  /// the parameter is used by nothing else, the allocation IS the output.
  /// Done here, after the kernels are formed: before, the out-parameter
  /// (which may alias the inputs, for all scf-parallel-loop-fusion knows)
  /// would keep an epilogue out of its matmul's kernel.
  static bool forwardIntoOutput(memref::CopyOp copy) {
    auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
    auto out = dyn_cast<BlockArgument>(copy.getTarget());
    if (!alloc || !out || !out.hasOneUse() ||
        alloc.getType() != out.getType() ||
        alloc->getBlock() != copy->getBlock())
      return false;
    for (Operation *user : alloc->getUsers())
      if (user != copy && (user->getBlock() != copy->getBlock() ||
                           !user->isBeforeInBlock(copy)))
        return false;
    alloc.replaceAllUsesWith(out);
    copy.erase();
    alloc.erase();
    return true;
  }

  /// Pure ops with memref results (views, casts) alias their operands.
  static bool isAliasingView(Operation *op) {
    return isa<ViewLikeOpInterface>(op) ||
           (isMemoryEffectFree(op) &&
            llvm::any_of(op->getResultTypes(), llvm::IsaPred<MemRefType>));
  }

  /// The pointer of a buffer and the casts passing it to a call.
  static bool isPointerOf(Operation *op) {
    return isa<memref::ExtractAlignedPointerAsIndexOp, arith::IndexCastOp,
               LLVM::IntToPtrOp>(op);
  }

  LogicalResult placeAllocs(Block &block) {
    DenseMap<Operation *, unsigned> position;
    unsigned i = 0;
    for (Operation &op : block)
      position[&op] = i++;
    SmallVector<memref::AllocOp> allocs(block.getOps<memref::AllocOp>());
    for (memref::AllocOp alloc : allocs) {
      if (!isDenseIdentity(alloc.getType())) {
        alloc.emitError("CUDA target: a dynamically sized or strided "
                        "allocation (from ONNX node '")
            << nodeOf(alloc) << "') is not supported on the device yet";
        return failure();
      }
      // The buffer and its views, and the first and last op using them.
      SetVector<Value> aliases;
      aliases.insert(alloc.getResult());
      Operation *first = nullptr, *last = nullptr;
      for (unsigned k = 0; k < aliases.size(); ++k) {
        for (Operation *user : aliases[k].getUsers()) {
          if (user->getBlock() != &block) {
            user->emitError("CUDA target: a buffer used in a nested region "
                            "of the host function");
            return failure();
          }
          if (isa<func::ReturnOp>(user)) {
            user->emitError("CUDA target: @main returns an intermediate "
                            "buffer (outputs must be out-parameters)");
            return failure();
          }
          if (isa<memref::DeallocOp>(user))
            continue;
          // A library call (kiln_rt_cuda_*) takes the buffer's pointer:
          // the buffer lives until the call, not until the extraction.
          if (isAliasingView(user) || isPointerOf(user))
            for (Value r : user->getResults())
              aliases.insert(r);
          if (k == 0 && (!first || position[user] < position[first]))
            first = user;
          if (!last || position[user] > position[last])
            last = user;
          // A library call's pointer (extract_aligned_pointer_as_index ->
          // index_cast -> inttoptr -> kiln_rt_cuda_*): the buffer lives
          // until the call, not just its pointer's extraction.
          if (isa<memref::ExtractAlignedPointerAsIndexOp>(user)) {
            SmallVector<Operation *> chain{user};
            while (!chain.empty()) {
              Operation *op = chain.pop_back_val();
              for (Operation *next : op->getUsers())
                if (next->getBlock() == &block) {
                  if (position[next] > position[last])
                    last = next;
                  chain.push_back(next);
                }
            }
          }
        }
      }
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      if (!first) { // never used
        alloc.erase();
        continue;
      }
      // Allocated right before its first use and freed right after its
      // last: stream-ordered, the pool reuses the memory of buffers whose
      // lifetimes do not overlap.
      alloc->moveBefore(first);
      OpBuilder b(last->getContext());
      b.setInsertionPointAfter(last);
      memref::DeallocOp::create(b, alloc.getLoc(), alloc.getResult());
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("kiln-cuda-device-memory: no @main function");
      return signalPassFailure();
    }
    if (!main.getBody().hasOneBlock() || main.getNumResults() != 0) {
      main.emitError("CUDA target: @main must be one block returning "
                     "nothing (outputs as out-parameters)");
      return signalPassFailure();
    }
    SmallVector<Attribute> entryTypes;
    for (Type t : main.getArgumentTypes()) {
      if (!isDenseIdentity(t)) {
        main.emitError("CUDA target: @main takes ")
            << t << "; the entry takes dense static buffers only";
        return signalPassFailure();
      }
      entryTypes.push_back(TypeAttr::get(t));
    }
    // kiln-cuda-entry-wrapper builds the descriptors from these.
    module->setAttr(kEntryTypes, ArrayAttr::get(ctx, entryTypes));

    Block &block = main.getBody().front();
    // What may stay on the host: index arithmetic and constants, views,
    // allocations, copies, launches, library-kernel calls and the
    // profiling hooks.
    for (Operation &op : block) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              gpu::LaunchFuncOp, func::ReturnOp>(op))
        continue;
      // The hooks, and the library kernels of cuda_abi.h (kiln_rt_cuda_*,
      // which enqueue on the session's stream: in order with the launches).
      if (auto call = dyn_cast<func::CallOp>(op))
        if (call.getCallee() == kBegin || call.getCallee() == kEnd ||
            call.getCallee().starts_with("kiln_rt_cuda_"))
          continue;
      // The stream bracket kiln-cuda-library-calls puts around a library
      // call (mgpuStreamCreate returns the session's one stream).
      if (auto call = dyn_cast<LLVM::CallOp>(op))
        if (std::optional<StringRef> callee = call.getCallee();
            callee && callee->starts_with("mgpuStream"))
          continue;
      if (isa<memref::GetGlobalOp>(op)) {
        op.emitError("CUDA target: the constant @")
            << cast<memref::GetGlobalOp>(op).getName()
            << " (ONNX node '" << nodeOf(&op)
            << "') is used on the host, not by a kernel";
        return signalPassFailure();
      }
      if (isAliasingView(&op) || isMemoryEffectFree(&op))
        continue;
      op.emitError("CUDA target: '")
          << op.getName() << "' from ONNX node '" << nodeOf(&op)
          << "' would run on the host with device buffers";
      return signalPassFailure();
    }
    SmallVector<memref::CopyOp> outputs(block.getOps<memref::CopyOp>());
    for (memref::CopyOp copy : outputs)
      (void)forwardIntoOutput(copy);
    if (failed(placeAllocs(block)))
      return signalPassFailure();

    // Thread one async token (one stream) through the device operations.
    OpBuilder b(ctx);
    b.setInsertionPointToStart(&block);
    Type tokenType = gpu::AsyncTokenType::get(ctx);
    Value token =
        gpu::WaitOp::create(b, main.getLoc(), tokenType, ValueRange{})
            .getAsyncToken();
    for (Operation &op : llvm::make_early_inc_range(block)) {
      b.setInsertionPoint(&op);
      Location loc = op.getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto dev = gpu::AllocOp::create(b, loc, alloc.getType(), tokenType,
                                        ValueRange{token}, ValueRange{},
                                        ValueRange{}, /*hostShared=*/false);
        token = dev.getAsyncToken();
        alloc.replaceAllUsesWith(dev.getMemref());
        alloc.erase();
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        token = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token},
                                       dealloc.getMemref())
                    .getAsyncToken();
        dealloc.erase();
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        if (!isDenseIdentity(copy.getSource().getType()) ||
            !isDenseIdentity(copy.getTarget().getType())) {
          copy.emitError("CUDA target: a strided copy (ONNX node '")
              << nodeOf(copy) << "') left on the host";
          return signalPassFailure();
        }
        token = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{token},
                                      copy.getTarget(), copy.getSource())
                    .getAsyncToken();
        copy.erase();
      } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        if (launch.getAsyncToken()) {
          launch.emitError("kiln-cuda-device-memory: launch already async");
          return signalPassFailure();
        }
        std::optional<gpu::KernelDim3> cluster;
        if (launch.hasClusterSize())
          cluster = launch.getClusterSizeOperandValues();
        auto async = gpu::LaunchFuncOp::create(
            b, loc, launch.getKernelAttr(), launch.getGridSizeOperandValues(),
            launch.getBlockSizeOperandValues(),
            launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
            tokenType, ValueRange{token}, cluster);
        token = async.getAsyncToken();
        launch.erase();
      } else if (isa<func::ReturnOp>(op)) {
        // mgpuStreamSynchronize + mgpuStreamDestroy: the outputs are ready
        // when kiln_entry returns.
        gpu::WaitOp::create(b, loc, Type(), ValueRange{token});
      }
    }
  }
};

/// The artifact's kernel table (module attribute `kiln.kernels`, the CPU
/// target's format: {id, name, category, onnx_nodes}) from the
/// `kiln.cuda.kernels` kiln-cuda-name-kernels recorded, and, with `hooks`,
/// kiln_abi_prof_begin/end(id) around each launch. The launches are
/// asynchronous: the hooks run when a launch is enqueued, and the runtime's
/// profiler times the device by recording events on the stream there.
struct InstrumentLaunchesPass
    : PassWrapper<InstrumentLaunchesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InstrumentLaunchesPass)
  InstrumentLaunchesPass() = default;
  InstrumentLaunchesPass(const InstrumentLaunchesPass &other)
      : PassWrapper(other) {}
  explicit InstrumentLaunchesPass(bool withHooks) { hooks = withHooks; }
  StringRef getArgument() const override {
    return "kiln-cuda-instrument-launches";
  }
  StringRef getDescription() const override {
    return "Record the kernel table (kiln.kernels) and bracket each "
           "gpu.launch_func with kiln_abi_prof_begin/end";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect>();
  }
  Option<bool> hooks{*this, "hooks",
                     llvm::cl::desc("Insert the profiling hook calls"),
                     llvm::cl::init(true)};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto source = module->getAttrOfType<ArrayAttr>("kiln.cuda.kernels");
    if (!source) {
      module.emitError("kiln-cuda-instrument-launches: no kiln.cuda.kernels "
                       "(run kiln-cuda-name-kernels first)");
      return signalPassFailure();
    }
    OpBuilder b(ctx);
    // The library calls of the table (kiln-cuda-name-kernels names them).
    llvm::StringSet<> libraryCalls;
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (auto name = call->getAttrOfType<StringAttr>("kiln.cuda.library")) {
        libraryCalls.insert(name.getValue());
        calls.push_back(call);
      }
    });
    llvm::StringMap<int32_t> ids;
    SmallVector<Attribute> table;
    for (auto [i, attr] : llvm::enumerate(source)) {
      auto entry = dyn_cast<DictionaryAttr>(attr);
      auto name = entry ? entry.getAs<StringAttr>("kernel") : nullptr;
      auto nodes = entry ? entry.getAs<ArrayAttr>("nodes") : nullptr;
      auto category = entry ? entry.getAs<StringAttr>("category") : nullptr;
      if (!name || !nodes) {
        module.emitError("kiln-cuda-instrument-launches: malformed "
                         "kiln.cuda.kernels entry ")
            << attr;
        return signalPassFailure();
      }
      int32_t id = static_cast<int32_t>(i);
      ids[name.getValue()] = id;
      SmallVector<NamedAttribute> fields{
          b.getNamedAttr("id", b.getI32IntegerAttr(id)),
          b.getNamedAttr("name", name),
          b.getNamedAttr("category",
                         category ? category : b.getStringAttr("other")),
          b.getNamedAttr("onnx_nodes", nodes)};
      // A kiln_rt_cuda_* call, not a function of the fatbin: the runtime
      // does not look it up there (cuda_abi.h).
      auto library = entry.getAs<BoolAttr>("library");
      if ((library && library.getValue()) ||
          libraryCalls.contains(name.getValue()))
        fields.push_back(b.getNamedAttr("library", b.getBoolAttr(true)));
      table.push_back(b.getDictionaryAttr(fields));
    }
    module->setAttr("kiln.kernels", b.getArrayAttr(table));
    if (!hooks)
      return;

    b.setInsertionPointToStart(module.getBody());
    auto hookType = b.getFunctionType({b.getI32Type()}, {});
    for (StringRef name : {kBegin, kEnd}) {
      if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
        if (existing.getFunctionType() != hookType) {
          existing.emitError("kiln-cuda-instrument-launches: @")
              << name << " exists with another type";
          return signalPassFailure();
        }
        continue;
      }
      func::FuncOp::create(b, module.getLoc(), name, hookType).setPrivate();
    }
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = ids.find(launch.getKernelName().getValue());
      if (it == ids.end()) {
        launch.emitError("kiln-cuda-instrument-launches: kernel @")
            << launch.getKernelName() << " is not in kiln.cuda.kernels";
        return WalkResult::interrupt();
      }
      Location loc = launch.getLoc();
      b.setInsertionPoint(launch);
      Value id = arith::ConstantIntOp::create(b, loc, it->second, 32);
      func::CallOp::create(b, loc, kBegin, TypeRange{}, ValueRange{id});
      b.setInsertionPointAfter(launch);
      func::CallOp::create(b, loc, kEnd, TypeRange{}, ValueRange{id});
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // Library calls too: the runtime names a failing call by the kernel
    // whose hooks it is inside, and times it by their events.
    for (func::CallOp call : calls) {
      auto name = call->getAttrOfType<StringAttr>("kiln.cuda.library");
      auto it = ids.find(name.getValue());
      if (it == ids.end()) {
        call.emitError("kiln-cuda-instrument-launches: library call ")
            << name << " is not in kiln.cuda.kernels";
        return signalPassFailure();
      }
      Location loc = call.getLoc();
      b.setInsertionPoint(call);
      Value id = arith::ConstantIntOp::create(b, loc, it->second, 32);
      func::CallOp::create(b, loc, kBegin, TypeRange{}, ValueRange{id});
      b.setInsertionPointAfter(call);
      func::CallOp::create(b, loc, kEnd, TypeRange{}, ValueRange{id});
    }
  }
};

/// After the LLVM lowering, @main takes one unpacked memref descriptor per
/// buffer (allocated and aligned pointer, offset, sizes, strides). This
/// renames it `kiln_main` (internal) and adds the exported
/// `void kiln_entry(void **buffers)`: each buffer a device pointer, in the
/// order inputs, weights, outputs (docs/artifact.md), its descriptor built
/// from the static shape recorded in kiln.cuda.entry_types.
struct EntryWrapperPass
    : PassWrapper<EntryWrapperPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EntryWrapperPass)
  StringRef getArgument() const override { return "kiln-cuda-entry-wrapper"; }
  StringRef getDescription() const override {
    return "Export the lowered host @main as kiln_entry(void **buffers) of "
           "device pointers";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto main = module.lookupSymbol<LLVM::LLVMFuncOp>("main");
    auto types = module->getAttrOfType<ArrayAttr>(kEntryTypes);
    if (!main || !types) {
      module.emitError("kiln-cuda-entry-wrapper: no lowered llvm.func @main "
                       "with kiln.cuda.entry_types (run "
                       "kiln-cuda-device-memory first)");
      return signalPassFailure();
    }
    SmallVector<int64_t> slots;
    if (auto attr = module->getAttrOfType<DenseI64ArrayAttr>("kiln.entry_slots"))
      slots.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else
      for (unsigned i = 0; i < types.size(); ++i)
        slots.push_back(i);
    if (slots.size() != types.size()) {
      main.emitError("kiln-cuda-entry-wrapper: kiln.entry_slots does not "
                     "match @main's buffers");
      return signalPassFailure();
    }
    main.setSymName("kiln_main");
    main.setLinkage(LLVM::Linkage::Internal);

    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    Location loc = main.getLoc();
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, "kiln_entry",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType}));
    Block *body = entry.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    auto constant = [&](int64_t v) -> Value {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    SmallVector<Value> args;
    for (auto [i, attr] : llvm::enumerate(types)) {
      auto type = cast<MemRefType>(cast<TypeAttr>(attr).getValue());
      Value slot = LLVM::GEPOp::create(
          b, loc, ptrType, ptrType, body->getArgument(0),
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(slots[i])});
      Value ptr = LLVM::LoadOp::create(b, loc, ptrType, slot);
      args.append({ptr, ptr, constant(0)});
      for (int64_t d : type.getShape())
        args.push_back(constant(d));
      int64_t stride = 1;
      SmallVector<Value> strides(type.getRank());
      for (int64_t d = type.getRank() - 1; d >= 0; --d) {
        strides[d] = constant(stride);
        stride *= type.getDimSize(d);
      }
      args.append(strides.begin(), strides.end());
    }
    LLVM::LLVMFunctionType mainType = main.getFunctionType();
    bool matches = mainType.getNumParams() == args.size() &&
                   isa<LLVM::LLVMVoidType>(mainType.getReturnType());
    for (unsigned i = 0; matches && i < args.size(); ++i)
      matches = mainType.getParams()[i] == args[i].getType();
    if (!matches) {
      main.emitError("kiln-cuda-entry-wrapper: @main's lowered signature ")
          << mainType << " is not the unpacked descriptors of "
          << types;
      return signalPassFailure();
    }
    LLVM::CallOp::create(b, loc, main, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
};

} // namespace

std::unique_ptr<Pass> createCopiesToKernelsPass() {
  return std::make_unique<CopiesToKernelsPass>();
}
std::unique_ptr<Pass> createSinkGlobalsPass() {
  return std::make_unique<SinkGlobalsPass>();
}

void buildCudaHostPipeline(OpPassManager &pm, const CudaOptions &options) {
  pm.addPass(std::make_unique<DeviceMemoryPass>());
  pm.addPass(std::make_unique<InstrumentLaunchesPass>(options.profileHooks));
  pm.addPass(createCanonicalizerPass());
  // Views of device buffers (reshapes, a concat's slices) are descriptor
  // arithmetic on the host, as on the CPU.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // The host pointers stay memref descriptors: the kernels take them
  // unpacked (convert-gpu-to-nvvm's default), and gpu-to-llvm's bare host
  // pointers would pass the launches bare pointers too.
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(std::make_unique<EntryWrapperPass>());
}

void registerHostCodePasses() {
  PassRegistration<CopiesToKernelsPass>();
  PassRegistration<SinkGlobalsPass>();
  PassRegistration<DeviceMemoryPass>();
  PassRegistration<InstrumentLaunchesPass>();
  PassRegistration<EntryWrapperPass>();
  static CudaOptions defaults;
  PassPipelineRegistration<>(
      "kiln-cuda-host-pipeline",
      "after kiln-cuda-pipeline-fatbin: the host function on device memory, "
      "lowered to LLVM with kiln_entry",
      [](OpPassManager &pm) { buildCudaHostPipeline(pm, defaults); });
}

bool linkHostSharedObject(const std::string &object, std::string &sharedObject,
                          std::string &error, std::string &warning) {
  std::string abi = host::findSupportArchive("KILN_ABI_ARCHIVE", "libkiln_abi.a");
  if (!llvm::sys::fs::exists(abi)) {
    error = "Kiln's ABI support archive not found at " + abi +
            " (set KILN_ABI_ARCHIVE)";
    return false;
  }
  // The CUDA shim (mgpu* -> the runtime's table, kiln_abi_set_cuda_runtime)
  // beside it, or $KILN_ABI_CUDA_ARCHIVE.
  std::string shim;
  if (const char *env = std::getenv("KILN_ABI_CUDA_ARCHIVE")) {
    shim = env;
  } else {
    llvm::SmallString<256> path(llvm::sys::path::parent_path(abi));
    llvm::sys::path::append(path, "libkiln_abi_cuda.a");
    shim = std::string(path);
  }
  if (!llvm::sys::fs::exists(shim)) {
    warning = "the CUDA ABI shim " + shim +
              " was not found: the code's mgpu* calls stay undefined and "
              "the runtime cannot load it (build kiln_abi_cuda, or set "
              "KILN_ABI_CUDA_ARCHIVE)";
    shim.clear();
  }
  std::vector<std::string> libraries = {"-Wl,--whole-archive", abi};
  if (!shim.empty())
    libraries.push_back(shim);
  else // (as the warning says: the mgpu* calls bind at load time)
    libraries.push_back("-Wl,-z,undefs");
  libraries.insert(libraries.end(), {"-Wl,--no-whole-archive", "-lm"});
  return host::linkWithSystemCompiler(object, libraries, "the model's host code",
                                     sharedObject, error);
}

} // namespace kiln::cuda
