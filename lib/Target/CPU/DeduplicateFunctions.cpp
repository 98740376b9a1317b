//===- DeduplicateFunctions.cpp - Outlined functions that are the same code ==//

#include "DeduplicateFunctions.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kiln::cpu {

unsigned deduplicateFunctions(ModuleOp module,
                              ArrayRef<FunctionOpInterface> functions) {
  llvm::StringMap<FunctionOpInterface> byText;
  llvm::DenseMap<StringAttr, StringAttr> replacement;
  OpPrintingFlags flags;
  flags.enableDebugInfo(false);
  for (FunctionOpInterface fn : functions) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << fn.getFunctionType() << "\n";
    AsmState state(fn, flags);
    for (Block &block : fn.getFunctionBody()) {
      os << "^bb(";
      for (BlockArgument arg : block.getArguments())
        os << arg.getType() << ",";
      os << ")\n";
      for (Operation &op : block) {
        op.print(os, state);
        os << "\n";
      }
    }
    auto [it, inserted] = byText.try_emplace(text, fn);
    if (inserted)
      continue;
    replacement[fn.getNameAttr()] = it->second.getNameAttr();
    // The one kept assumes of a parameter only what every copy may
    // (noalias where the first layer reads the model's input and the
    // others a buffer of their own: not noalias).
    FunctionOpInterface kept = it->second;
    for (unsigned i = 0, e = kept.getNumArguments(); i < e; ++i)
      for (NamedAttribute attr : kept.getArgAttrs(i))
        if (fn.getArgAttr(i, attr.getName()) != attr.getValue())
          kept.removeArgAttr(i, attr.getName());
  }
  if (replacement.empty())
    return 0;
  // The outlined functions are only called (one walk for all of them).
  module.walk([&](CallOpInterface call) {
    auto callee = dyn_cast_if_present<SymbolRefAttr>(
        call.getCallableForCallee().dyn_cast<SymbolRefAttr>());
    if (!callee)
      return;
    if (auto it = replacement.find(callee.getLeafReference());
        it != replacement.end())
      call.setCalleeFromCallable(FlatSymbolRefAttr::get(it->second));
  });
  unsigned erased = 0;
  for (FunctionOpInterface fn : functions)
    if (replacement.count(fn.getNameAttr())) {
      fn.erase();
      ++erased;
    }
  return erased;
}

} // namespace kiln::cpu
