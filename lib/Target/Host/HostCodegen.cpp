//===- HostCodegen.cpp - Code for the host CPU, shared by the targets -----===//
//
// Entry preparation, target resolution, LLVM IR translation, LLVM's
// optimization pipeline, object emission and the link with the system C
// compiler: what the CPU target does for a whole model and the CUDA target
// for a model's host code.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Host/HostCodegen.h"
#include "kiln/AbiArchive.h"

#include "kiln/Analysis/SymbolicShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace mlir;

namespace kiln::host {
namespace {

/// Marks @main's arguments (graph inputs and weights) read-only, so that
/// bufferization never writes into a caller's buffer or the mapped weights.
///
/// Zero-element inputs and outputs have no bare-pointer form in LLVM's
/// calling convention, and need none: an input with no elements is replaced
/// by an empty tensor and dropped from @main's parameters, an output with no
/// elements is dropped from its results (nothing is ever written to it).
/// `kiln.entry_slots` on the module then maps each remaining parameter of
/// @main to its index in kiln_entry's buffer array (which keeps one slot per
/// input, weight and output, as docs/artifact.md says).
struct PrepareEntryPass
    : PassWrapper<PrepareEntryPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrepareEntryPass)
  StringRef getArgument() const override { return "kiln-cpu-prepare-entry"; }
  StringRef getDescription() const override {
    return "Mark @main's arguments read-only for bufferization; drop "
           "zero-element inputs and outputs";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<tensor::TensorDialect>();
  }
  static bool isEmptyTensor(Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0;
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main) {
      module.emitError("no @main function to compile");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    unsigned numArgs = main.getNumArguments();
    unsigned numResults = main.getNumResults();
    SmallVector<int64_t> slots;
    llvm::BitVector dropArgs(numArgs), dropResults(numResults);
    b.setInsertionPointToStart(&main.getBody().front());
    for (unsigned i = 0; i < numArgs; ++i) {
      BlockArgument arg = main.getArgument(i);
      if (isEmptyTensor(arg.getType())) {
        auto type = cast<RankedTensorType>(arg.getType());
        arg.replaceAllUsesWith(tensor::EmptyOp::create(
            b, arg.getLoc(), type.getShape(), type.getElementType()));
        dropArgs.set(i);
        continue;
      }
      slots.push_back(i);
    }
    for (unsigned i = 0; i < numResults; ++i) {
      if (isEmptyTensor(main.getResultTypes()[i])) {
        dropResults.set(i);
        continue;
      }
      slots.push_back(numArgs + i);
    }
    // With symbolic dims: each remaining parameter's dims over the symbols
    // (kiln.shape from the lowering) for kiln-cpu-dynamic-entry, in the
    // order of @main's parameters once the results are out-params.
    if (module->hasAttr("kiln.symbols")) {
      SmallVector<Attribute> shapes;
      for (unsigned i = 0; i < numArgs; ++i)
        if (!dropArgs.test(i)) {
          Attribute a = main.getArgAttr(i, "kiln.shape");
          shapes.push_back(a ? a : b.getUnitAttr());
        }
      for (unsigned i = 0; i < numResults; ++i)
        if (!dropResults.test(i)) {
          Attribute a = main.getResultAttr(i, "kiln.shape");
          shapes.push_back(a ? a : b.getUnitAttr());
        }
      module->setAttr("kiln.param_shapes", b.getArrayAttr(shapes));
      module->setAttr("kiln.num_slots",
                      b.getI64IntegerAttr(numArgs + numResults));
    }
    if (dropArgs.any() || dropResults.any()) {
      if (failed(main.eraseArguments(dropArgs)))
        return signalPassFailure();
      main.walk([&](func::ReturnOp ret) {
        for (int i = numResults - 1; i >= 0; --i)
          if (dropResults.test(i))
            ret->eraseOperand(i);
      });
      if (failed(main.eraseResults(dropResults)))
        return signalPassFailure();
      module->setAttr("kiln.entry_slots", b.getDenseI64ArrayAttr(slots));
    }
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (isa<TensorType>(main.getArgument(i).getType()))
        main.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                        b.getBoolAttr(false));
  }
};

/// Symbolic dims at the entry (after bufferization, results as
/// out-params): @main gets one trailing index parameter per symbol
/// (`kiln.symbols`), and each buffer parameter with dynamic dims becomes a
/// bare `memref<1xT>` pointer reinterpreted, at the start, as its dynamic
/// row-major memref with the sizes `kiln.param_shapes` computes from the
/// symbols. So @main keeps the bare-pointer calling convention and
/// kiln_entry passes the symbols' values (docs/artifact.md).
struct DynamicEntryPass
    : PassWrapper<DynamicEntryPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DynamicEntryPass)
  StringRef getArgument() const override { return "kiln-cpu-dynamic-entry"; }
  StringRef getDescription() const override {
    return "Pass @main's symbolic dims as index parameters and its dynamic "
           "buffers as bare pointers";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<memref::MemRefDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto symbols = module->getAttrOfType<ArrayAttr>("kiln.symbols");
    if (!symbols || symbols.empty())
      return;
    auto main = module.lookupSymbol<func::FuncOp>("main");
    auto shapes = module->getAttrOfType<ArrayAttr>("kiln.param_shapes");
    if (!main || !shapes || shapes.size() != main.getNumArguments()) {
      module.emitError("kiln-cpu-dynamic-entry: kiln.param_shapes does not "
                       "match @main's parameters");
      return signalPassFailure();
    }
    unsigned numParams = main.getNumArguments();
    Block &entry = main.getBody().front();
    OpBuilder b(&getContext());
    SmallVector<Value> symbolValues;
    for (unsigned k = 0; k < symbols.size(); ++k)
      symbolValues.push_back(
          entry.addArgument(b.getIndexType(), main.getLoc()));
    b.setInsertionPointToStart(&entry);
    for (unsigned i = 0; i < numParams; ++i) {
      auto map = dyn_cast<AffineMapAttr>(shapes[i]);
      if (!map)
        continue;
      BlockArgument arg = entry.getArgument(i);
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || !type.getLayout().isIdentity() ||
          map.getValue().getNumResults() != type.getRank()) {
        main.emitError() << "kiln-cpu-dynamic-entry: parameter " << i
                         << " is not an identity-layout memref of its shape";
        return signalPassFailure();
      }
      Location loc = arg.getLoc();
      int64_t rank = type.getRank();
      SmallVector<OpFoldResult> sizes(rank), strides(rank);
      for (int64_t d = 0; d < rank; ++d) {
        if (!type.isDynamicDim(d)) {
          sizes[d] = b.getIndexAttr(type.getDimSize(d));
          continue;
        }
        sizes[d] = SymbolicShapes::materialize(
            b, loc, map.getValue().getResult(d), symbolValues);
      }
      // Row-major strides, static where the dims after are.
      OpFoldResult stride = b.getIndexAttr(1);
      for (int64_t d = rank - 1; d >= 0; --d) {
        strides[d] = stride;
        std::optional<int64_t> s = getConstantIntValue(stride);
        std::optional<int64_t> n = getConstantIntValue(sizes[d]);
        if (s && n)
          stride = b.getIndexAttr(*s * *n);
        else
          stride = arith::MulIOp::create(
                       b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                       getValueOrCreateConstantIndexOp(b, loc, sizes[d]))
                       .getResult();
      }
      arg.setType(MemRefType::get({1}, type.getElementType()));
      auto cast = memref::ReinterpretCastOp::create(
          b, loc, type, arg, b.getIndexAttr(0), sizes, strides);
      arg.replaceAllUsesExcept(cast.getResult(), cast);
    }
    main.setType(FunctionType::get(&getContext(), entry.getArgumentTypes(),
                                   main.getFunctionType().getResults()));
  }
};

} // namespace

std::unique_ptr<Pass> createPrepareEntryPass() {
  return std::make_unique<PrepareEntryPass>();
}

std::unique_ptr<Pass> createDynamicEntryPass() {
  return std::make_unique<DynamicEntryPass>();
}

void registerHostCodegenPasses() {
  PassRegistration<PrepareEntryPass>();
  PassRegistration<DynamicEntryPass>();
}

void copiesToLinalg(Operation *root,
                    llvm::function_ref<bool(memref::CopyOp)> select) {
  SmallVector<memref::CopyOp> copies;
  root->walk([&](memref::CopyOp copy) {
    if (select(copy))
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
  }
}

//===----------------------------------------------------------------------===//
// Target, LLVM IR, machine code
//===----------------------------------------------------------------------===//

/// The x86 features an artifact records: the ones code generation can use
/// and the runtime can check with __builtin_cpu_supports.
static const char *const kRecordedFeatures[] = {
    "sse4.2",  "avx",       "avx2",     "fma",        "f16c",
    "avx512f", "avx512bw",  "avx512dq", "avx512vl",   "avx512vnni",
    "avxvnni", "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16"};

bool resolveTarget(llvm::StringRef cpu, TargetInfo &info, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  info.triple = llvm::sys::getDefaultTargetTriple();
  llvm::Triple triple(info.triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  llvm::StringMap<bool> enabled;
  if (cpu == "native") {
    info.cpu = llvm::sys::getHostCPUName().str();
    enabled = llvm::sys::getHostCPUFeatures();
  } else if (cpu == "generic") {
    info.cpu = triple.isX86() ? "x86-64" : "generic";
  } else {
    info.cpu = cpu.str();
    // Asked for an unknown CPU, LLVM warns on stderr and goes on: check the
    // name against a generic subtarget first.
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!generic || !generic->isCPUStringValid(info.cpu)) {
      error = "unknown CPU '" + cpu.str() + "' for " + info.triple +
              " (use native, generic or an LLVM CPU name)";
      return false;
    }
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, info.cpu, ""));
    if (!sti) {
      error = "unknown CPU '" + cpu.str() + "' for " + info.triple +
              " (use native, generic or an LLVM CPU name)";
      return false;
    }
    for (const char *feature : kRecordedFeatures)
      if (sti->checkFeatures(std::string("+") + feature))
        enabled[feature] = true;
  }
  std::string features;
  for (auto &entry : enabled) {
    if (!features.empty())
      features += ",";
    features += (entry.second ? "+" : "-") + entry.first().str();
  }
  info.featureString = cpu == "native" ? features : "";
  for (const char *feature : kRecordedFeatures)
    if (enabled.lookup(feature))
      info.features.push_back(feature);
  return true;
}

std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const TargetInfo &info, unsigned optLevel,
                    std::string &error) {
  llvm::Triple triple(info.triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions targetOptions;
  auto level = optLevel == 0   ? llvm::CodeGenOptLevel::None
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                               : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, info.cpu, info.featureString, targetOptions, llvm::Reloc::PIC_,
      std::nullopt, level));
  if (!machine)
    error = "cannot create a target machine for " + info.triple + " " + info.cpu;
  return machine;
}

/// Clears, for the translation to LLVM IR, the argument and result
/// attributes of the llvm.func ops that are not the llvm dialect's (Kiln's
/// kiln.name, kiln.weight, kiln.weight_value on @main), and puts them back
/// when destroyed. The translation warns about each such attribute, and a
/// warning prints the whole function it names: on @main, with one argument
/// per weight, that was quadratic in the model's depth (a 30-layer decoder
/// spent most of its 4-minute compile printing kiln_main for its ~270
/// weights).
namespace {
class ForeignAttributesCleared {
public:
  explicit ForeignAttributesCleared(ModuleOp module) {
    module.walk([&](LLVM::LLVMFuncOp func) {
      ArrayAttr args = func.getArgAttrsAttr();
      ArrayAttr results = func.getResAttrsAttr();
      ArrayAttr keptArgs = keepLLVMAttributes(args);
      ArrayAttr keptResults = keepLLVMAttributes(results);
      if (keptArgs == args && keptResults == results)
        return;
      saved.push_back({func, args, results});
      func.setArgAttrsAttr(keptArgs);
      func.setResAttrsAttr(keptResults);
    });
  }
  ~ForeignAttributesCleared() {
    for (Saved &s : saved) {
      s.func.setArgAttrsAttr(s.args);
      s.func.setResAttrsAttr(s.results);
    }
  }

private:
  /// `attrs` (one dictionary per argument or result) with only the llvm
  /// dialect's attributes; `attrs` itself when nothing is dropped.
  static ArrayAttr keepLLVMAttributes(ArrayAttr attrs) {
    if (!attrs)
      return attrs;
    bool changed = false;
    SmallVector<Attribute> kept;
    for (Attribute attr : attrs) {
      auto dict = cast<DictionaryAttr>(attr);
      SmallVector<NamedAttribute> entries;
      for (NamedAttribute entry : dict)
        if (entry.getName().getValue().starts_with("llvm."))
          entries.push_back(entry);
        else
          changed = true;
      kept.push_back(DictionaryAttr::get(attrs.getContext(), entries));
    }
    return changed ? ArrayAttr::get(attrs.getContext(), kept) : attrs;
  }

  struct Saved {
    LLVM::LLVMFuncOp func;
    ArrayAttr args, results;
  };
  SmallVector<Saved> saved;
};
} // namespace

std::unique_ptr<llvm::Module> translateToLLVMIR(ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);
  ForeignAttributesCleared cleared(module);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "kiln_model");
  if (!llvmModule)
    return nullptr;
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  return llvmModule;
}

bool optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel, std::string &error) {
  auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                               &machine);
  if (llvm::Error err = transformer(&module)) {
    error = llvm::toString(std::move(err));
    return false;
  }
  return true;
}

bool emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                     bool assembly, std::string &out, std::string &error) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  assembly ? llvm::CodeGenFileType::AssemblyFile
                                           : llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit this file type";
    return false;
  }
  pm.run(module);
  out.assign(buffer.begin(), buffer.end());
  return true;
}

unsigned codegenPartitions(const llvm::Module &module) {
  size_t threshold = kSplitModuleInstructions;
  if (const char *env = std::getenv("KILN_SPLIT_CODEGEN_INSTRUCTIONS"))
    threshold = std::strtoull(env, nullptr, 10);
  size_t instructions = 0;
  for (const llvm::Function &function : module)
    instructions += function.getInstructionCount();
  return instructions >= threshold ? kModulePartitions : 1;
}

bool emitObjects(std::unique_ptr<llvm::Module> module, const TargetInfo &info,
                 unsigned optLevel, unsigned partitions,
                 std::vector<std::string> &objects, std::string &error) {
  objects.clear();
  if (partitions <= 1) {
    std::unique_ptr<llvm::TargetMachine> machine =
        createTargetMachine(info, optLevel, error);
    if (!machine || !optimizeLLVMModule(*module, *machine, optLevel, error))
      return false;
    objects.emplace_back();
    return emitMachineCode(*module, *machine, /*assembly=*/false,
                           objects.back(), error);
  }
  // The partitions travel as bitcode: each thread parses its own into a
  // context of its own (an LLVMContext is not shared across threads).
  std::vector<llvm::SmallVector<char, 0>> bitcode;
  llvm::SplitModule(*module, partitions,
                    [&](std::unique_ptr<llvm::Module> part) {
                      bitcode.emplace_back();
                      llvm::raw_svector_ostream os(bitcode.back());
                      llvm::WriteBitcodeToFile(*part, os);
                    });
  module.reset();
  objects.resize(bitcode.size());
  std::vector<std::string> errors(bitcode.size());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(bitcode.size()));
    for (size_t i = 0; i < bitcode.size(); ++i)
      pool.async([&, i] {
        llvm::LLVMContext context;
        llvm::Expected<std::unique_ptr<llvm::Module>> part =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef(
                    llvm::StringRef(bitcode[i].data(), bitcode[i].size()),
                    "kiln_model.part" + std::to_string(i)),
                context);
        if (!part) {
          errors[i] = llvm::toString(part.takeError());
          return;
        }
        std::unique_ptr<llvm::TargetMachine> machine =
            createTargetMachine(info, optLevel, errors[i]);
        if (!machine ||
            !optimizeLLVMModule(**part, *machine, optLevel, errors[i]))
          return;
        emitMachineCode(**part, *machine, /*assembly=*/false, objects[i],
                        errors[i]);
      });
    pool.wait();
  }
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return false;
    }
  return true;
}

std::string findSupportArchive(const char *envVar, llvm::StringRef name) {
  if (const char *env = std::getenv(envVar))
    return env;
  // Beside the running tool (build/bin/../lib), then beside the binary that
  // holds this code (a library loaded by another program: the Python
  // extension, a test), then where the build put it.
  auto beside = [&](const std::string &binary) {
    llvm::SmallString<256> path(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(binary)));
    llvm::sys::path::append(path, "lib", name);
    return std::string(path);
  };
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&findSupportArchive));
  std::string candidate = beside(self);
  if (llvm::sys::fs::exists(candidate))
    return candidate;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&findSupportArchive), &info) &&
      info.dli_fname) {
    std::string library = beside(info.dli_fname);
    if (llvm::sys::fs::exists(library))
      return library;
  }
  llvm::SmallString<256> built(
      llvm::sys::path::parent_path(KILN_ABI_ARCHIVE_PATH));
  llvm::sys::path::append(built, name);
  if (llvm::sys::fs::exists(built))
    return std::string(built);
  return candidate;
}

std::string llvmLibraryDir() {
  if (const char *env = std::getenv("KILN_LLVM_LIBRARY_DIR"))
    return env;
  return KILN_LLVM_LIBRARY_DIR;
}

/// LLVM's compiler-rt builtins for the code this LLVM generates:
/// $KILN_BUILTINS_ARCHIVE, else the clang resource folder beside the LLVM
/// libraries (Debian's libclang-rt-<N>-dev). Empty when it is absent.
static std::string findBuiltinsArchive() {
  if (const char *env = std::getenv("KILN_BUILTINS_ARCHIVE"))
    return env;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::SmallString<256> path(llvmLibraryDir());
  llvm::sys::path::append(path, "clang", std::to_string(LLVM_VERSION_MAJOR),
                          "lib", "linux");
  llvm::sys::path::append(path, "libclang_rt.builtins-" +
                                    triple.getArchName().str() + ".a");
  return llvm::sys::fs::exists(path) ? std::string(path) : std::string();
}

bool linkWithSystemCompiler(const std::string &object,
                            llvm::ArrayRef<std::string> libraries,
                            llvm::StringRef what, std::string &sharedObject,
                            std::string &error) {
  return linkWithSystemCompiler(llvm::ArrayRef<std::string>(object), libraries,
                                what, sharedObject, error);
}

bool linkWithSystemCompiler(llvm::ArrayRef<std::string> objects,
                            llvm::ArrayRef<std::string> libraries,
                            llvm::StringRef what, std::string &sharedObject,
                            std::string &error) {
  const char *ccEnv = std::getenv("KILN_CC");
  auto cc = llvm::sys::findProgramByName(ccEnv ? ccEnv : "cc");
  if (!cc) {
    error = "no C compiler driver to link with (install gcc, or set KILN_CC)";
    return false;
  }
  std::vector<llvm::SmallString<128>> objPaths(objects.size());
  llvm::SmallString<128> soPath, logPath;
  auto removeObjects = llvm::make_scope_exit([&] {
    for (const llvm::SmallString<128> &path : objPaths)
      if (!path.empty())
        llvm::sys::fs::remove(path);
  });
  for (auto [object, path] : llvm::zip(objects, objPaths)) {
    int fd;
    if (llvm::sys::fs::createTemporaryFile("kiln-model", "o", fd, path)) {
      error = "cannot create temporary files";
      return false;
    }
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  if (llvm::sys::fs::createTemporaryFile("kiln-model", "so", soPath) ||
      llvm::sys::fs::createTemporaryFile("kiln-link", "log", logPath)) {
    error = "cannot create temporary files";
    return false;
  }
  // -z defs: a symbol the code needs and nothing here defines is a link
  // error now, not a load error on the machine that runs the artifact.
  std::vector<std::string> args = {*cc, "-shared", "-Wl,-z,defs", "-o",
                                   std::string(soPath)};
  for (const llvm::SmallString<128> &path : objPaths)
    args.push_back(std::string(path));
  args.insert(args.end(), libraries.begin(), libraries.end());
  // LLVM lowers conversions the target CPU has no instruction for (f32 ->
  // bf16 without AVX512-BF16, f16 <-> f32 without F16C, f64 -> f16/bf16)
  // to compiler-rt builtins (__truncsfbf2, __extendhfsf2, ...). The system
  // compiler's libgcc (GCC 12) lacks the bf16 ones, so the builtins of the
  // LLVM that generated the code are linked in, their symbols kept local.
  std::string builtins = findBuiltinsArchive();
  if (!builtins.empty()) {
    args.push_back(builtins);
    args.push_back("-Wl,--exclude-libs," +
                   llvm::sys::path::filename(builtins).str());
  }
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt,
                                                llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  int rc = llvm::sys::ExecuteAndWait(*cc, argRefs, std::nullopt, redirects);
  auto so = llvm::MemoryBuffer::getFile(soPath);
  if (rc != 0 || !so) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    error = "linking " + what.str() + " failed";
    if (log)
      error += ":\n" + (*log)->getBuffer().str();
    if (builtins.empty() && log &&
        ((*log)->getBuffer().contains("__trunc") ||
         (*log)->getBuffer().contains("__extend")))
      error += "\n(LLVM's compiler-rt builtins were not found: install "
               "libclang-rt-" + std::to_string(LLVM_VERSION_MAJOR) +
               "-dev, or set KILN_BUILTINS_ARCHIVE)";
  } else {
    sharedObject = (*so)->getBuffer().str();
  }
  llvm::sys::fs::remove(soPath);
  llvm::sys::fs::remove(logPath);
  return error.empty();
}

} // namespace kiln::host
