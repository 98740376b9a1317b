/*===- kiln_abi_isa.h - Which instruction sets the ABI's kernels may use --===*
 *
 * Every hand-written kernel of the ABI archives picks its code path at run
 * time (CPUID, __builtin_cpu_supports) and then asks kiln_abi_isa_allows
 * whether it may take it. $KILN_ISA caps the choice so that tests and
 * measurements can force each fallback on a CPU that has more:
 *
 *   KILN_ISA=amx       everything the CPU has (the default)
 *   KILN_ISA=avx512    no AMX tiles (AVX-512 and VNNI kernels)
 *   KILN_ISA=avx2      no AVX-512 either
 *   KILN_ISA=portable  the plain C loops (and OpenBLAS in library mode)
 *
 * KILN_NO_AMX=1 is KILN_ISA=avx512 and KILN_QGEMM_PORTABLE=1 forces the
 * portable int8 GEMM, as before. The value is read once per process.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_ABI_ISA_H
#define KILN_ABI_ISA_H

enum KilnIsa {
  KILN_ISA_PORTABLE = 0,
  KILN_ISA_AVX2 = 1,
  KILN_ISA_AVX512 = 2,
  KILN_ISA_AMX = 3,
};

/* 1 when $KILN_ISA (and KILN_NO_AMX) let the kernels use `isa`; whether the
 * CPU has it is the caller's check. */
int kiln_abi_isa_allows(enum KilnIsa isa);

#endif /* KILN_ABI_ISA_H */
