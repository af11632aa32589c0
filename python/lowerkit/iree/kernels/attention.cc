// lowerkit's CPU attention kernel: softmax(scale * Q K^T + mask) V for one batch entry (a head)
// and a range of query rows, linked into IREE's llvm-cpu executables as an object
// (`lowerkit/iree/cpu_kernels.py`, `passes/attention.py`).
//
// Why it exists: IREE 3.13's online attention lays a step's scores out as rows by keys, keys
// along a vector's lanes, so each row's running max and sum are reductions across lanes and
// P V broadcasts every score (README, "Inside the attention dispatch"). Here the query rows go
// along the lanes instead: a block of LANES rows is one vector, the max and sum over a tile of
// keys are plain vector ops across KB registers, and both matmuls are FMAs with one operand
// broadcast from memory. The online softmax runs in base 2 (scores pre-scaled by log2 e).
//
// On AVX-512, `block2` takes two vectors of rows at a time, so that each key read feeds two of
// them (`rows` chooses).
//
// Built freestanding (no libc, no globals, no TLS): IREE's embedded ELF loader links it.
// Written with GCC/Clang vector extensions, so one source serves AVX-512 and AVX2 targets.
#include <stddef.h>
#include <stdint.h>

#ifndef LANES
#define LANES 16  // query rows per vector (16 floats: one AVX-512 register, two AVX2 ones)
#endif
#define KB 16     // keys per step of the online softmax
#define MAX_D 128 // head dims up to this; the pass keeps larger ones on IREE's attention

typedef float vf __attribute__((vector_size(LANES * 4)));
typedef int32_t vi __attribute__((vector_size(LANES * 4)));
typedef float vfu __attribute__((vector_size(LANES * 4), aligned(4)));  // an unaligned load

static inline vf splat(float x) { return (vf){} + x; }
// The running max may drop a NaN score (a NaN compares false): the NaN still reaches the row's
// sum and output through exp2v, which keeps it, as eager's softmax gives it. Keeping it here
// too cost two more compares and blends a score (the kernel alone at 4 x 1500 x 16 in a C++
// harness: 2.30 against 1.98 ms, ad hoc)
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }

// 2^f for f in [-1/2, 1/2]: a degree-6 polynomial, about 2e-7 relative error.
static inline vf exp2_fraction(vf f) {
  vf p = splat(1.5403530e-4f);
  p = p * f + 1.3333558e-3f;
  p = p * f + 9.6181291e-3f;
  p = p * f + 5.5504109e-2f;
  p = p * f + 2.4022651e-1f;
  p = p * f + 6.9314718e-1f;
  return p * f + 1.0f;
}

#if LANES == 16
// 2^x for x <= 0, NaN for NaN: the fraction's polynomial, its exponent applied by AVX-512's
// vscalefps, which underflows to exactly 0 (a masked key's weight) with no compare, mask or
// integer arithmetic of its own.
static inline vf exp2v(vf in) {
  // -inf (a masked key) would make the fraction NaN (-inf minus -inf): kept from vscalefps,
  // whose answer for (NaN, -inf) is 0 on a Zen 5 and need not be elsewhere. A NaN score
  // compares false, and stays NaN.
  const vf x = in < -160.0f ? splat(-160.0f) : in;
  vf t = x + 12582912.0f;
  vf n = t - 12582912.0f;
  vf f = x - n;
  const vf p = exp2_fraction(f);
  return __builtin_ia32_scalefps512_mask(p, n, p, (unsigned short)0xFFFF, 4);
}
#else
// 2^x for x <= 0, 0 below 2^-126 (a masked key's weight is exactly 0), NaN for NaN: the same
// polynomial, its exponent added to the float's bits.
static inline vf exp2v(vf in) {
  const vi ok = ~(in < -126.0f);  // NaN too: it is kept below
  const vf x = in < -126.0f || in != in ? splat(-126.0f) : in;
  vf t = x + 12582912.0f;  // 1.5 * 2^23: t's low mantissa bits hold round(x)
  vf n = t - 12582912.0f;
  vf f = x - n;
  const vf p = exp2_fraction(f);
  vi e = ((vi)t - 0x4B400000) << 23;
  const vf r = (vf)(((vi)p + e) & ok);
  return in != in ? in : r;
}
#endif

// A LANES x LANES tile transposed in registers: log2(LANES) rounds, each swapping the
// off-diagonal blocks of size h of every 2h x 2h block (two-vector shuffles with constant
// indices: one permute instruction each).
static inline void stage(vf* a, size_t h, vi lo, vi hi) {
  for (size_t i = 0; i < LANES; ++i) {
    if (i & h) continue;
    const vf x = a[i], y = a[i + h];
    a[i] = __builtin_shuffle(x, y, lo);
    a[i + h] = __builtin_shuffle(x, y, hi);
  }
}

static inline void transpose(vf* a) {
#if LANES == 16
  stage(a, 8, (vi){0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
        (vi){8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31});
  stage(a, 4, (vi){0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
        (vi){4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31});
  stage(a, 2, (vi){0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
        (vi){2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31});
  stage(a, 1, (vi){0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
        (vi){1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31});
#elif LANES == 8
  stage(a, 4, (vi){0, 1, 2, 3, 8, 9, 10, 11},
        (vi){4, 5, 6, 7, 12, 13, 14, 15});
  stage(a, 2, (vi){0, 1, 8, 9, 4, 5, 12, 13},
        (vi){2, 3, 10, 11, 6, 7, 14, 15});
  stage(a, 1, (vi){0, 8, 2, 10, 4, 12, 6, 14},
        (vi){1, 9, 3, 11, 5, 13, 7, 15});
#else
#error "LANES must be 8 or 16"
#endif
}

// Whether any lane of a comparison's result is set.
static inline int any_lane(vi x) {
  union { vi v; uint64_t w[LANES / 2]; } u;
  u.v = x;
  uint64_t r = 0;
  for (size_t i = 0; i < LANES / 2; ++i) r |= u.w[i];
  return r != 0;
}

// MASK_CAUSAL: key j is seen by row i where j <= i (torch's is_causal, aligned at the top
// left); nothing is read, and the key tiles after a block's last row are never visited.
enum { MASK_NONE = 0, MASK_KEYS = 1, MASK_ROWS = 2, MASK_CAUSAL = 3 };

// The keys rows [r0, r0 + nrows) visit: under a causal mask, none after the last row's.
static inline size_t keys_seen(size_t kind, size_t r0, size_t nrows, size_t S) {
  return kind == MASK_CAUSAL && r0 + nrows < S ? r0 + nrows : S;
}

// A score vector of one key under the causal mask: -inf in the lanes whose row is before it.
static inline vf causal(vf s, size_t key, vi row) {
  return (int32_t)key <= row ? s : splat(-__builtin_inff());
}

// The mask's scores of keys [j0, j0 + nkeys) for rows [0, nrows) of mrows (nrows, nkeys <=
// LANES), a vector per key, scaled to base 2; -inf past them. A full tile is read by rows and
// transposed in registers.
static inline void mask_keys(const float* mrows, size_t S, size_t j0, size_t nkeys,
                             size_t nrows, vf* mk) {
  const float ninf = -__builtin_inff();
  if (nrows == LANES && nkeys == LANES) {
    for (size_t r = 0; r < LANES; ++r) mk[r] = *(const vfu*)(mrows + r * S + j0);
    transpose(mk);
  } else {
    for (size_t j = 0; j < LANES; ++j) {
      vf x = splat(ninf);
      if (j < nkeys)
        for (size_t r = 0; r < nrows; ++r) x[r] = mrows[r * S + j0 + j];
      mk[j] = x;
    }
  }
  const float log2e = 1.4426950408889634f;
#pragma GCC unroll 16
  for (size_t j = 0; j < LANES; ++j) mk[j] *= log2e;
}

// Whether any of n keys' mask vectors has a lane not -inf: a tile of keys every row masks
// is skipped.
static inline int live_keys(const vf* mk, size_t n) {
  vi live = (vi){};
  for (size_t j = 0; j < n; ++j) live |= mk[j] != splat(-__builtin_inff());
  return any_lane(live);
}

// One step of the online softmax (base 2) over N score vectors: the running max m and sum l
// move on, the scores become weights, and the factor the accumulators scale by is returned.
template <size_t N>
__attribute__((always_inline)) static inline vf softmax_step(vf* s, vf& m, vf& l) {
  vf mn = m;
#pragma GCC unroll 16
  for (size_t j = 0; j < N; ++j) mn = vmax(mn, s[j]);
  const vf base = mn == splat(-__builtin_inff()) ? splat(0.0f) : mn;  // no live key yet
  const vf alpha = exp2v(m - base);
  vf sum = splat(0.0f);
#pragma GCC unroll 16
  for (size_t j = 0; j < N; ++j) {
    s[j] = exp2v(s[j] - base);
    sum += s[j];
  }
  l = l * alpha + sum;
  m = mn;
  return alpha;
}

// Rows [r0, r0 + nrows) of batch entry b, nrows <= LANES. Q, O: [B, L, D]; K, V: [B, S, D];
// mask: MASK_KEYS [S] for every row, MASK_ROWS [L, S] at b * mask_batch_stride.
template <size_t DC>
static inline void block(const float* q, const float* k, const float* v, const float* mask,
                         float* o, size_t L, size_t S, size_t Dd, size_t kind,
                         size_t mask_batch_stride, float scale, size_t b, size_t r0,
                         size_t nrows) {
  const size_t D = DC ? DC : Dd;
  const float log2e = 1.4426950408889634f;
  const float ninf = -__builtin_inff();
  vf qt[MAX_D], acc[MAX_D];
  q += (b * L + r0) * D;
  k += b * S * D;
  v += b * S * D;
  o += (b * L + r0) * D;
  for (size_t d = 0; d < D; ++d) {
    vf x = splat(0.0f);
    for (size_t r = 0; r < nrows; ++r) x[r] = q[r * D + d] * (scale * log2e);
    qt[d] = x;
    acc[d] = splat(0.0f);
  }
  const float* mrows = kind == MASK_ROWS ? mask + b * mask_batch_stride + r0 * S : mask;
  vf m = splat(ninf), l = splat(0.0f);
  vi row;  // each lane's query row
  for (size_t r = 0; r < LANES; ++r) row[r] = (int32_t)(r0 + r);
  const size_t keys = keys_seen(kind, r0, nrows, S);
  for (size_t j0 = 0; j0 < keys; j0 += KB) {
    const size_t kb = keys - j0 < KB ? keys - j0 : KB;
    vf s[KB], mk[KB];
    if (kind == MASK_ROWS) {  // the mask's tile, a vector per key; skipped where all -inf
      for (size_t t = 0; t < KB; t += LANES)  // LANES keys at a time
        mask_keys(mrows, S, j0 + t, kb > t ? (kb - t < LANES ? kb - t : LANES) : 0, nrows,
                  mk + t);
      if (!live_keys(mk, KB)) continue;
    }
#pragma GCC unroll 16
    for (size_t j = 0; j < KB; ++j) s[j] = splat(0.0f);
    if (kb == KB) {
      for (size_t d = 0; d < D; ++d) {
        const vf qd = qt[d];
#pragma GCC unroll 16
        for (size_t j = 0; j < KB; ++j) s[j] += qd * k[(j0 + j) * D + d];
      }
    } else {
      for (size_t d = 0; d < D; ++d)
        for (size_t j = 0; j < kb; ++j) s[j] += qt[d] * k[(j0 + j) * D + d];
      for (size_t j = kb; j < KB; ++j) s[j] = splat(ninf);
    }
    if (kind == MASK_KEYS) {
      for (size_t j = 0; j < kb; ++j) s[j] += mask[j0 + j] * log2e;
    } else if (kind == MASK_ROWS) {
#pragma GCC unroll 16
      for (size_t j = 0; j < KB; ++j) s[j] += mk[j];
    } else if (kind == MASK_CAUSAL && j0 + KB > r0 + 1) {  // a tile across the diagonal
      for (size_t j = 0; j < kb; ++j) s[j] = causal(s[j], j0 + j, row);
    }
    const vf alpha = softmax_step<KB>(s, m, l);
    if (kb == KB) {
      for (size_t d = 0; d < D; ++d) {
        vf a = acc[d] * alpha;
#pragma GCC unroll 16
        for (size_t j = 0; j < KB; ++j) a += s[j] * v[(j0 + j) * D + d];
        acc[d] = a;
      }
    } else {
      for (size_t d = 0; d < D; ++d) {
        vf a = acc[d] * alpha;
        for (size_t j = 0; j < kb; ++j) a += s[j] * v[(j0 + j) * D + d];
        acc[d] = a;
      }
    }
  }
  const vf inv = l > 0.0f ? 1.0f / l : splat(0.0f);  // a row whose every key is masked: 0
  for (size_t r = 0; r < nrows; ++r)
    for (size_t d = 0; d < D; ++d) o[r * D + d] = acc[d][r] * inv[r];
}

#if LANES == 16
// Two vectors of query rows (2 * LANES rows) against KB2 keys a step: each key's broadcast
// feeds two FMAs, so a step loads 10 operands for 16 FMAs where `block` loads 17 (AVX-512's
// 32 registers hold the 16 score vectors; AVX2's 16 do not). A MASK_ROWS tile is read
// LANES keys at a time, for two steps.
#define KB2 8

// The scores of n keys for both vectors of rows (s0, s1 for qt0, qt1; the rest untouched).
template <size_t D>
__attribute__((always_inline)) static inline void scores2(vf* s0, vf* s1, const vf* qt0,
                                                          const vf* qt1, const float* k,
                                                          size_t n) {
#pragma GCC unroll 8
  for (size_t j = 0; j < n; ++j) s0[j] = s1[j] = splat(0.0f);
  for (size_t d = 0; d < D; ++d) {
    const vf a = qt0[d], c = qt1[d];
#pragma GCC unroll 8
    for (size_t j = 0; j < n; ++j) {
      const float kk = k[j * D + d];
      s0[j] += a * kk;
      s1[j] += c * kk;
    }
  }
}

// acc = acc * alpha + the n keys' values weighted by s, for both vectors of rows.
template <size_t D>
__attribute__((always_inline)) static inline void weigh_values2(
    vf* acc0, vf* acc1, vf alpha0, vf alpha1, const vf* s0, const vf* s1, const float* v,
    size_t n) {
  for (size_t d = 0; d < D; ++d) {
    vf a = acc0[d] * alpha0, c = acc1[d] * alpha1;
#pragma GCC unroll 8
    for (size_t j = 0; j < n; ++j) {
      const float vv = v[j * D + d];
      a += s0[j] * vv;
      c += s1[j] * vv;
    }
    acc0[d] = a;
    acc1[d] = c;
  }
}

template <size_t DC>
static inline void block2(const float* q, const float* k, const float* v, const float* mask,
                          float* o, size_t L, size_t S, size_t kind, size_t mask_batch_stride,
                          float scale, size_t b, size_t r0, size_t nrows) {
  constexpr size_t D = DC;
  const float log2e = 1.4426950408889634f;
  const float ninf = -__builtin_inff();
  vf qt0[D], qt1[D], acc0[D], acc1[D];
  q += (b * L + r0) * D;
  k += b * S * D;
  v += b * S * D;
  o += (b * L + r0) * D;
  for (size_t d = 0; d < D; ++d) {
    vf x = splat(0.0f), y = splat(0.0f);
    for (size_t r = 0; r < LANES; ++r) x[r] = q[r * D + d] * (scale * log2e);
    for (size_t r = LANES; r < nrows; ++r) y[r - LANES] = q[r * D + d] * (scale * log2e);
    qt0[d] = x;
    qt1[d] = y;
    acc0[d] = acc1[d] = splat(0.0f);
  }
  vf m0 = splat(ninf), l0 = splat(0.0f), m1 = splat(ninf), l1 = splat(0.0f);
  vi row0, row1;
  for (size_t r = 0; r < LANES; ++r) {
    row0[r] = (int32_t)(r0 + r);
    row1[r] = (int32_t)(r0 + LANES + r);
  }
  const float* mrows = kind == MASK_ROWS ? mask + b * mask_batch_stride + r0 * S : mask;
  vf mt0[LANES], mt1[LANES];  // the mask's tile of LANES keys, for both vectors of rows
  int live[LANES / KB2];      // whether each step of the tile has a key not masked
  const size_t keys = keys_seen(kind, r0, nrows, S);
  for (size_t j0 = 0; j0 < keys; j0 += KB2) {
    const size_t kb = keys - j0 < KB2 ? keys - j0 : KB2;
    const size_t step = (j0 % LANES) / KB2;
    if (kind == MASK_ROWS) {
      if (step == 0) {
        const size_t n = keys - j0 < LANES ? keys - j0 : LANES;
        mask_keys(mrows, S, j0, n, LANES, mt0);
        mask_keys(mrows + LANES * S, S, j0, n, nrows - LANES, mt1);
        for (size_t t = 0; t < LANES / KB2; ++t)
          live[t] = live_keys(mt0 + t * KB2, KB2) || live_keys(mt1 + t * KB2, KB2);
      }
      if (!live[step]) continue;
    }
    vf s0[KB2], s1[KB2];
    if (kb == KB2) {  // a constant count: the key loop unrolls
      scores2<D>(s0, s1, qt0, qt1, k + j0 * D, KB2);
    } else {
      scores2<D>(s0, s1, qt0, qt1, k + j0 * D, kb);
      for (size_t j = kb; j < KB2; ++j) s0[j] = s1[j] = splat(ninf);
    }
    if (kind == MASK_KEYS) {
      for (size_t j = 0; j < kb; ++j) {
        const float mk = mask[j0 + j] * log2e;
        s0[j] += mk;
        s1[j] += mk;
      }
    } else if (kind == MASK_ROWS) {
#pragma GCC unroll 8
      for (size_t j = 0; j < KB2; ++j) {
        s0[j] += mt0[step * KB2 + j];
        s1[j] += mt1[step * KB2 + j];
      }
    } else if (kind == MASK_CAUSAL && j0 + KB2 > r0 + 1) {  // a tile across the diagonal
      for (size_t j = 0; j < kb; ++j) {
        s0[j] = causal(s0[j], j0 + j, row0);
        s1[j] = causal(s1[j], j0 + j, row1);
      }
    }
    const vf alpha0 = softmax_step<KB2>(s0, m0, l0);
    const vf alpha1 = softmax_step<KB2>(s1, m1, l1);
    if (kb == KB2)  // a constant count: the key loop unrolls
      weigh_values2<D>(acc0, acc1, alpha0, alpha1, s0, s1, v + j0 * D, KB2);
    else
      weigh_values2<D>(acc0, acc1, alpha0, alpha1, s0, s1, v + j0 * D, kb);
  }
  const vf inv0 = l0 > 0.0f ? 1.0f / l0 : splat(0.0f);  // a row whose every key is masked: 0
  const vf inv1 = l1 > 0.0f ? 1.0f / l1 : splat(0.0f);
  for (size_t r = 0; r < LANES; ++r)
    for (size_t d = 0; d < D; ++d) o[r * D + d] = acc0[d][r] * inv0[r];
  for (size_t r = LANES; r < nrows; ++r)
    for (size_t d = 0; d < D; ++d) o[r * D + d] = acc1[d][r - LANES] * inv1[r - LANES];
}
#endif

static void rows(const float* q, const float* k, const float* v, const float* mask, float* o,
                 size_t L, size_t S, size_t D, size_t kind, size_t mask_batch_stride,
                 float scale, size_t b, size_t r_begin, size_t r_end) {
  size_t r0 = r_begin;
#if LANES == 16
  if (D == 16 || D == 32 || D == 64)
    for (; r0 + LANES < r_end; r0 += 2 * LANES) {  // two vectors of rows at a time
      const size_t n = r_end - r0 < 2 * LANES ? r_end - r0 : 2 * LANES;
#define LK_CASE2(N) \
  block2<N>(q, k, v, mask, o, L, S, kind, mask_batch_stride, scale, b, r0, n)
      if (D == 16) LK_CASE2(16);
      else if (D == 32) LK_CASE2(32);
      else LK_CASE2(64);
    }
#endif
  for (; r0 < r_end; r0 += LANES) {
    const size_t n = r_end - r0 < LANES ? r_end - r0 : LANES;
#define LK_CASE(N) \
  case N: block<N>(q, k, v, mask, o, L, S, D, kind, mask_batch_stride, scale, b, r0, n); break;
    switch (D) {
      LK_CASE(16) LK_CASE(32) LK_CASE(64) LK_CASE(128)
      default: block<0>(q, k, v, mask, o, L, S, D, kind, mask_batch_stride, scale, b, r0, n);
    }
  }
}

// MLIR's memref<?xf32> as IREE passes it to an imported function: base, aligned, offset,
// size, stride.
#define MEMREF(T, name) T* name##_base, T* name##_aligned, size_t name##_offset, \
                        size_t name##_size, size_t name##_stride

// Workgroup (x, y) computes rows [x * rows_per_group, ...) of batch entry y.
// kind: MASK_NONE or MASK_CAUSAL.
extern "C" void lowerkit_attention_f32(MEMREF(const float, q), MEMREF(const float, k),
                                       MEMREF(const float, v), MEMREF(float, o), size_t L,
                                       size_t S, size_t D, size_t kind, float scale,
                                       size_t rows_per_group, size_t x, size_t y) {
  const size_t begin = x * rows_per_group;
  const size_t end = begin + rows_per_group < L ? begin + rows_per_group : L;
  rows(q_base + q_offset, k_base + k_offset, v_base + v_offset, 0, o_base + o_offset, L, S, D,
       kind, 0, scale, y, begin, end);
}

extern "C" void lowerkit_attention_masked_f32(
    MEMREF(const float, q), MEMREF(const float, k), MEMREF(const float, v),
    MEMREF(const float, mask), MEMREF(float, o), size_t L, size_t S, size_t D, size_t kind,
    size_t mask_batch_stride, float scale, size_t rows_per_group, size_t x, size_t y) {
  const size_t begin = x * rows_per_group;
  const size_t end = begin + rows_per_group < L ? begin + rows_per_group : L;
  rows(q_base + q_offset, k_base + k_offset, v_base + v_offset, mask_base + mask_offset,
       o_base + o_offset, L, S, D, kind, mask_batch_stride, scale, y, begin, end);
}
