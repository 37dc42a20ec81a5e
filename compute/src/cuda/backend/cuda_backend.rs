//! The CUDA backend's value ([`CudaBackend`]): the opened device, its stream and kernels, the
//! memory meter and the scratch its primitives keep between steps (the fused head's, the weight
//! gradients' partial sums), with what every primitive shares (the math suffix, a kernel by
//! name, a launch configuration).

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig};

use crate::backend::cpu::{MemoryMeter, Ticket};
use crate::backend::DType;
use crate::cuda::buffers::CudaBuf;
use crate::cuda::device::{
    load_families, major_of, open_device, opt_in_smem, smem_optin, Kernels, OpenDevice,
};
use crate::cuda::err;
use crate::cuda::launch::{grid_stride, Kernel};
use crate::error::Result;

/// The CUDA backend.
pub struct CudaBackend {
    pub(super) _ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) funcs: Kernels,
    pub(super) meter: Arc<MemoryMeter>,
    pub(super) device: String,
    pub(super) sms: u32,
    /// Dynamic shared memory a block may use once opted in (bytes).
    pub(super) smem_optin: usize,
    pub(super) ordinal: usize,
    /// Compute capability major version (8 = Ampere).
    pub(super) cc_major: u32,
    /// The GPU's architecture (`sm_90`).
    pub(super) arch: String,
    /// Whether the GPU has FP8 tensor cores (sm_89 and newer); a test may turn it off.
    pub(in crate::cuda) fp8_tensor_cores: bool,
    /// FP16/BF16 convolutions on tensor cores where the shape fits (`conv_mma.cu`); off with
    /// `SHOWDOWN_CONV=cuda-cores` (the CUDA-core kernels, for comparison).
    pub(super) conv_mma: bool,
    /// FP32 convolutions run as TF32 on tensor cores (set by [`Backend::set_precision`]).
    pub(super) tf32: std::sync::atomic::AtomicBool,
    /// Whether training steps are captured as CUDA graphs and replayed; off with
    /// `SHOWDOWN_CUDA_GRAPHS=off` (every launch from the host, for comparison).
    pub(in crate::cuda) graphs: bool,
    /// FP32 partial weight gradients of `conv_mma_bwd_filter`, grown on demand and kept (a
    /// captured step graph refers to it).
    pub(super) wgrad_part: Mutex<WgradScratch>,
    /// GELU/Swish backward: the pooled gradient times the activation's derivative
    /// (`act_route`), which the convolution's backward kernels read in place of `dout`; grown
    /// on demand and kept like `wgrad_part`.
    pub(super) act_grad: Mutex<Option<CudaBuf>>,
    /// `head_train`'s per-row (loss, correct) pairs and its last-block ticket, grown on demand
    /// and kept like `wgrad_part`.
    pub(super) head_scratch: Mutex<Option<HeadScratch>>,
    /// Clusters of the clustered weight-gradient kernel the device holds at once, per kernel
    /// and shared-memory size.
    pub(super) cluster_fit: Mutex<std::collections::HashMap<(String, usize), usize>>,
}

/// Scratch of the fused head (`head_train_*`): two floats per batch row and the ticket word
/// that finds the last block (0 between launches).
pub(super) struct HeadScratch {
    pub(super) rowstat: CudaSlice<f32>,
    pub(super) ticket: CudaSlice<u32>,
    pub(super) _meter: Ticket,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .finish()
    }
}

/// The weight gradients' FP32 partial sums on the device, with their memory ticket (grown on
/// demand, kept for the next step).
pub(super) type WgradScratch = Option<(CudaSlice<f32>, Ticket)>;

impl CudaBackend {
    /// Opens GPU `ordinal`, compiles the training kernels for its architecture and loads them.
    pub fn new(ordinal: usize) -> Result<Self> {
        let OpenDevice {
            ctx,
            arch,
            device,
            sms,
        } = open_device(ordinal)?;
        let funcs = load_families(&ctx, &[kernels::TRAIN], &arch)?;
        let optin = smem_optin(&ctx)?;
        for (name, f) in &funcs {
            let big_smem = [
                "conv_block_bwd_data_",
                "conv_block_fwd_",
                "conv_mma_fwd_",
                "conv_mma_bwd_",
                "conv_igemm_fwd_",
                "conv_igemm_bwd_",
            ];
            if big_smem.iter().any(|p| name.starts_with(p)) {
                // The device's own opt-in limit, for a function of the module just loaded.
                opt_in_smem(name, f, optin)?;
            }
        }
        // A stream of our own: the legacy default stream cannot be captured into a graph.
        let stream = ctx.new_stream().map_err(err)?;
        Ok(CudaBackend {
            stream,
            _ctx: ctx,
            funcs,
            meter: Arc::new(MemoryMeter::default()),
            device,
            sms,
            // Non-negative (smem_optin): lossless.
            smem_optin: optin as usize,
            ordinal,
            conv_mma: std::env::var("SHOWDOWN_CONV").map_or(true, |v| v != "cuda-cores"),
            graphs: std::env::var("SHOWDOWN_CUDA_GRAPHS").map_or(true, |v| v != "off"),
            wgrad_part: Mutex::new(None),
            act_grad: Mutex::new(None),
            head_scratch: Mutex::new(None),
            cluster_fit: Mutex::new(std::collections::HashMap::new()),
            tf32: std::sync::atomic::AtomicBool::new(false),
            cc_major: major_of(&arch),
            fp8_tensor_cores: has_fp8_tensor_cores(&arch),
            arch,
        })
    }

    /// The kernel dtype suffix for buffers of suffix `sfx`: FP32 buffers run the TF32 kernels
    /// while the backend trains in TF32 ([`Backend::set_precision`]).
    pub(super) fn math(&self, sfx: &'static str) -> &'static str {
        if sfx == "f32" && self.tf32.load(std::sync::atomic::Ordering::Relaxed) {
            "tf32"
        } else {
            sfx
        }
    }

    /// The device's compute capability major version (the GPU tests ask it).
    #[cfg(test)]
    pub(crate) fn cc_major(&self) -> u32 {
        self.cc_major
    }

    /// The loaded entry point `name`.
    pub(super) fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        Kernel::find(&self.funcs, name)
    }

    /// Grid-stride launch shape for `work` items: enough blocks to fill every SM.
    pub(super) fn cfg(&self, work: usize) -> LaunchConfig {
        grid_stride(work, self.sms as usize * 16)
    }
}

/// Whether GPUs of architecture `arch` (`sm_89`, `compute_90`, `sm_90a`) have FP8 tensor
/// cores: Ada (sm_89) and Hopper (sm_90) on.
pub(super) fn has_fp8_tensor_cores(arch: &str) -> bool {
    let digits: String = arch.chars().filter(|c| c.is_ascii_digit()).collect();
    digits.parse::<u32>().is_ok_and(|n| n >= 89)
}

/// The dtype of float buffers with kernel suffix `sfx`.
pub(super) fn dout_dtype(sfx: &str) -> DType {
    match sfx {
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        _ => DType::F32,
    }
}

#[cfg(test)]
mod fp8_arch_tests {
    #[test]
    fn ada_and_hopper_have_fp8_tensor_cores_whatever_the_arch_is_called() {
        for (arch, has) in [
            ("sm_80", false),
            ("sm_86", false),
            ("sm_89", true),
            ("sm_90", true),
            ("compute_90", true),
            ("sm_90a", true),
            ("compute_86", false),
        ] {
            assert_eq!(super::has_fp8_tensor_cores(arch), has, "{arch}");
        }
    }
}
