/*===- TestConvKernel.c - kiln_abi_conv2d_nchw_f32 against a double loop --===*
 *
 * Library mode's convolution (runtime/abi/kiln_abi_blas.c) on random
 * shapes: batch 1..3, channels, 1x1 to 5x5 filters, strides 1..2,
 * dilations 1..2, asymmetric padding, each output initialization (accumulate
 * into what is there, zeros, the bias) and each epilogue (none, + residual,
 * relu, both), on 1 and 2 threads. Every output must be within
 * (C*KH*KW + 2) * 2^-23 * sum |terms| of the double-precision sum.
 * `kiln-test-conv-kernel avx512|avx2|openblas` forces one micro-kernel
 * (KernelPath.h); a path this CPU lacks is reported as skipped.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "KernelPath.h"

void kiln_abi_conv2d_nchw_f32(
    intptr_t in, int64_t inoff, int64_t n, int64_t c, int64_t h, int64_t w,
    intptr_t filter, int64_t filteroff, int64_t f, int64_t kh, int64_t kw,
    intptr_t out, int64_t outoff, int64_t oh, int64_t ow, int64_t sh,
    int64_t sw, int64_t dh, int64_t dw, int64_t top, int64_t left,
    int64_t init, intptr_t bias, int64_t biasoff, int64_t epilogue,
    intptr_t residual, int64_t residualoff, intptr_t result,
    int64_t resultoff);
void kiln_abi_set_num_threads(int32_t);
int kiln_abi_conv_kernel_isa(void);

static float uniform(void) { return (float)rand() / RAND_MAX * 2.0f - 1.0f; }

static float *randomArray(int64_t size) {
  float *p = malloc(sizeof(float) * (size ? size : 1));
  for (int64_t i = 0; i < size; ++i)
    p[i] = uniform();
  return p;
}

int main(int argc, char **argv) {
  static const struct KilnTestPath paths[] = {
      {"avx512", "avx512"}, {"avx2", "avx2"}, {"openblas", "portable"}};
  const struct KilnTestPath *path = kilnTestForcePath(argc, argv, paths, 3);
  int bad = 0;
  srand(5);
  for (int trial = 0; trial < 120; ++trial) {
    kiln_abi_set_num_threads(1 + trial % 2);
    int64_t n = 1 + rand() % 3, c = 1 + rand() % 9, f = 1 + rand() % 40;
    int64_t kh = 1 + rand() % 5, kw = 1 + rand() % 5;
    int64_t sh = 1 + rand() % 2, sw = 1 + rand() % 2;
    int64_t dh = 1 + rand() % 2, dw = 1 + rand() % 2;
    if (trial % 4 == 0) /* the direct 1x1 path */
      kh = kw = sh = sw = dh = dw = 1;
    int64_t top = rand() % 3, left = rand() % 3, bottom = rand() % 3,
            right = rand() % 3;
    if (trial % 4 == 0)
      top = left = bottom = right = 0;
    int64_t h = dh * (kh - 1) + 1 + rand() % 12,
            w = dw * (kw - 1) + 1 + rand() % 12;
    int64_t oh = (h + top + bottom - dh * (kh - 1) - 1) / sh + 1;
    int64_t ow = (w + left + right - dw * (kw - 1) - 1) / sw + 1;
    int64_t init = rand() % 3, epilogue = rand() % 4;
    int64_t outSize = n * f * oh * ow;
    float *in = randomArray(n * c * h * w), *filter = randomArray(f * c * kh * kw);
    float *bias = randomArray(f), *residual = randomArray(outSize);
    float *out = randomArray(outSize), *result = randomArray(outSize);
    float *before = malloc(sizeof(float) * outSize);
    for (int64_t i = 0; i < outSize; ++i)
      before[i] = out[i];
    kiln_abi_conv2d_nchw_f32((intptr_t)in, 0, n, c, h, w, (intptr_t)filter, 0,
                             f, kh, kw, (intptr_t)out, 0, oh, ow, sh, sw, dh,
                             dw, top, left, init, (intptr_t)bias, 0, epilogue,
                             (intptr_t)residual, 0, (intptr_t)result, 0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < f; ++o)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            int64_t at = ((b * f + o) * oh + y) * ow + x;
            double sum = init == 0 ? before[at] : init == 2 ? bias[o] : 0.0;
            double magnitude = fabs(sum);
            for (int64_t ci = 0; ci < c; ++ci)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  int64_t yy = y * sh - top + i * dh, xx = x * sw - left + j * dw;
                  if (yy < 0 || yy >= h || xx < 0 || xx >= w)
                    continue;
                  double term = (double)in[((b * c + ci) * h + yy) * w + xx] *
                                filter[((o * c + ci) * kh + i) * kw + j];
                  sum += term;
                  magnitude += fabs(term);
                }
            double tolerance =
                (c * kh * kw + 2) * ldexp(1.0, -23) * (magnitude + 1e-30);
            double want = sum;
            if (fabs(out[at] - want) > tolerance && bad++ < 5)
              printf("mismatch (out): trial %d N %ld C %ld F %ld K %ldx%ld "
                     "at %ld: %.9g != %.9g\n",
                     trial, (long)n, (long)c, (long)f, (long)kh, (long)kw,
                     (long)at, out[at], want);
            if (!epilogue)
              continue;
            if (epilogue & 1)
              want += residual[at];
            if ((epilogue & 2) && want < 0)
              want = 0;
            if (fabs(result[at] - want) > tolerance + 1e-6 && bad++ < 5)
              printf("mismatch (epilogue %ld): trial %d at %ld: %.9g != %.9g\n",
                     (long)epilogue, trial, (long)at, result[at], want);
          }
    free(in);
    free(filter);
    free(bias);
    free(residual);
    free(out);
    free(result);
    free(before);
  }
  int isa = kiln_abi_conv_kernel_isa();
  return kilnTestReportPath("conv2d", path,
                            isa == 2   ? "avx512"
                            : isa == 1 ? "avx2"
                                       : "openblas",
                            bad);
}
