//! Where the tensor-core convolutions of `kernels/cuda/conv_mma.cu` apply and how much shared
//! memory each launch needs. The sizes mirror the kernels' own layout line for line; a shape the
//! compiled kernels do not cover (kernel size other than 3, channel counts not multiples of the
//! tile, more output tiles than the warps hold) gets `None` and runs on the CUDA-core kernels.

use crate::model::ConvShape;

/// Threads per block of every `conv_mma_*` kernel (`__launch_bounds__(512)`): 16 warps, so
/// that one image's staging has enough loads in flight.
pub(crate) const MMA_THREADS: u32 = 512;
const WARPS: usize = MMA_THREADS as usize / 32;
/// Tiles per warp the kernels are compiled for (`CONV_MMA_*_TPW` in conv_mma.cu).
const FWD_TPW: usize = 4;
const DATA_TPW: usize = 4;
const FILTER_TPW: usize = 10;
/// The only kernel size the entry points are instantiated for.
const KERNEL: usize = 3;

/// The operand type of a tensor-core kernel (`Mma<D>` in conv_mma.cu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MmaType {
    /// FP16 or BF16 operands, m16n8k16.
    Half,
    /// FP32 data rounded to TF32, m16n8k8.
    Tf32,
}

impl MmaType {
    /// The type for a kernel dtype suffix (`f16`, `bf16`, `tf32`).
    pub(crate) fn of(sfx: &str) -> Option<MmaType> {
        match sfx {
            "f16" | "bf16" => Some(MmaType::Half),
            "tf32" => Some(MmaType::Tf32),
            _ => None,
        }
    }
    /// Bytes of a staged element.
    fn esize(self) -> usize {
        match self {
            MmaType::Half => 2,
            MmaType::Tf32 => 4,
        }
    }
    /// K of one mma.
    fn kstep(self) -> usize {
        match self {
            MmaType::Half => 16,
            MmaType::Tf32 => 8,
        }
    }
    /// Row stride in elements of an operand with `steps` K steps (`Mma<D>::stride`).
    fn stride(self, steps: usize) -> usize {
        match self {
            MmaType::Half => steps * 16 + 8,
            MmaType::Tf32 => steps * 8 + 4,
        }
    }
}

fn round_up(v: usize, m: usize) -> usize {
    v.div_ceil(m) * m
}

/// Dynamic shared memory (bytes) of `conv_mma_fwd` for one image of shape `s`.
pub(crate) fn fwd_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL || !s.c_out.is_multiple_of(8) || s.h_out() < 2 || s.w_out() < 2 {
        return None;
    }
    let plane = (s.h_out() / 2) * (s.w_out() / 2);
    let rows = plane * 4;
    let mt = rows.div_ceil(16);
    if mt * (s.c_out / 8) > FWD_TPW * WARPS {
        return None;
    }
    let (e, ks) = (t.esize(), (s.c_in * s.k * s.k).div_ceil(t.kstep()));
    let sk = t.stride(ks);
    let xs = round_up(s.c_in * s.h * s.w, 8) * e;
    let a = round_up((mt * 16 * sk * e).max(rows * (s.c_out + 1) * 4), 16);
    Some(xs + a + s.c_out * sk * e)
}

/// Dynamic shared memory (bytes) of `conv_mma_bwd_data` for one image of shape `s`: the
/// routed gradient channel-minor (`dz[padded position][c_out + pad]`), B, and the weights as
/// stored. Its K steps run over whole taps, so `c_out` must be a multiple of the mma's K.
pub(crate) fn bwd_data_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL
        || !s.c_in.is_multiple_of(8)
        || !s.c_out.is_multiple_of(t.kstep())
        || s.h_out() < 2
        || s.w_out() < 2
    {
        return None;
    }
    let mt = (s.h * s.w).div_ceil(16);
    if mt * (s.c_in / 8) > DATA_TPW * WARPS {
        return None;
    }
    let (hp, wp) = (s.h_out() + 2 * (s.k - 1), s.w_out() + 2 * (s.k - 1));
    let e = t.esize();
    let dz = round_up(hp * wp * t.stride(s.c_out / t.kstep()), 8) * e;
    let b = s.c_in * t.stride(s.k * s.k * s.c_out / t.kstep()) * e;
    Some(dz + b + s.weight_len() * e)
}

/// Dynamic shared memory (bytes) of `conv_mma_bwd_filter` for shape `s`.
pub(crate) fn bwd_filter_smem(s: ConvShape, t: MmaType) -> Option<usize> {
    if s.k != KERNEL || !s.c_out.is_multiple_of(16) || s.h_out() < 2 || s.w_out() < 2 {
        return None;
    }
    // One more B row than taps: the row of ones that yields the bias gradient.
    let nt = (s.c_in * s.k * s.k + 1).div_ceil(8);
    if (s.c_out / 16) * nt > FILTER_TPW * WARPS {
        return None;
    }
    let plane = (s.h_out() / 2) * (s.w_out() / 2);
    let e = t.esize();
    let sp = t.stride((plane * 4).div_ceil(t.kstep()));
    let xs = round_up(s.c_in * s.h * s.w, 8) * e;
    // In clusters, the consumed operands' space then holds the block's FP32 sums.
    Some((xs + s.c_out * sp * e + nt * 8 * sp * e).max((s.weight_len() + s.c_out) * 4))
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
        // conv2 runs all three on tensor cores.
        for t in [MmaType::Half, MmaType::Tf32] {
            for v in [
                fwd_smem(lab::CONV2, t),
                bwd_data_smem(lab::CONV2, t),
                bwd_filter_smem(lab::CONV2, t),
            ] {
                let b = v.expect("conv2 fits the tensor-core kernels");
                assert!(b <= H100_SMEM, "{t:?}: {b} bytes");
            }
        }
        // conv1's 169 pooled positions are more forward tiles than 8 warps hold; its single
        // input channel has no input gradient to compute, and its weight gradient fits.
        assert_eq!(fwd_smem(lab::CONV1, MmaType::Half), None);
        assert!(bwd_filter_smem(lab::CONV1, MmaType::Half).is_some_and(|b| b <= H100_SMEM));
        // Exact sizes for conv2 (mirrors the kernel's layout).
        assert_eq!(
            fwd_smem(lab::CONV2, MmaType::Half),
            Some(32 * 13 * 13 * 2 + 112 * 296 * 2 + 64 * 296 * 2)
        );
        assert_eq!(
            bwd_filter_smem(lab::CONV2, MmaType::Half),
            Some(10816 + 64 * 120 * 2 + 296 * 120 * 2)
        );
        // The input gradient: dz [15·15][64 + 8], B [32][36·16 + 8], the weights as stored.
        assert_eq!(
            bwd_data_smem(lab::CONV2, MmaType::Half),
            Some(15 * 15 * 72 * 2 + 32 * 584 * 2 + 18432 * 2)
        );
        assert_eq!(
            bwd_data_smem(lab::CONV2, MmaType::Tf32),
            Some(15304 * 4 + 32 * 580 * 4 + 18432 * 4)
        );
        // Both hold the block's FP32 sums for the cluster's reduction.
        for s in [lab::CONV1, lab::CONV2] {
            let sums = (s.weight_len() + s.c_out) * 4;
            assert!(bwd_filter_smem(s, MmaType::Half).is_some_and(|b| b >= sums));
        }
        // TF32 stages FP32 values with K steps of 8: conv2's forward just fits an H100.
        assert_eq!(
            fwd_smem(lab::CONV2, MmaType::Tf32),
            Some(5408 * 4 + 112 * 292 * 4 + 64 * 292 * 4)
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
        assert_eq!(fwd_smem(odd, MmaType::Half), None);
        assert_eq!(bwd_data_smem(odd, MmaType::Half), None);
        assert_eq!(bwd_filter_smem(odd, MmaType::Half), None);
        // The input gradient's K steps are whole taps of output channels: 24 is a multiple of
        // TF32's 8, not of FP16's 16.
        let c24 = ConvShape {
            c_in: 8,
            c_out: 24,
            h: 13,
            w: 13,
            k: 3,
        };
        assert_eq!(bwd_data_smem(c24, MmaType::Half), None);
        assert!(bwd_data_smem(c24, MmaType::Tf32).is_some());
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
