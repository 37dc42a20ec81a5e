//! GEMMs on 16-bit operands for the CPU backend's mixed-precision convolutions.
//!
//! `C[m×n] (+)= A[m×k] · B[k×n]` with `C` in f32 and `A`, `B` read from 16-bit (or f32) storage
//! through strided views ([`Mat`]). Both operands are packed into panels first — `A` in
//! panels of [`MR`] rows, `B` in panels of [`NR`] columns — and a register-blocked
//! `MR × NR` micro-kernel runs over the panels. Two kernels ([`Kernel`]):
//!
//! * [`Kernel::Bf16Dot`] (x86-64 with AVX512-BF16): the panels hold *pairs* of bf16 along
//!   `k` (one `u32` per pair, the low half the even `k`; an odd `k` is padded with a zero), the
//!   layout `vdpbf16ps` wants: each instruction adds `a₂ⱼ·b₂ⱼ + a₂ⱼ₊₁·b₂ⱼ₊₁` to 16 f32 lanes.
//!   A product of two bf16 is exact in f32, so this is the widen-then-f32-GEMM result up to
//!   the order of the f32 additions (and, as the instruction does, with bf16 subnormals — below
//!   1.2·10⁻³⁸ — read as zero). Operands that are not bf16 (an f32 view) are rounded to bf16
//!   while packing: use it only where every operand holds bf16 values.
//! * [`Kernel::Wide`]: the panels hold f32 (the 16-bit values widened once, while packing) and
//!   the micro-kernel is an f32 FMA one (AVX-512F where present, portable Rust elsewhere).
//!
//! Threads: none here; the backend runs one GEMM per image on each of its threads.

use std::sync::OnceLock;

use half::{bf16, f16};

use crate::error::{ComputeError, Result};

/// Rows of an `A` panel (and of the micro-kernel's tile).
pub(crate) const MR: usize = 8;
/// Columns of a `B` panel (two 16-lane vectors).
pub(crate) const NR: usize = 32;

/// Which micro-kernel (and panel layout) a GEMM uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Kernel {
    /// bf16 pairs along `k`, `vdpbf16ps` (needs AVX512-BF16: [`bf16_dot_available`]).
    Bf16Dot,
    /// f32 panels (16-bit operands widened while packing), f32 FMA.
    #[default]
    Wide,
}

/// Whether this CPU runs [`Kernel::Bf16Dot`] (AVX512-BF16 and AVX-512F; detected once).
pub(crate) fn bf16_dot_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx512bf16") && is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether the AVX-512F f32 micro-kernel runs here (detected once).
fn avx512_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// An element a GEMM operand may be stored as.
pub(crate) trait Elem: Copy + Send + Sync {
    /// The value in f32 (exact for every implementor).
    fn to_f32(self) -> f32;
    /// The bits of the value as bf16 (rounded to nearest for a value that is not a bf16).
    fn bf16_bits(self) -> u16;
}

impl Elem for bf16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn bf16_bits(self) -> u16 {
        self.to_bits()
    }
}

impl Elem for f16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn bf16_bits(self) -> u16 {
        bf16::from_f32(f16::to_f32(self)).to_bits()
    }
}

impl Elem for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn bf16_bits(self) -> u16 {
        bf16::from_f32(self).to_bits()
    }
}

/// A strided matrix view: element `(i, j)` is `data[i·rs + j·cs]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mat<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T: Copy> Mat<'a, T> {
    /// A row-major `rows × cols` matrix.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }
    /// The transpose (no copy).
    pub fn t(self) -> Self {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }
    /// Whether every element lies inside `data`.
    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < self.data.len()
    }
}

/// One operand packed into panels: `outer` (rows of `A`, columns of `B`) in panels of `width`,
/// each panel `depth × width` (depth = `k`, or `⌈k/2⌉` pairs for [`Kernel::Bf16Dot`]),
/// zero-padded past `outer` and `k`.
#[derive(Debug, Default)]
pub(crate) struct Packed {
    kernel: Kernel,
    outer: usize,
    k: usize,
    depth: usize,
    width: usize,
    pairs: Vec<u32>,
    wide: Vec<f32>,
}

fn bad(what: String) -> ComputeError {
    ComputeError::Backend {
        backend: "cpu".into(),
        reason: what,
    }
}

impl Packed {
    /// Packs `A` (`m × k`) in panels of [`MR`] rows.
    pub fn pack_a<T: Elem>(&mut self, kernel: Kernel, a: Mat<'_, T>) -> Result<()> {
        self.pack(kernel, a, MR)
    }

    /// Packs `B` (`k × n`) in panels of [`NR`] columns.
    pub fn pack_b<T: Elem>(&mut self, kernel: Kernel, b: Mat<'_, T>) -> Result<()> {
        self.pack(kernel, b.t(), NR)
    }

    /// Packs `v` (`outer × k`) in panels of `width` rows of `v`.
    fn pack<T: Elem>(&mut self, kernel: Kernel, v: Mat<'_, T>, width: usize) -> Result<()> {
        if !v.fits() {
            return Err(bad(format!(
                "gemm16: a {}×{} view (strides {}, {}) does not fit in {} elements",
                v.rows,
                v.cols,
                v.rs,
                v.cs,
                v.data.len()
            )));
        }
        let (outer, k) = (v.rows, v.cols);
        let depth = match kernel {
            Kernel::Bf16Dot => k.div_ceil(2),
            Kernel::Wide => k,
        };
        let panels = outer.div_ceil(width);
        let len = panels * depth * width;
        *self = Packed {
            kernel,
            outer,
            k,
            depth,
            width,
            pairs: std::mem::take(&mut self.pairs),
            wide: std::mem::take(&mut self.wide),
        };
        match kernel {
            Kernel::Bf16Dot => {
                self.wide.clear();
                self.pairs.clear();
                self.pairs.resize(len, 0);
                for p in 0..panels {
                    let o0 = p * width;
                    let w = width.min(outer - o0);
                    let dst = &mut self.pairs[p * depth * width..(p + 1) * depth * width];
                    pack_pairs(v, o0, w, width, dst);
                }
            }
            Kernel::Wide => {
                self.pairs.clear();
                self.wide.clear();
                self.wide.resize(len, 0.0);
                for p in 0..panels {
                    let o0 = p * width;
                    let w = width.min(outer - o0);
                    let dst = &mut self.wide[p * depth * width..(p + 1) * depth * width];
                    pack_wide(v, o0, w, width, dst);
                }
            }
        }
        Ok(())
    }
}

/// One panel of pairs: `dst[kk·width + r] = (v(o0+r, 2kk), v(o0+r, 2kk+1))` for `r < w`.
fn pack_pairs<T: Elem>(v: Mat<'_, T>, o0: usize, w: usize, width: usize, dst: &mut [u32]) {
    let k = v.cols;
    let full = k / 2;
    if v.rs == 1 {
        // Outer index contiguous: two source runs per pair row, interleaved.
        for kk in 0..full {
            let lo = &v.data[o0 + 2 * kk * v.cs..][..w];
            let hi = &v.data[o0 + (2 * kk + 1) * v.cs..][..w];
            let d = &mut dst[kk * width..kk * width + w];
            for ((d, l), h) in d.iter_mut().zip(lo).zip(hi) {
                *d = l.bf16_bits() as u32 | (h.bf16_bits() as u32) << 16;
            }
        }
        if k % 2 == 1 {
            let lo = &v.data[o0 + (k - 1) * v.cs..][..w];
            let d = &mut dst[full * width..full * width + w];
            for (d, l) in d.iter_mut().zip(lo) {
                *d = l.bf16_bits() as u32;
            }
        }
    } else if v.cs == 1 {
        // k contiguous: each pair is two neighbours of one source row.
        for r in 0..w {
            let row = &v.data[(o0 + r) * v.rs..][..k];
            for (kk, pair) in row.chunks(2).enumerate() {
                let lo = pair[0].bf16_bits() as u32;
                let hi = pair.get(1).map_or(0, |h| h.bf16_bits() as u32);
                dst[kk * width + r] = lo | hi << 16;
            }
        }
    } else {
        for r in 0..w {
            let base = (o0 + r) * v.rs;
            for kk in 0..k.div_ceil(2) {
                let lo = v.data[base + 2 * kk * v.cs].bf16_bits() as u32;
                let hi = if 2 * kk + 1 < k {
                    v.data[base + (2 * kk + 1) * v.cs].bf16_bits() as u32
                } else {
                    0
                };
                dst[kk * width + r] = lo | hi << 16;
            }
        }
    }
}

/// One panel widened to f32: `dst[kk·width + r] = v(o0+r, kk)` for `r < w`.
fn pack_wide<T: Elem>(v: Mat<'_, T>, o0: usize, w: usize, width: usize, dst: &mut [f32]) {
    let k = v.cols;
    if v.rs == 1 {
        for kk in 0..k {
            let src = &v.data[o0 + kk * v.cs..][..w];
            for (d, s) in dst[kk * width..kk * width + w].iter_mut().zip(src) {
                *d = s.to_f32();
            }
        }
    } else {
        for r in 0..w {
            let base = (o0 + r) * v.rs;
            if v.cs == 1 {
                for (kk, s) in v.data[base..base + k].iter().enumerate() {
                    dst[kk * width + r] = s.to_f32();
                }
            } else {
                for kk in 0..k {
                    dst[kk * width + r] = v.data[base + kk * v.cs].to_f32();
                }
            }
        }
    }
}

/// `C (+)= A · B` from packed operands: `c` row-major with leading dimension `ldc`; with
/// `accumulate` the product is added to `c`, without it `c` is overwritten.
pub(crate) fn gemm_packed(
    a: &Packed,
    b: &Packed,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    let (m, n) = (a.outer, b.outer);
    if a.kernel != b.kernel || a.k != b.k || a.width != MR || b.width != NR {
        return Err(bad(format!(
            "gemm16: operands packed apart ({:?} k={} width {}, {:?} k={} width {})",
            a.kernel, a.k, a.width, b.kernel, b.k, b.width
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if n > ldc || c.len() < (m - 1) * ldc + n {
        return Err(bad(format!(
            "gemm16: C of {m}×{n} (ldc {ldc}) does not fit in {} elements",
            c.len()
        )));
    }
    if a.k == 0 {
        if !accumulate {
            c.chunks_mut(ldc).take(m).for_each(|row| row[..n].fill(0.0));
        }
        return Ok(());
    }
    let depth = a.depth;
    match a.kernel {
        Kernel::Bf16Dot => {
            if !bf16_dot_available() {
                return Err(bad("gemm16: this CPU has no AVX512-BF16".into()));
            }
            #[cfg(target_arch = "x86_64")]
            for q in 0..n.div_ceil(NR) {
                let cols = NR.min(n - q * NR);
                let bp = &b.pairs[q * depth * NR..(q + 1) * depth * NR];
                for p in 0..m.div_ceil(MR) {
                    let rows = MR.min(m - p * MR);
                    let ap = &a.pairs[p * depth * MR..(p + 1) * depth * MR];
                    let cp = &mut c[p * MR * ldc + q * NR..];
                    // SAFETY: AVX512-BF16 and AVX-512F are present (checked above); `ap` and
                    // `bp` hold `depth` rows of MR and NR elements; `cp` holds rows·ldc
                    // elements from the tile's corner less the columns before it, and the
                    // kernel touches `rows` rows of `cols ≤ ldc` elements (checked above).
                    unsafe { x86::tile_bf16(depth, ap, bp, cp, ldc, rows, cols, accumulate) };
                }
            }
        }
        Kernel::Wide => {
            for q in 0..n.div_ceil(NR) {
                let cols = NR.min(n - q * NR);
                let bp = &b.wide[q * depth * NR..(q + 1) * depth * NR];
                for p in 0..m.div_ceil(MR) {
                    let rows = MR.min(m - p * MR);
                    let ap = &a.wide[p * depth * MR..(p + 1) * depth * MR];
                    let cp = &mut c[p * MR * ldc + q * NR..];
                    #[cfg(target_arch = "x86_64")]
                    if avx512_available() {
                        // SAFETY: AVX-512F is present; the slices are as for `tile_bf16`.
                        unsafe { x86::tile_wide(depth, ap, bp, cp, ldc, rows, cols, accumulate) };
                        continue;
                    }
                    tile_wide_portable(depth, ap, bp, cp, ldc, rows, cols, accumulate);
                }
            }
        }
    }
    Ok(())
}

/// The f32 micro-kernel in portable Rust.
#[allow(clippy::too_many_arguments)]
fn tile_wide_portable(
    depth: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let mut acc = [[0f32; NR]; MR];
    for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)).take(depth) {
        for (row, &av) in acc.iter_mut().zip(ak) {
            for (x, &bv) in row.iter_mut().zip(bk) {
                *x += av * bv;
            }
        }
    }
    for (r, row) in acc.iter().enumerate().take(rows) {
        let dst = &mut c[r * ldc..r * ldc + cols];
        if accumulate {
            dst.iter_mut().zip(row).for_each(|(d, s)| *d += s);
        } else {
            dst.copy_from_slice(&row[..cols]);
        }
    }
}

/// `C (+)= A · B` on unpacked operands (packs both; for tests).
#[cfg(test)]
pub(crate) fn gemm<TA: Elem, TB: Elem>(
    kernel: Kernel,
    a: Mat<'_, TA>,
    b: Mat<'_, TB>,
    accumulate: bool,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    if a.cols != b.rows {
        return Err(bad(format!(
            "gemm16: A is {}×{}, B {}×{}",
            a.rows, a.cols, b.rows, b.cols
        )));
    }
    let (mut pa, mut pb) = (Packed::default(), Packed::default());
    pa.pack_a(kernel, a)?;
    pb.pack_b(kernel, b)?;
    gemm_packed(&pa, &pb, accumulate, c, ldc)
}

// The AVX-512 intrinsics (stable since Rust 1.89, the workspace's rust-version).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// Adds (or writes) the MR×NR accumulators to `c`: `rows` rows, `cols` columns.
    ///
    /// # Safety
    /// AVX-512F present; `c` holds `(rows - 1)·ldc + cols` elements.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store(
        acc: &[[__m512; 2]; MR],
        c: &mut [f32],
        ldc: usize,
        rows: usize,
        cols: usize,
        accumulate: bool,
    ) {
        debug_assert!(rows == 0 || c.len() >= (rows - 1) * ldc + cols);
        for (r, row) in acc.iter().enumerate().take(rows) {
            for (v, &x) in row.iter().enumerate() {
                let lanes = cols.saturating_sub(16 * v).min(16);
                if lanes == 0 {
                    break;
                }
                let mask: __mmask16 = if lanes == 16 {
                    0xffff
                } else {
                    (1u16 << lanes) - 1
                };
                let off = r * ldc + 16 * v;
                // SAFETY: the masked lanes are c[off..off + lanes], inside `c` (caller's
                // contract: off + lanes ≤ (rows-1)·ldc + cols); AVX-512F is enabled here.
                unsafe {
                    let p = c.as_mut_ptr().add(off);
                    let y = if accumulate {
                        _mm512_add_ps(_mm512_maskz_loadu_ps(mask, p), x)
                    } else {
                        x
                    };
                    _mm512_mask_storeu_ps(p, mask, y);
                }
            }
        }
    }

    /// One MR×NR tile from bf16-pair panels with `vdpbf16ps`.
    ///
    /// # Safety
    /// AVX512-BF16 and AVX-512F present; `a` holds `depth·MR`, `b` `depth·NR` elements; `c`
    /// holds `(rows - 1)·ldc + cols` elements.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512bf16,avx512f")]
    pub(super) unsafe fn tile_bf16(
        depth: usize,
        a: &[u32],
        b: &[u32],
        c: &mut [f32],
        ldc: usize,
        rows: usize,
        cols: usize,
        accumulate: bool,
    ) {
        debug_assert!(a.len() >= depth * MR && b.len() >= depth * NR);
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        for kk in 0..depth {
            // SAFETY: kk < depth, so b[kk·NR .. kk·NR + 32] and a[kk·MR .. kk·MR + MR] are
            // inside the slices (caller's contract); unaligned loads; the casts between
            // 512-bit vector types only reinterpret bits.
            unsafe {
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(kk * NR).cast()));
                let b1: __m512bh =
                    std::mem::transmute(_mm512_loadu_si512(bp.add(kk * NR + 16).cast()));
                for (r, row) in acc.iter_mut().enumerate() {
                    let av: __m512bh =
                        std::mem::transmute(_mm512_set1_epi32(*ap.add(kk * MR + r) as i32));
                    row[0] = _mm512_dpbf16_ps(row[0], av, b0);
                    row[1] = _mm512_dpbf16_ps(row[1], av, b1);
                }
            }
        }
        // SAFETY: AVX-512F is enabled here; `c` as the caller promised.
        unsafe { store(&acc, c, ldc, rows, cols, accumulate) }
    }

    /// One MR×NR tile from f32 panels with FMA.
    ///
    /// # Safety
    /// As [`tile_bf16`], AVX-512F present.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_wide(
        depth: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        ldc: usize,
        rows: usize,
        cols: usize,
        accumulate: bool,
    ) {
        debug_assert!(a.len() >= depth * MR && b.len() >= depth * NR);
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        for kk in 0..depth {
            // SAFETY: as in `tile_bf16`: every offset read is inside `a` and `b`.
            unsafe {
                let b0 = _mm512_loadu_ps(bp.add(kk * NR));
                let b1 = _mm512_loadu_ps(bp.add(kk * NR + 16));
                for (r, row) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_ps(*ap.add(kk * MR + r));
                    row[0] = _mm512_fmadd_ps(av, b0, row[0]);
                    row[1] = _mm512_fmadd_ps(av, b1, row[1]);
                }
            }
        }
        // SAFETY: AVX-512F is enabled here; `c` as the caller promised.
        unsafe { store(&acc, c, ldc, rows, cols, accumulate) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const SIZES: [usize; 5] = [1, 7, 31, 33, 129];

    fn naive(a: Mat<'_, bf16>, b: Mat<'_, bf16>) -> Vec<f64> {
        let (m, k, n) = (a.rows, a.cols, b.cols);
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|l| {
                        a.data[i * a.rs + l * a.cs].to_f64() * b.data[l * b.rs + j * b.cs].to_f64()
                    })
                    .sum();
            }
        }
        c
    }

    fn rand_bf16(rng: &mut impl Rng, len: usize) -> Vec<bf16> {
        (0..len)
            .map(|_| bf16::from_f32(rng.random_range(-1.0f32..1.0)))
            .collect()
    }

    /// Every (m, k, n) of SIZES with A row- or column-major and B row- or column-major,
    /// against the f64 product of the same bf16 values, overwriting and accumulating.
    fn check(kernel: Kernel) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        for &m in &SIZES {
            for &k in &SIZES {
                for &n in &SIZES {
                    let ad = rand_bf16(&mut rng, m * k);
                    let bd = rand_bf16(&mut rng, k * n);
                    for (a_t, b_t) in [(false, false), (true, true), (false, true), (true, false)] {
                        let a = if a_t {
                            Mat::row_major(&ad, k, m).t()
                        } else {
                            Mat::row_major(&ad, m, k)
                        };
                        let b = if b_t {
                            Mat::row_major(&bd, n, k).t()
                        } else {
                            Mat::row_major(&bd, k, n)
                        };
                        let want = naive(a, b);
                        // Overwrite a poisoned C with a wider leading dimension.
                        let ldc = n + 3;
                        let mut c = vec![f32::NAN; m * ldc];
                        gemm(kernel, a, b, false, &mut c, ldc).unwrap();
                        // Accumulate: C = 1 + A·B.
                        let mut c2 = vec![1f32; m * n];
                        gemm(kernel, a, b, true, &mut c2, n).unwrap();
                        for i in 0..m {
                            for j in 0..n {
                                let w = want[i * n + j];
                                // f32 accumulation of k exact products, |terms| < 1.
                                let tol = 1e-6 * (k as f64) + 1e-6;
                                let got = c[i * ldc + j] as f64;
                                assert!(
                                    (got - w).abs() <= tol,
                                    "{kernel:?} m{m} k{k} n{n} a_t{a_t} b_t{b_t} ({i},{j}): {got} vs {w}"
                                );
                                let got2 = c2[i * n + j] as f64;
                                assert!(
                                    (got2 - 1.0 - w).abs() <= tol + 1e-6,
                                    "{kernel:?} accumulate m{m} k{k} n{n} ({i},{j}): {got2} vs 1+{w}"
                                );
                            }
                            // The padding columns of C are untouched.
                            for j in n..ldc {
                                assert!(c[i * ldc + j].is_nan(), "{kernel:?} wrote past n");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gemm16_bf16_dot_matches_an_f64_gemm_of_the_same_bf16_values() {
        if !bf16_dot_available() {
            eprintln!("no AVX512-BF16 on this CPU: Bf16Dot not tested here");
            let e = gemm(
                Kernel::Bf16Dot,
                Mat::row_major(&[bf16::ONE], 1, 1),
                Mat::row_major(&[bf16::ONE], 1, 1),
                false,
                &mut [0.0],
                1,
            );
            assert!(
                e.is_err(),
                "without the feature Bf16Dot is an error, not a crash"
            );
            return;
        }
        check(Kernel::Bf16Dot);
    }

    #[test]
    fn gemm16_wide_fallback_matches_an_f64_gemm_of_the_same_bf16_values() {
        check(Kernel::Wide);
    }

    #[test]
    fn gemm16_portable_kernel_matches_the_avx512_one() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (m, k, n) = (13, 31, 45);
        let ad = rand_bf16(&mut rng, m * k);
        let bd = rand_bf16(&mut rng, k * n);
        let (mut pa, mut pb) = (Packed::default(), Packed::default());
        pa.pack_a(Kernel::Wide, Mat::row_major(&ad, m, k)).unwrap();
        pb.pack_b(Kernel::Wide, Mat::row_major(&bd, k, n)).unwrap();
        let mut c = vec![0f32; m * n];
        gemm_packed(&pa, &pb, false, &mut c, n).unwrap();
        let mut c2 = vec![0f32; m * n];
        for q in 0..n.div_ceil(NR) {
            for p in 0..m.div_ceil(MR) {
                tile_wide_portable(
                    k,
                    &pa.wide[p * k * MR..],
                    &pb.wide[q * k * NR..],
                    &mut c2[p * MR * n + q * NR..],
                    n,
                    MR.min(m - p * MR),
                    NR.min(n - q * NR),
                    false,
                );
            }
        }
        let want = naive(Mat::row_major(&ad, m, k), Mat::row_major(&bd, k, n));
        for ((x, y), w) in c.iter().zip(&c2).zip(&want) {
            assert!((*x as f64 - w).abs() < 1e-4 && (*y as f64 - w).abs() < 1e-4);
        }
    }

    #[test]
    fn gemm16_rejects_views_outside_their_data_and_mismatched_operands() {
        let d = vec![bf16::ONE; 6];
        let mut p = Packed::default();
        assert!(p.pack_a(Kernel::Wide, Mat::row_major(&d, 3, 3)).is_err());
        let mut q = Packed::default();
        p.pack_a(Kernel::Wide, Mat::row_major(&d, 2, 3)).unwrap();
        q.pack_b(Kernel::Wide, Mat::row_major(&d, 2, 3)).unwrap();
        assert!(gemm_packed(&p, &q, false, &mut [0.0; 9], 3).is_err());
        q.pack_b(Kernel::Wide, Mat::row_major(&d, 3, 2)).unwrap();
        assert!(
            gemm_packed(&p, &q, false, &mut [0.0; 3], 2).is_err(),
            "C too small"
        );
        let mut c = [0.0; 4];
        gemm_packed(&p, &q, false, &mut c, 2).unwrap();
        assert_eq!(c, [3.0; 4]);
    }
}
