//! Where the implicit-GEMM convolutions of `kernels/cuda/conv_mma.cu` apply and how much shared
//! memory each launch needs: `conv_mma_*` on tensor cores (FP16/BF16, TF32) and
//! `conv_igemm_*_f32` (strict FP32 on the CUDA cores), one skeleton. The sizes mirror the
//! kernels' own layout line for line; a shape the kernels do not cover (kernel size other than 3,
//! channel counts off the tiles) gets `None` and runs on the CUDA-core `conv_block_*` kernels. A
//! single-input-channel layer (the lab's conv1) has its own weight gradient,
//! `conv_wgrad_c1_*` ([`c1_wgrad_fits`]).

use crate::model::ConvShape;

/// Threads per block of every implicit-GEMM kernel (`__launch_bounds__(512)`): 16 warps.
pub(crate) const MMA_THREADS: u32 = 512;
const WARPS: usize = MMA_THREADS as usize / 32;
/// Column tiles per warp of the weight gradient (`IGEMM_WGRAD_NT` in conv_mma.cu).
const WGRAD_NT: usize = 10;
/// The only kernel size the entry points are instantiated for.
const KERNEL: usize = 3;
/// Threads per block of `conv_wgrad_c1_*`.
pub(crate) const C1_THREADS: u32 = 512;
/// The shared memory a kernel may use without opting in (bytes).
const SMEM_DEFAULT: usize = 48 * 1024;
/// Every count the implicit-GEMM kernels stage stays below this (their `FastDiv` indexing).
const STAGED_MAX: usize = 1 << 16;

/// The operand engine of an implicit-GEMM kernel (`Igemm<D>` in conv_mma.cu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MmaType {
    /// FP16 or BF16 operands, m16n8k16.
    Half,
    /// FP32 data rounded to TF32, m16n8k8.
    Tf32,
    /// Strict FP32 on the CUDA cores (`conv_igemm_*_f32`).
    F32,
}

impl MmaType {
    /// The engine for a kernel dtype suffix (`f16`, `bf16`, `tf32`, `f32`).
    pub(crate) fn of(sfx: &str) -> Option<MmaType> {
        match sfx {
            "f16" | "bf16" => Some(MmaType::Half),
            "tf32" => Some(MmaType::Tf32),
            "f32" => Some(MmaType::F32),
            _ => None,
        }
    }
    /// Bytes of a staged element.
    fn esize(self) -> usize {
        match self {
            MmaType::Half => 2,
            MmaType::Tf32 | MmaType::F32 => 4,
        }
    }
    /// K of one step (32 bytes of K).
    fn kstep(self) -> usize {
        32 / self.esize()
    }
    /// Row stride in elements of an operand with `len` K elements (`igemm_stride`): 16 bytes
    /// more than the row.
    fn stride(self, len: usize) -> usize {
        len + 16 / self.esize()
    }
    /// Whether the engine runs on tensor cores (sm_80 and newer).
    pub(crate) fn tensor_cores(self) -> bool {
        !matches!(self, MmaType::F32)
    }
    /// The entry point of operation `op` (`fwd`, `bwd_data`, `bwd_filter`,
    /// `bwd_filter_clustered`, `wgrad_reduce`) for kernel dtype suffix `sfx`.
    pub(crate) fn entry(self, op: &str, sfx: &str) -> String {
        match self {
            MmaType::F32 => format!("conv_igemm_{op}_f32"),
            MmaType::Half | MmaType::Tf32 => format!("conv_mma_{op}_{sfx}"),
        }
    }
}

fn round_up(v: usize, m: usize) -> usize {
    v.div_ceil(m) * m
}

/// Dynamic shared memory (bytes) of the forward kernel for one image of shape `s`: the image
/// channel-minor (`xs[h·w][c_in + pad]`) and the weights tap-major (`ws[c_out][9·c_in + pad]`).
pub(crate) fn fwd_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL
        || !staged_counts_fit(s)
        || !s.c_in.is_multiple_of(t.kstep())
        || !s.c_out.is_multiple_of(32)
        || s.h_out() < 2
        || s.w_out() < 2
    {
        return None;
    }
    let e = t.esize();
    let xs = round_up(s.h * s.w * t.stride(s.c_in), 8) * e;
    Some(xs + s.c_out * t.stride(s.c_in * s.k * s.k) * e)
}

/// Dynamic shared memory (bytes) of the input-gradient kernel for one image of shape `s`: the
/// routed gradient channel-minor (`dz[padded position][c_out + pad]`) and B
/// (`[c_in][9·c_out + pad]`). Its K steps run over whole taps, so `c_out` must be a multiple of
/// the step's K; a warp holds 32 input channels.
pub(crate) fn bwd_data_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL
        || !staged_counts_fit(s)
        || !s.c_in.is_multiple_of(32)
        || !s.c_out.is_multiple_of(t.kstep())
        || s.h_out() < 2
        || s.w_out() < 2
    {
        return None;
    }
    let (hp, wp) = (s.h_out() + 2 * (s.k - 1), s.w_out() + 2 * (s.k - 1));
    let e = t.esize();
    let dz = round_up(hp * wp * t.stride(s.c_out), 8) * e;
    Some(dz + s.c_in * t.stride(s.k * s.k * s.c_out) * e)
}

/// Rows of the weight gradient's B operand: the column tiles its warps hold (each row tile of
/// 16 output channels gets `WARPS / (c_out / 16)` warps of [`WGRAD_NT`] tiles); `None` where the
/// row tiles do not divide the warps or the taps and the bias column do not fit.
fn wgrad_b_rows(s: ConvShape) -> Option<usize> {
    let mt = s.c_out / 16;
    if mt == 0 || !s.c_out.is_multiple_of(16) || !WARPS.is_multiple_of(mt) {
        return None;
    }
    let rows = WARPS / mt * WGRAD_NT * 8;
    (rows > s.c_in * s.k * s.k).then_some(rows)
}

/// Dynamic shared memory (bytes) of the weight-gradient kernel for shape `s`.
pub(crate) fn bwd_filter_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL || !staged_counts_fit(s) || s.h_out() < 2 || s.w_out() < 2 {
        return None;
    }
    let nb = wgrad_b_rows(s)?;
    let plane = (s.h_out() / 2) * (s.w_out() / 2);
    let e = t.esize();
    let sp = t.stride(round_up(plane * 4, t.kstep()));
    let xs = round_up(s.c_in * s.h * s.w, 8) * e;
    // In clusters, the consumed operands' space then holds the block's FP32 sums.
    Some((xs + s.c_out * sp * e + nb * sp * e).max((s.weight_len() + s.c_out) * 4))
}

/// Dynamic shared memory (bytes) of `conv_wgrad_c1_*` for one image of shape `s` with `esize`-byte
/// gradients: the image as FP32 (rounded to 4 floats), the pooled gradient and the mask (each
/// rounded to 16 bytes).
pub(crate) fn c1_smem(s: ConvShape, esize: usize) -> usize {
    let len = s.c_out * (s.h_out() / 2) * (s.w_out() / 2);
    round_up(s.h * s.w, 4) * 4 + round_up(len * esize, 16) + round_up(len, 16)
}

/// Whether `conv_wgrad_c1_*` computes the weight gradient of shape `s`: one input channel,
/// kernel size 3, an image whose staging fits the default shared memory in every dtype.
pub(crate) fn c1_wgrad_fits(s: ConvShape) -> bool {
    s.c_in == 1
        && s.k == KERNEL
        && s.h_out() >= 2
        && s.w_out() >= 2
        && c1_smem(s, 4) <= SMEM_DEFAULT
        && s.c_out * (s.h_out() / 2) * (s.w_out() / 2) < STAGED_MAX
}

/// Whether every count a conv2-shaped kernel stages stays below [`STAGED_MAX`].
fn staged_counts_fit(s: ConvShape) -> bool {
    let plane = (s.h_out() / 2) * (s.w_out() / 2);
    [
        s.c_in * s.h * s.w,
        s.c_out * s.c_in,
        s.c_out * plane,
        s.c_in * round_up(plane * 4, 16),
    ]
    .iter()
    .all(|&v| v < STAGED_MAX)
}

/// Per-block partials larger than this (bytes) make the weight gradient use the clustered
/// kernel (`conv_mma_bwd_filter_clustered_*`, one partial per cluster on sm_90 and newer):
/// conv2's 128 partials (9.5 MB) do, conv1's (164 KB) do not.
pub(crate) const CLUSTER_ABOVE_BYTES: usize = 2 << 20;

/// How `conv_mma_bwd_filter` splits a batch: its grid and the FP32 partials it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WgradPlan {
    /// Blocks launched (a multiple of the cluster width).
    pub(crate) blocks: usize,
    /// Partials written, which `conv_mma_wgrad_reduce` adds up.
    pub(crate) parts: usize,
}

impl WgradPlan {
    /// The plan for a batch of `n` on `sms` SMs. Without clusters (`cluster` ≤ 1): one image
    /// per block, at most one block per SM, one partial per block. With clusters of `cluster`
    /// blocks (sm_90 and newer): enough whole clusters for one image per block, at most
    /// `max_clusters` (those that can be resident at once), one partial per cluster (its
    /// blocks' sums added over distributed shared memory).
    pub(crate) fn new(n: usize, sms: usize, cluster: usize, max_clusters: usize) -> WgradPlan {
        if cluster <= 1 {
            let blocks = n.clamp(1, sms.max(1));
            return WgradPlan {
                blocks,
                parts: blocks,
            };
        }
        let clusters = n.div_ceil(cluster).clamp(1, max_clusters.max(1));
        WgradPlan {
            blocks: clusters * cluster,
            parts: clusters,
        }
    }
}

/// FP32 words of the partial-sum buffer `conv_mma_bwd_filter` writes: `parts` partials.
pub(crate) fn wgrad_part_len(s: ConvShape, parts: usize) -> usize {
    parts * (s.weight_len() + s.c_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::lab;

    /// The H100's opt-in limit per block.
    const H100_SMEM: usize = 227 * 1024;

    #[test]
    fn the_lab_convolutions_fit_where_expected() {
        // conv2 runs all three on the implicit-GEMM kernels, in every engine.
        for t in [MmaType::Half, MmaType::Tf32, MmaType::F32] {
            for v in [
                fwd_smem(lab::CONV2, t),
                bwd_data_smem(lab::CONV2, t),
                bwd_filter_smem(lab::CONV2, t),
            ] {
                let b = v.expect("conv2 fits the implicit-GEMM kernels");
                assert!(b <= H100_SMEM, "{t:?}: {b} bytes");
            }
        }
        // conv1's single input channel: no K step of its own, its own weight gradient.
        assert_eq!(fwd_smem(lab::CONV1, MmaType::Half), None);
        // (Its 676 K indices against 640 B rows are more than a block's shared memory holds.)
        assert!(bwd_filter_smem(lab::CONV1, MmaType::Half).is_some_and(|b| b > H100_SMEM));
        assert!(c1_wgrad_fits(lab::CONV1));
        assert!(!c1_wgrad_fits(lab::CONV2));
        // conv1's staging: the image [784] floats, the pooled gradient [32·169] halves and the mask.
        assert_eq!(c1_smem(lab::CONV1, 2), 784 * 4 + 10816 + 5408);
        // Exact sizes for conv2 (mirror the kernels' layouts): the image [169][32 + 8] and the
        // weights [64][288 + 8] in halves.
        assert_eq!(
            fwd_smem(lab::CONV2, MmaType::Half),
            Some(169 * 40 * 2 + 64 * 296 * 2)
        );
        // FP32: [169][32 + 4] rounded to 8 floats, [64][288 + 4].
        assert_eq!(
            fwd_smem(lab::CONV2, MmaType::F32),
            Some(6088 * 4 + 64 * 292 * 4)
        );
        // The input gradient: dz [15·15][64 + 8], B [32][576 + 8].
        assert_eq!(
            bwd_data_smem(lab::CONV2, MmaType::Half),
            Some(15 * 15 * 72 * 2 + 32 * 584 * 2)
        );
        assert_eq!(
            bwd_data_smem(lab::CONV2, MmaType::Tf32),
            Some(15304 * 4 + 32 * 580 * 4)
        );
        // The weight gradient: the image, A [64][112 + 8], B [4 warps · 10 tiles · 8][112 + 8].
        assert_eq!(
            bwd_filter_smem(lab::CONV2, MmaType::Half),
            Some(10816 + 64 * 120 * 2 + 320 * 120 * 2)
        );
        // TF32 and FP32: K rounded to 104, rows of 108 floats.
        assert_eq!(
            bwd_filter_smem(lab::CONV2, MmaType::F32),
            Some(5408 * 4 + 64 * 108 * 4 + 320 * 108 * 4)
        );
        // It holds the block's FP32 sums for the cluster's reduction.
        let sums = (lab::CONV2.weight_len() + lab::CONV2.c_out) * 4;
        assert!(bwd_filter_smem(lab::CONV2, MmaType::Half).is_some_and(|b| b >= sums));
        assert_eq!(MmaType::F32.entry("fwd", "f32"), "conv_igemm_fwd_f32");
        assert_eq!(
            MmaType::Tf32.entry("bwd_data", "tf32"),
            "conv_mma_bwd_data_tf32"
        );
    }

    #[test]
    fn other_kernel_sizes_and_ragged_channels_fall_back() {
        let s = ConvShape {
            c_in: 8,
            c_out: 16,
            h: 12,
            w: 12,
            k: 5,
        };
        assert_eq!(fwd_smem(s, MmaType::Half), None);
        let odd = ConvShape {
            c_in: 3,
            c_out: 5,
            h: 9,
            w: 12,
            k: 3,
        };
        for t in [MmaType::Half, MmaType::Tf32, MmaType::F32] {
            assert_eq!(fwd_smem(odd, t), None);
            assert_eq!(bwd_data_smem(odd, t), None);
            assert_eq!(bwd_filter_smem(odd, t), None);
        }
        assert!(!c1_wgrad_fits(odd));
        // The input gradient's K steps are whole taps of output channels: 24 is a multiple of
        // TF32's 8, not of FP16's 16.
        let c24 = ConvShape {
            c_in: 32,
            c_out: 24,
            h: 13,
            w: 13,
            k: 3,
        };
        assert_eq!(bwd_data_smem(c24, MmaType::Half), None);
        assert!(bwd_data_smem(c24, MmaType::Tf32).is_some());
        // Too many taps for the weight gradient's column tiles (64 channels: 4 warps of 10 per
        // row tile hold 319 taps).
        let wide = ConvShape {
            c_in: 48,
            c_out: 64,
            h: 13,
            w: 13,
            k: 3,
        };
        assert_eq!(bwd_filter_smem(wide, MmaType::Half), None);
        assert!(fwd_smem(wide, MmaType::Half).is_some());
    }

    #[test]
    fn weight_gradient_blocks_take_one_image_up_to_one_block_per_sm() {
        let plain = |n, sms| {
            let p = WgradPlan::new(n, sms, 1, 0);
            assert_eq!(p.blocks, p.parts, "one partial per block");
            p.blocks
        };
        assert_eq!(plain(128, 132), 128);
        assert_eq!(plain(500, 132), 132);
        assert_eq!(plain(5, 132), 5);
        assert_eq!(plain(1, 132), 1);
        assert_eq!(plain(10_000, 2), 2);
        assert_eq!(plain(0, 132), 1);
        assert_eq!(wgrad_part_len(lab::CONV2, 128), 128 * (64 * 288 + 64));
    }

    #[test]
    fn clustered_weight_gradient_blocks_write_one_partial_per_cluster() {
        let plan = |n, max| WgradPlan::new(n, 132, 8, max);
        // A batch of 128 on an H100 that holds 16 clusters of 8 at once: 16 partials, not 128.
        assert_eq!(
            plan(128, 16),
            WgradPlan {
                blocks: 128,
                parts: 16
            }
        );
        // Fewer resident clusters: some blocks take two images.
        assert_eq!(
            plan(128, 15),
            WgradPlan {
                blocks: 120,
                parts: 15
            }
        );
        // A small batch still launches whole clusters (idle blocks add zeros).
        assert_eq!(
            plan(5, 16),
            WgradPlan {
                blocks: 8,
                parts: 1
            }
        );
        assert_eq!(
            plan(0, 16),
            WgradPlan {
                blocks: 8,
                parts: 1
            }
        );
        assert_eq!(
            plan(500, 16),
            WgradPlan {
                blocks: 128,
                parts: 16
            }
        );
        // An occupancy query that answers 0 still gets one cluster.
        assert_eq!(
            plan(128, 0),
            WgradPlan {
                blocks: 8,
                parts: 1
            }
        );
        assert_eq!(
            wgrad_part_len(lab::CONV2, plan(128, 16).parts),
            16 * (64 * 288 + 64)
        );
        // Which layers cluster at batch 128 on 132 SMs: conv2's partials are large, conv1's not.
        let plain = WgradPlan::new(128, 132, 1, 0).parts;
        assert!(wgrad_part_len(lab::CONV2, plain) * 4 > CLUSTER_ABOVE_BYTES);
        assert!(wgrad_part_len(lab::CONV1, plain) * 4 < CLUSTER_ABOVE_BYTES);
    }
}
