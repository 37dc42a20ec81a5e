//! CUDA C sources of Precision Showdown's kernels, one file per family, with their entry
//! points and dtypes, the [`highlight`]er that shows those sources on the Kernel Reveal page,
//! and (native builds) every family shipped [`compiled`] (cubins and PTX made by
//! `cargo xtask kernels`). Nothing else lives here: compiling (NVRTC), caching, picking the
//! right compiled file and launching belong to `compute`'s CUDA backend; the Kernel Reveal page
//! reads this registry.

#[cfg(not(target_arch = "wasm32"))]
pub mod compiled;
pub mod highlight;

/// Dtype suffixes of the tensor-core kernels: FP16 and BF16 storage, and FP32 storage with TF32
/// math.
pub const MMA_DTYPES: [&str; 3] = ["f16", "bf16", "tf32"];

/// The dtype suffixes an entry point's name may end with (`conv_tc_f16`), in the order a card
/// lists them.
pub const DTYPE_SUFFIXES: [&str; 4] = ["f32", "f16", "bf16", "tf32"];

/// One rung of a ladder family (the convolution ladder): what it changes, its storage, and the
/// entry points it launches (none for a rung that changes only the host side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rung {
    /// Its number, from 1.
    pub number: u8,
    /// What the rung does, in words.
    pub what: &'static str,
    /// Its storage and math, in words (`FP16 in, FP32 accumulation, FP32 out`).
    pub dtypes: &'static str,
    /// The entry points it launches, in launch order.
    pub entries: &'static [&'static str],
}

/// A family of kernels: one `.cu` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFamily {
    /// Family name, also the file stem under `kernels/cuda/`.
    pub name: &'static str,
    /// What the family does.
    pub summary: &'static str,
    /// The CUDA C source, with `cuda/prelude.cuh` prepended.
    pub source: &'static str,
    /// Operations; each is exported as `{op}_{dtype}` for every dtype below (unless listed
    /// in `untyped`).
    pub ops: &'static [&'static str],
    /// Dtype suffixes of the entry points.
    pub dtypes: &'static [&'static str],
    /// Operations exported only in the tensor-core dtypes [`MMA_DTYPES`].
    pub mma_ops: &'static [&'static str],
    /// The operations (of `mma_ops`) whose kernels run on tensor cores (FP16/BF16/TF32 inputs,
    /// FP32 accumulation on `mma.sync`); a CI test checks their SASS for `HMMA`, and that no
    /// other kernel has any.
    pub tensor_core_ops: &'static [&'static str],
    /// Entry points without a dtype suffix.
    pub untyped: &'static [&'static str],
    /// The entry points of `untyped` that run on tensor cores (checked like `tensor_core_ops`).
    pub tensor_core_untyped: &'static [&'static str],
    /// The rungs, for a family that is a ladder (the convolution ladder); empty otherwise.
    pub rungs: &'static [Rung],
}

impl KernelFamily {
    /// Every `extern "C"` entry point of the family.
    pub fn entry_points(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .ops
            .iter()
            .flat_map(|op| self.dtypes.iter().map(move |d| format!("{op}_{d}")))
            .collect();
        v.extend(
            self.mma_ops
                .iter()
                .flat_map(|op| MMA_DTYPES.map(|d| format!("{op}_{d}"))),
        );
        v.extend(self.untyped.iter().map(|s| s.to_string()));
        v
    }

    /// Every dtype the family's entry points are compiled for, in [`DTYPE_SUFFIXES`] order: its
    /// `dtypes`, the tensor-core dtypes [`MMA_DTYPES`] when it has `mma_ops`, and the suffix of
    /// each untyped entry point that ends with one (`conv_tc_f16`). What the Kernel Reveal's
    /// card lists (a family of untyped entry points has no `dtypes` of its own).
    pub fn card_dtypes(&self) -> Vec<&'static str> {
        let untyped = |d: &str| {
            self.untyped
                .iter()
                .any(|e| e.rsplit_once('_').is_some_and(|(_, sfx)| sfx == d))
        };
        DTYPE_SUFFIXES
            .into_iter()
            .filter(|d| {
                self.dtypes.contains(d)
                    || (!self.mma_ops.is_empty() && MMA_DTYPES.contains(d))
                    || untyped(d)
            })
            .collect()
    }

    /// Whether `entry` is one of the family's tensor-core kernels: a `tensor_core_ops` op in
    /// one of [`MMA_DTYPES`], or one of `tensor_core_untyped`.
    pub fn is_tensor_core(&self, entry: &str) -> bool {
        self.tensor_core_untyped.contains(&entry)
            || self.tensor_core_ops.iter().any(|op| {
                entry
                    .strip_prefix(op)
                    .and_then(|d| d.strip_prefix('_'))
                    .is_some_and(|d| MMA_DTYPES.contains(&d))
            })
    }
}

/// The training primitives of the lab CNN (the CUDA backend of `compute`).
pub const TRAIN: KernelFamily = KernelFamily {
    name: "train",
    summary: "the lab CNN's training step: gather+normalise, fused conv+bias+activation (ReLU, GELU, Swish)+max-pool forward, the GELU/Swish derivative at each pool maximum (act_route), conv backward (input gradient from a shared-memory dz; weight and bias gradients per channel pair), the same three convolutions as register-blocked implicit GEMMs for conv2-shaped layers (one skeleton: FP16/BF16 on mma.sync m16n8k16 and TF32 on m16n8k8 with ldmatrix fragments and FP32 accumulation, strict FP32 on the CUDA cores), the single-input-channel weight gradient (conv1) per image on the CUDA cores, dropout (Philox), dense, softmax cross-entropy, the classifier head fused (dropout, dense, loss and its gradients in one launch), inf/NaN check, fused Adam, loss scaler; FP8 casts onto the E4M3/E5M2 grids with per-tensor delayed or current scaling (fp8.cu)",
    source: concat!(
        include_str!("../cuda/prelude.cuh"),
        include_str!("../cuda/activation_ops.cuh"),
        include_str!("../cuda/train.cu"),
        include_str!("../cuda/conv_mma.cu"),
        include_str!("../cuda/fp8.cu")
    ),
    ops: &[
        "gather",
        "conv_block_fwd",
        "act_route",
        "conv_block_bwd_data",
        "conv_block_bwd_filter",
        "dropout_fwd",
        "dropout_bwd",
        "dense_fwd",
        "dense_bwd_w",
        "dense_bwd_x",
        "softmax_xent",
        "head_train",
        "check_finite",
        "adam",
        "check_finite_multi",
        "adam_multi",
        "cast_from_f32",
        "conv_wgrad_c1",
    ],
    dtypes: &["f32", "f16", "bf16"],
    mma_ops: &[
        "conv_mma_fwd",
        "conv_mma_bwd_data",
        "conv_mma_bwd_filter",
        "conv_mma_bwd_filter_clustered",
        "conv_mma_wgrad_reduce",
    ],
    tensor_core_ops: &[
        "conv_mma_fwd",
        "conv_mma_bwd_data",
        "conv_mma_bwd_filter",
        "conv_mma_bwd_filter_clustered",
    ],
    untyped: &[
        "conv_igemm_fwd_f32",
        "conv_igemm_bwd_data_f32",
        "conv_igemm_bwd_filter_f32",
        "conv_igemm_bwd_filter_clustered_f32",
        "conv_igemm_wgrad_reduce_f32",
        "scaler_update",
        "cursor_advance",
        "step_finish",
        "fp8_cast_f16",
        "fp8_cast_grad_f16",
        "fp8_amax_f16",
        "fp8_amax_reset",
        "fp8_end_step",
        "fp8_weights_end_step_f16",
    ],
    tensor_core_untyped: &[],
    rungs: &[],
};

/// Elementwise activations, vectorised to 16-byte accesses.
pub const ACTIVATIONS: KernelFamily = KernelFamily {
    name: "activations",
    summary:
        "ReLU, GELU (erf and tanh forms), Swish; FP32 and FP16, 16-byte vector loads and stores",
    source: concat!(
        include_str!("../cuda/prelude.cuh"),
        include_str!("../cuda/activation_ops.cuh"),
        include_str!("../cuda/activations.cu")
    ),
    ops: &["relu", "gelu_erf", "gelu_tanh", "swish"],
    dtypes: &["f32", "f16"],
    mma_ops: &[],
    tensor_core_ops: &[],
    untyped: &[],
    tensor_core_untyped: &[],
    rungs: &[],
};

/// Row-wise LayerNorm and fused LayerNorm + GELU.
pub const NORM: KernelFamily = KernelFamily {
    name: "norm",
    summary: "LayerNorm (affine, per row, FP32 statistics) and fused LayerNorm+GELU; FP32 and FP16, one block per row, 16-byte accesses",
    source: concat!(
        include_str!("../cuda/prelude.cuh"),
        include_str!("../cuda/activation_ops.cuh"),
        include_str!("../cuda/norm.cu")
    ),
    ops: &["layernorm", "layernorm_gelu"],
    dtypes: &["f32", "f16"],
    mma_ops: &[],
    tensor_core_ops: &[],
    untyped: &[],
    tensor_core_untyped: &[],
    rungs: &[],
};

/// The rungs of [`CONV_LADDER`], as `kernels/cuda/conv_ladder.cu`'s header describes them.
pub const CONV_LADDER_RUNGS: [Rung; 5] = [
    Rung {
        number: 1,
        what: "im2col (unroll) + tiled GEMM + permute to NCHW: three launches, the unrolled matrix in global memory",
        dtypes: "FP32",
        entries: &["conv_unroll_f32", "gemm_tiled_f32", "conv_permute_f32"],
    },
    Rung {
        number: 2,
        what: "the same tiled GEMM fused with the gather (implicit im2col) and the NCHW store: one launch",
        dtypes: "FP32",
        entries: &["conv_fused_f32"],
    },
    Rung {
        number: 3,
        what: "implicit GEMM on tensor cores (mma.sync m16n8k16, weights via ldmatrix, image and output staged in shared memory, persistent blocks)",
        dtypes: "FP16 in, FP32 accumulation, FP32 out",
        entries: &["conv_tc_f16"],
    },
    Rung {
        number: 4,
        what: "rung 3 with each layer's shape compiled in (constant loops and index math) and FP16 output; conv2's image staged channels-last so its B fragments come from ldmatrix",
        dtypes: "FP16 in, FP32 accumulation, FP16 out",
        entries: &[
            "conv_tc_opt_lab_conv1",
            "conv_tc_opt_lab_conv2",
            "conv_tc_opt_lenet_c1",
            "conv_tc_opt_lenet_c3",
        ],
    },
    Rung {
        number: 5,
        what: "rung 4 fed from pinned host memory over two streams, the copies overlapping the kernels (host side only: rung 4's kernels)",
        dtypes: "FP16 in, FP32 accumulation, FP16 out",
        entries: &[],
    },
];

/// The convolution ladder of the Kernel Reveal: one forward convolution five ways, from
/// unroll + GEMM + permute to a fused tensor-core kernel with the layer's shape compiled in,
/// fed from pinned host memory over two streams.
pub const CONV_LADDER: KernelFamily = KernelFamily {
    name: "conv_ladder",
    summary: "the convolution ladder (forward, NCHW, valid, stride 1): rung 1 im2col + tiled GEMM + permute (FP32), rung 2 the same GEMM fused with the gather and the NCHW store (FP32), rung 3 an implicit GEMM on tensor cores (FP16 in, mma.sync m16n8k16 with FP32 accumulation, weights via ldmatrix, image and output staged in shared memory, persistent blocks, FP32 out), rung 4 rung 3 with each layer's shape compiled in and FP16 output (conv2's image staged channels-last so its B fragments come from ldmatrix), rung 5 rung 4 fed from pinned host memory over two streams (host side only)",
    source: concat!(
        include_str!("../cuda/prelude.cuh"),
        include_str!("../cuda/conv_ladder.cu")
    ),
    ops: &[],
    dtypes: &[],
    mma_ops: &[],
    tensor_core_ops: &[],
    untyped: &[
        "conv_unroll_f32",
        "gemm_tiled_f32",
        "conv_permute_f32",
        "conv_fused_f32",
        "conv_tc_f16",
        "conv_tc_opt_lab_conv1",
        "conv_tc_opt_lab_conv2",
        "conv_tc_opt_lenet_c1",
        "conv_tc_opt_lenet_c3",
    ],
    tensor_core_untyped: &[
        "conv_tc_f16",
        "conv_tc_opt_lab_conv1",
        "conv_tc_opt_lab_conv2",
        "conv_tc_opt_lenet_c1",
        "conv_tc_opt_lenet_c3",
    ],
    rungs: &CONV_LADDER_RUNGS,
};

/// The lab CNN's inference path (the CNN variant switch): the rung-4 convolutions of
/// [`CONV_LADDER`] are followed by these.
pub const CNN_INFER: KernelFamily = KernelFamily {
    name: "cnn_infer",
    summary: "the lab CNN's inference path around the rung-4 tensor-core convolutions: bias + activation (ReLU, GELU, Swish; the same functions as the activation kernels) + 2×2 max-pool fused in one pass over the FP16 convolution output, and the dense layer to FP32 logits (one warp per image, weights in shared memory)",
    source: concat!(
        include_str!("../cuda/prelude.cuh"),
        include_str!("../cuda/activation_ops.cuh"),
        include_str!("../cuda/cnn_infer.cu")
    ),
    ops: &["bias_relu_pool", "bias_gelu_pool", "bias_swish_pool"],
    dtypes: &["f16"],
    mma_ops: &[],
    tensor_core_ops: &[],
    untyped: &["dense_logits_f16"],
    tensor_core_untyped: &[],
    rungs: &[],
};

/// Every kernel family.
pub const FAMILIES: &[KernelFamily] = &[TRAIN, ACTIVATIONS, NORM, CONV_LADDER, CNN_INFER];

/// Looks a family up by name.
pub fn family(name: &str) -> Option<&'static KernelFamily> {
    FAMILIES.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every listed entry point is defined in its source: a renamed kernel fails here, not at
    /// launch time on a user's GPU.
    #[test]
    fn every_entry_point_is_in_its_source() {
        for f in FAMILIES {
            for ep in f.entry_points() {
                let direct = f.source.contains(&format!("void {ep}("))
                    || f.source
                        .contains(&format!("__launch_bounds__(CONV_TC_THREADS) {ep}("))
                    || f.source.contains(&format!("__launch_bounds__(512) {ep}("))
                    || f.source
                        .contains(&format!("__launch_bounds__(512) WGRAD_CLUSTER_DIMS {ep}("))
                    || f.source.contains(&format!("CONV_TC_OPT({ep},"))
                    || f.source.contains(&format!("CONV_TC_OPT_NHWC({ep},"));
                // Entry points generated by a macro: `void op_##sfx(` plus an `ENTRY_POINTS(sfx` / `ACTIVATION(op` / `NORM_ENTRY(op` / `BIAS_ACT_POOL(op` use.
                let (op, sfx) = ep.rsplit_once('_').unwrap_or((&ep, ""));
                let via_macro = (f.source.contains(&format!(" {op}_##sfx("))
                    && f.source.contains(&format!("ENTRY_POINTS({sfx},")))
                    || (["ACTIVATION", "NORM_ENTRY", "BIAS_ACT_POOL"]
                        .iter()
                        .any(|m| f.source.contains(&format!("{m}({op},")))
                        && f.source.contains(&format!("##_{sfx}(")));
                assert!(
                    direct || via_macro,
                    "{}: entry point {ep} not found in the source",
                    f.name
                );
            }
        }
    }

    /// What the Kernel Reveal page marks "tensor cores".
    #[test]
    fn the_tensor_core_kernels_are_flagged_and_nothing_else() {
        let train = family("train").expect("the train family");
        assert!(train.is_tensor_core("conv_mma_fwd_f16"));
        assert!(train.is_tensor_core("conv_mma_bwd_filter_bf16"));
        assert!(train.is_tensor_core("conv_mma_bwd_data_tf32"));
        assert!(!train.is_tensor_core("conv_mma_wgrad_reduce_tf32"));
        assert!(!train.is_tensor_core("conv_block_fwd_f16"));
        assert!(!train.is_tensor_core("adam_multi_f16"));
        let act = family("activations").expect("the activations family");
        assert!(!act.entry_points().iter().any(|e| act.is_tensor_core(e)));
        let ladder = family("conv_ladder").expect("the conv_ladder family");
        assert!(ladder.is_tensor_core("conv_tc_f16"));
        assert!(ladder.is_tensor_core("conv_tc_opt_lab_conv2"));
        assert!(!ladder.is_tensor_core("conv_fused_f32"));
        assert!(!ladder.is_tensor_core("gemm_tiled_f32"));
    }

    /// Issue 26: `conv_ladder.cu`'s card read "dtypes:  ·" (its entry points are all untyped)
    /// and its text stopped at rung 4; the card's dtypes and rungs now come from the registry.
    #[test]
    fn conv_ladder_card_has_dtypes_and_all_five_rungs() {
        let ladder = family("conv_ladder").expect("the conv_ladder family");
        assert_eq!(ladder.card_dtypes(), ["f32", "f16"]);
        let numbers: Vec<u8> = ladder.rungs.iter().map(|r| r.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5]);
        assert!(ladder.summary.contains("rung 5"), "{}", ladder.summary);
        // Every rung's entry points are the family's, and every entry point is on a rung.
        let entries = ladder.entry_points();
        let on_rungs: Vec<&str> = ladder
            .rungs
            .iter()
            .flat_map(|r| r.entries.iter().copied())
            .collect();
        for e in &on_rungs {
            assert!(entries.iter().any(|x| x == e), "{e} is not an entry point");
        }
        for e in &entries {
            assert!(on_rungs.contains(&e.as_str()), "{e} is on no rung");
        }
        assert!(ladder
            .rungs
            .iter()
            .all(|r| !r.what.is_empty() && !r.dtypes.is_empty()));
    }

    /// Every card lists at least one dtype, in the registry's order.
    #[test]
    fn every_family_card_lists_its_dtypes() {
        for f in FAMILIES {
            assert!(
                !f.card_dtypes().is_empty(),
                "{}: no dtype on its card",
                f.name
            );
        }
        let train = family("train").expect("the train family");
        assert_eq!(train.card_dtypes(), ["f32", "f16", "bf16", "tf32"]);
        let infer = family("cnn_infer").expect("the cnn_infer family");
        assert_eq!(infer.card_dtypes(), ["f16"]);
    }
}
