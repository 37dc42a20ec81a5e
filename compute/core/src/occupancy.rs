//! An exact CUDA occupancy calculator: how many blocks of a kernel can be resident on one
//! streaming multiprocessor (SM) at once, and which resource stops more.
//!
//! [`occupancy`] reproduces the driver's `cuOccupancyMaxActiveBlocksPerMultiprocessor` (and
//! NVIDIA's `cuda_occupancy.h`, which the driver mirrors) for the compute capabilities of
//! [`GpuLimits::for_cc`]. A block of `T` threads using `R` registers per thread and `S` bytes
//! of shared memory (static + dynamic) is limited four ways:
//!
//! * **warps**: `floor(max_warps_per_sm / ceil(T / 32))`;
//! * **registers**: each warp is allocated `ceil(R·32 / 256)·256` registers; the register file
//!   is split over sub-partitions (4 × 16,384 registers on sm_90) and a warp lives on one of
//!   them, so `floor(16384 / regs_per_warp)` warps fit per sub-partition and the block limit is
//!   `floor(4·that / warps_per_block)`; a block whose registers exceed the per-block maximum
//!   (65,536) cannot launch at all; `R = 0` means no register limit;
//! * **shared memory**: the block allocates `S` + the driver's reserve (1 KiB from cc 8.0 on)
//!   rounded up to the allocation unit (128 B from cc 8.0 on, 256 B before) and the limit is
//!   `floor(capacity / that)`, where the capacity is the SM's shared-memory carveout;
//! * **blocks**: the hardware's maximum resident blocks per SM (32 on sm_90).
//!
//! The active blocks are the minimum of the four. [`occupancy`] refuses a launch beyond a
//! per-block limit (more than 1024 threads, 255 registers per thread or the opt-in shared
//! memory); [`driver_occupancy`] answers it as the driver does: 0 blocks, limited by what it
//! exceeds (checked on an H100: `tests/data/occupancy/over_limit_sm90.csv`).
//! Shared memory above 48 KiB per block is only
//! possible as *dynamic* shared memory and only after the kernel opts in with
//! `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`
//! (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); the calculator assumes the opt-in was
//! made and says so in [`OccupancyOutput::notes`]. Named-barrier limits (kernels using more
//! than one block barrier) and partitioned global caching (sm_52/sm_6x, off by default) are not
//! modelled.
//!
//! Pure `std` + `serde`: this module compiles for `wasm32-unknown-unknown`.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::error::ComputeError;

/// Bytes in a KiB (CUDA quotes shared-memory sizes in KiB = 1024 B).
const KB: u32 = 1024;

/// The shared memory a block may use without opting in (48 KiB on every architecture).
const DEFAULT_SHARED_MEMORY_PER_BLOCK: u32 = 48 * KB;

/// Every compute capability [`GpuLimits::for_cc`] knows, as `(major, minor)`.
pub const SUPPORTED_COMPUTE_CAPABILITIES: [(u32, u32); 16] = [
    (5, 0),
    (5, 2),
    (5, 3),
    (6, 0),
    (6, 1),
    (6, 2),
    (7, 0),
    (7, 2),
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 7),
    (8, 9),
    (9, 0),
    (10, 0),
    (12, 0),
];

/// Why an occupancy question cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    /// The compute capability is not in the calculator's table.
    #[error(
        "compute capability {major}.{minor} is not in the occupancy table (known: 5.0, 5.2, \
         5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 12.0)"
    )]
    UnsupportedComputeCapability {
        /// Major version, e.g. 9 for sm_90.
        major: u32,
        /// Minor version, e.g. 0 for sm_90.
        minor: u32,
    },
    /// A compute-capability string could not be parsed.
    #[error("'{text}' is not a compute capability (expected e.g. 9.0, 90 or sm_90)")]
    BadComputeCapability {
        /// The text given.
        text: String,
    },
    /// The block size is 0 or above the per-block maximum.
    #[error("{threads} threads per block is out of range: a block has 1 to {max} threads")]
    ThreadsPerBlock {
        /// Threads per block asked for.
        threads: u32,
        /// The maximum threads per block (1024).
        max: u32,
    },
    /// More registers per thread than the architecture can give a thread.
    #[error("{registers} registers per thread exceeds the per-thread maximum of {max}")]
    RegistersPerThread {
        /// Registers per thread asked for.
        registers: u32,
        /// The maximum registers per thread (255).
        max: u32,
    },
    /// More shared memory per block than any block may use on this GPU, even after opting in.
    #[error(
        "{bytes} B of shared memory per block exceeds the per-block maximum of {max} B \
         ({} KiB, the opt-in limit set with cudaFuncAttributeMaxDynamicSharedMemorySize)",
        .max / 1024
    )]
    SharedMemoryPerBlock {
        /// Static + dynamic shared memory asked for, in bytes.
        bytes: u32,
        /// The opt-in maximum per block, in bytes (227 KiB on sm_90).
        max: u32,
    },
    /// A carveout preference above 100 %.
    #[error("shared-memory carveout preference {pct}% is out of range 0..=100")]
    CarveoutPercent {
        /// The preference given.
        pct: u32,
    },
    /// A calculator field's text is not a whole number in its range (`-5` threads).
    #[error("{what}: {reason}")]
    Field {
        /// The field (`threads per block`).
        what: String,
        /// What is wrong and what it takes (`-5 cannot be: enter a whole number from 32 to
        /// 1,024`).
        reason: String,
    },
    /// A hand-made [`GpuLimits`] has a zero or missing value the calculator divides by.
    #[error("inconsistent GPU limits: {reason}")]
    BadLimits {
        /// Which field is wrong.
        reason: String,
    },
}

impl From<OccupancyError> for ComputeError {
    fn from(err: OccupancyError) -> Self {
        let (name, value) = match &err {
            OccupancyError::UnsupportedComputeCapability { major, minor } => {
                ("compute capability", format!("{major}.{minor}"))
            }
            OccupancyError::BadComputeCapability { text } => ("compute capability", text.clone()),
            OccupancyError::ThreadsPerBlock { threads, .. } => {
                ("threads per block", threads.to_string())
            }
            OccupancyError::RegistersPerThread { registers, .. } => {
                ("registers per thread", registers.to_string())
            }
            OccupancyError::SharedMemoryPerBlock { bytes, .. } => {
                ("shared memory per block", bytes.to_string())
            }
            OccupancyError::CarveoutPercent { pct } => ("carveout", pct.to_string()),
            OccupancyError::Field { what, .. } => (what.as_str(), String::new()),
            OccupancyError::BadLimits { .. } => ("GPU limits", String::new()),
        };
        ComputeError::bad_arg(name, value, err.to_string())
    }
}

/// The per-SM resource limits of one compute capability, as the occupancy calculation uses
/// them (CUDA C Programming Guide, "Technical Specifications per Compute Capability", and
/// NVIDIA's `cuda_occupancy.h`). All sizes are in bytes unless the name says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLimits {
    /// Compute capability major version (9 for sm_90).
    pub major: u32,
    /// Compute capability minor version (0 for sm_90).
    pub minor: u32,
    /// Threads per warp (32).
    pub warp_size: u32,
    /// Maximum threads per block (1024).
    pub max_threads_per_block: u32,
    /// Maximum resident warps per SM (64 on sm_90, 48 on sm_86/89/120, 32 on sm_75).
    pub max_warps_per_sm: u32,
    /// Maximum resident blocks per SM (32 on sm_90).
    pub max_blocks_per_sm: u32,
    /// 32-bit registers per SM (65,536).
    pub registers_per_sm: u32,
    /// Maximum 32-bit registers one block may hold (65,536; 32,768 on sm_53 and sm_62).
    pub max_registers_per_block: u32,
    /// Maximum registers per thread (255).
    pub max_registers_per_thread: u32,
    /// Registers are allocated per warp, in units of this many registers (256).
    pub register_allocation_unit: u32,
    /// Sub-partitions (processing blocks) the register file is split over; a warp's registers
    /// all live in one of them (4; 2 on sm_60).
    pub register_sub_partitions: u32,
    /// The hardware's per-block register check rounds a block's warps up to a multiple of this
    /// (equal to the sub-partition count).
    pub warp_allocation_granularity: u32,
    /// Maximum shared memory per SM, i.e. the largest carveout (228 KiB on sm_90).
    pub max_shared_memory_per_sm: u32,
    /// Shared memory a block may use without opting in (48 KiB).
    pub shared_memory_per_block: u32,
    /// Maximum shared memory per block after opting in with
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize` (227 KiB on sm_90; 48 KiB before cc 7.0,
    /// where there is no opt-in).
    pub max_shared_memory_per_block_optin: u32,
    /// Shared memory is allocated in units of this many bytes (128 from cc 8.0 on, 256 before).
    pub shared_memory_allocation_unit: u32,
    /// Shared memory the driver reserves for every block (1 KiB from cc 8.0 on, 0 before).
    pub reserved_shared_memory_per_block: u32,
    /// The shared-memory capacities per SM the L1/shared carveout can select, in KiB, ascending
    /// (sm_90: 0, 8, 16, 32, 64, 100, 132, 164, 196, 228). Before cc 7.0 shared memory is not
    /// configurable and the list holds the one fixed size.
    pub carveout_options_kb: Vec<u32>,
}

impl GpuLimits {
    /// The limits of compute capability `major.minor`.
    ///
    /// Known: 5.0, 5.2, 5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 12.0
    /// (see [`SUPPORTED_COMPUTE_CAPABILITIES`]); anything else is
    /// [`OccupancyError::UnsupportedComputeCapability`].
    pub fn for_cc(major: u32, minor: u32) -> Result<GpuLimits, OccupancyError> {
        // (max warps/SM, max blocks/SM, max registers/block, shared KB/SM, opt-in KB/block)
        let (max_warps, max_blocks, regs_per_block, smem_sm_kb, optin_kb) = match (major, minor) {
            (5, 0) => (64, 32, 65_536, 64, 48),
            (5, 2) => (64, 32, 65_536, 96, 48),
            (5, 3) => (64, 32, 32_768, 64, 48),
            (6, 0) => (64, 32, 65_536, 64, 48),
            (6, 1) => (64, 32, 65_536, 96, 48),
            (6, 2) => (64, 32, 32_768, 64, 48),
            (7, 0) | (7, 2) => (64, 32, 65_536, 96, 96),
            (7, 5) => (32, 16, 65_536, 64, 64),
            (8, 0) => (64, 32, 65_536, 164, 163),
            (8, 6) => (48, 16, 65_536, 100, 99),
            (8, 7) => (48, 16, 65_536, 164, 163),
            (8, 9) => (48, 24, 65_536, 100, 99),
            (9, 0) | (10, 0) => (64, 32, 65_536, 228, 227),
            (12, 0) => (48, 24, 65_536, 100, 99),
            _ => return Err(OccupancyError::UnsupportedComputeCapability { major, minor }),
        };
        let carveout_options_kb: Vec<u32> = match (major, minor) {
            (5, _) | (6, _) => vec![smem_sm_kb],
            (7, 5) => vec![32, 64],
            (7, _) => vec![0, 8, 16, 32, 64, 96],
            (8, 0) | (8, 7) => vec![0, 8, 16, 32, 64, 100, 132, 164],
            (9, _) | (10, _) => vec![0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
            _ => vec![0, 8, 16, 32, 64, 100],
        };
        let sub_partitions = if (major, minor) == (6, 0) { 2 } else { 4 };
        let ampere_plus = major >= 8;
        Ok(GpuLimits {
            major,
            minor,
            warp_size: 32,
            max_threads_per_block: 1024,
            max_warps_per_sm: max_warps,
            max_blocks_per_sm: max_blocks,
            registers_per_sm: 65_536,
            max_registers_per_block: regs_per_block,
            max_registers_per_thread: 255,
            register_allocation_unit: 256,
            register_sub_partitions: sub_partitions,
            warp_allocation_granularity: sub_partitions,
            max_shared_memory_per_sm: smem_sm_kb * KB,
            shared_memory_per_block: DEFAULT_SHARED_MEMORY_PER_BLOCK,
            max_shared_memory_per_block_optin: optin_kb * KB,
            shared_memory_allocation_unit: if ampere_plus { 128 } else { 256 },
            reserved_shared_memory_per_block: if ampere_plus { KB } else { 0 },
            carveout_options_kb,
        })
    }

    /// The architecture's short name, e.g. `sm_90`.
    pub fn sm_name(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// Whether the L1/shared-memory split is configurable (cc 7.0 and later).
    pub fn has_carveout(&self) -> bool {
        self.major >= 7
    }

    /// What a block may use of shared memory on this GPU, for a field's label: `bytes; up
    /// to 227 KiB on sm_90 after opting in, 48 KiB without` (`bytes; up to 48 KiB on sm_50`
    /// where there is no opt-in).
    pub fn shared_memory_label(&self) -> String {
        let optin = self.max_shared_memory_per_block_optin / KB;
        let plain = self.shared_memory_per_block / KB;
        if optin > plain {
            format!(
                "bytes; up to {optin} KiB on {} after opting in, {plain} KiB without",
                self.sm_name()
            )
        } else {
            format!("bytes; up to {optin} KiB on {}", self.sm_name())
        }
    }

    /// The carveout preference (percent, as `cudaFuncAttributePreferredSharedMemoryCarveout`
    /// takes it) that selects the carveout option of `bytes` per SM, within half a KiB (ncu's
    /// `Shared Memory Configuration Size`, `135.17 KB` for the 132 KiB option); `None` when
    /// no option is that size or the split is not configurable.
    pub fn carveout_pct_for(&self, bytes: u32) -> Option<u32> {
        if !self.has_carveout() {
            return None;
        }
        let option = self
            .carveout_options_bytes()
            .find(|&o| o.abs_diff(u64::from(bytes)) <= u64::from(KB / 2))?;
        let max = u64::from(self.max_shared_memory_per_sm);
        (0..=100u32).find(|&pct| self.align_up_carveout(u64::from(pct) * max / 100) == Some(option))
    }

    /// The carveout options in bytes, ascending.
    fn carveout_options_bytes(&self) -> impl Iterator<Item = u64> + '_ {
        self.carveout_options_kb
            .iter()
            .map(|&kb| u64::from(kb) * u64::from(KB))
    }

    /// The smallest carveout option of at least `bytes` (`cudaOccAlignUpShmemSizeVoltaPlus`).
    fn align_up_carveout(&self, bytes: u64) -> Option<u64> {
        self.carveout_options_bytes()
            .find(|&option| option >= bytes)
    }

    /// Refuses hand-made limits the calculation would divide by zero with.
    fn check(&self) -> Result<(), OccupancyError> {
        let nonzero = [
            ("warp_size", self.warp_size),
            ("max_warps_per_sm", self.max_warps_per_sm),
            ("register_allocation_unit", self.register_allocation_unit),
            ("register_sub_partitions", self.register_sub_partitions),
            (
                "warp_allocation_granularity",
                self.warp_allocation_granularity,
            ),
            (
                "shared_memory_allocation_unit",
                self.shared_memory_allocation_unit,
            ),
        ];
        if let Some((name, _)) = nonzero.iter().find(|(_, value)| *value == 0) {
            return Err(OccupancyError::BadLimits {
                reason: format!("{name} must be positive"),
            });
        }
        if self.carveout_options_kb.is_empty() {
            return Err(OccupancyError::BadLimits {
                reason: "carveout_options_kb is empty".into(),
            });
        }
        Ok(())
    }
}

/// What one kernel launch asks of an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OccupancyInput {
    /// Threads per block (1 to 1024).
    pub threads_per_block: u32,
    /// Registers per thread as the compiler reports it (`ptxas -v`, `cuFuncGetAttribute
    /// NUM_REGS`); 0 means the kernel uses none (no register limit).
    pub registers_per_thread: u32,
    /// Shared memory per block in bytes, static + dynamic (without the driver's 1 KiB
    /// reserve, which is added here). More than 48 KiB needs the kernel to opt in with
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
    pub shared_mem_per_block: u32,
    /// The kernel's preferred shared-memory carveout in percent of the maximum shared memory
    /// per SM (`cudaFuncAttributePreferredSharedMemoryCarveout`), rounded up to the next
    /// carveout option; `None` is the default (no preference). Ignored before cc 7.0.
    pub carveout_pct: Option<u32>,
}

/// A resource that caps the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// The SM's warp slots.
    Warps,
    /// The register file.
    Registers,
    /// Shared memory (the carveout).
    SharedMemory,
    /// The maximum resident blocks per SM.
    Blocks,
}

impl Limiter {
    /// A lower-case name for display (`shared memory`).
    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Blocks => "blocks",
        }
    }
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The occupancy of one launch configuration on one SM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OccupancyOutput {
    /// Blocks resident per SM (what `cuOccupancyMaxActiveBlocksPerMultiprocessor` returns);
    /// 0 means the block cannot launch.
    pub active_blocks_per_sm: u32,
    /// Warps resident per SM (active blocks × warps per block).
    pub active_warps_per_sm: u32,
    /// The SM's maximum resident warps.
    pub max_warps_per_sm: u32,
    /// Theoretical occupancy: active warps / maximum warps × 100.
    pub occupancy_pct: f64,
    /// Every resource whose block limit equals the active blocks (ties are all listed).
    pub limiters: Vec<Limiter>,
    /// Warps per block: ceil(threads / 32).
    pub warps_per_block: u32,
    /// Blocks allowed by the warp slots.
    pub blocks_by_warps: u32,
    /// Blocks allowed by the register file; `None` when the kernel uses no registers.
    pub blocks_by_registers: Option<u32>,
    /// Blocks allowed by shared memory at the capacity the driver computes occupancy with (the
    /// maximum by default, else the preferred carveout); `None` when a block allocates no shared
    /// memory (only possible before cc 8.0, which has no per-block reserve).
    pub blocks_by_shared_memory: Option<u32>,
    /// The hardware's maximum resident blocks per SM.
    pub blocks_by_max_blocks: u32,
    /// Registers allocated per block (per-warp allocation × warps per block).
    pub registers_per_block: u32,
    /// Shared memory allocated per block in bytes: static + dynamic + the driver's reserve,
    /// rounded up to the allocation unit.
    pub shared_memory_per_block: u32,
    /// The shared-memory capacity per SM the launch runs with, in bytes. With a preference:
    /// the preferred carveout option (raised to the smallest option that holds one block if
    /// it is too small). Without: the smallest option that still holds
    /// `active_blocks_per_sm` blocks, so occupancy is not reduced and the rest stays L1 cache.
    /// Before cc 7.0 the fixed shared memory per SM.
    pub carveout_bytes: u32,
    /// Remarks: the opt-in a block above 48 KiB needs, why a block cannot launch, ignored or
    /// raised carveout preferences.
    pub notes: Vec<String>,
}

/// One point of an occupancy curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The swept value: threads per block, registers per thread or shared bytes per block.
    pub x: u32,
    /// Warps resident per SM (0 where the configuration cannot launch or is invalid).
    pub active_warps: u32,
    /// Theoretical occupancy in percent.
    pub occupancy_pct: f64,
}

/// Rounds `x` up to a multiple of `unit` (> 0).
fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit) * unit
}

/// Narrows a count that cannot exceed `u32` for valid limits; saturates otherwise.
fn to_u32(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The register side of the calculation (`cudaOccMaxBlocksPerSMRegsLimit`).
struct RegisterUse {
    /// Registers allocated per warp.
    per_warp: u64,
    /// Registers allocated per block.
    per_block: u64,
    /// Blocks the register file allows (`None`: no registers used).
    blocks: Option<u64>,
}

fn register_use(
    limits: &GpuLimits,
    warps_per_block: u64,
    registers_per_thread: u32,
    sub_partitions: u64,
    warp_granularity: u64,
) -> RegisterUse {
    let per_warp = round_up(
        u64::from(registers_per_thread) * u64::from(limits.warp_size),
        u64::from(limits.register_allocation_unit),
    );
    let per_block = per_warp.saturating_mul(warps_per_block);
    // The hardware checks the per-block limit as if every sub-partition received the same
    // number of warps: the block's warps are rounded up to the granularity.
    let assumed_per_block = per_warp.saturating_mul(round_up(warps_per_block, warp_granularity));
    let max_per_block = u64::from(limits.max_registers_per_block);
    let blocks = if assumed_per_block > max_per_block
        || per_block > max_per_block
        || registers_per_thread > limits.max_registers_per_thread
    {
        Some(0)
    } else {
        // Warps fit per sub-partition, times the sub-partitions, over the block's warps; no
        // limit (None) when the kernel uses no registers.
        let per_sub_partition = u64::from(limits.registers_per_sm) / sub_partitions;
        per_sub_partition
            .checked_div(per_warp)
            .map(|warps| warps * sub_partitions / warps_per_block)
    };
    RegisterUse {
        per_warp,
        per_block,
        blocks,
    }
}

/// The note for a block whose registers exceed the per-block maximum.
fn too_many_registers_note(limits: &GpuLimits, regs: &RegisterUse) -> String {
    format!(
        "the block cannot launch: it needs {} registers ({} per warp), more than the {} a \
         block may hold on {} (\"too many resources requested for launch\")",
        regs.per_block,
        regs.per_warp,
        limits.max_registers_per_block,
        limits.sm_name()
    )
}

/// Blocks resident per SM for `input` on `limits`, exactly as the CUDA driver's
/// `cuOccupancyMaxActiveBlocksPerMultiprocessor` computes it, with every intermediate limit.
///
/// `input.shared_mem_per_block` above 48 KiB is accepted up to the opt-in maximum
/// (`limits.max_shared_memory_per_block_optin`, 227 KiB on sm_90): the kernel must then call
/// `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)` before
/// launching (the output carries a note). Configurations that are valid but cannot be resident
/// (too many registers for one block) give 0 active blocks, as the driver does.
///
/// Errors: 0 or more than 1024 threads per block, more than 255 registers per thread, more
/// shared memory per block than the opt-in maximum, a carveout preference above 100 %. For the
/// driver's answer to such a launch (0 blocks), see [`driver_occupancy`].
pub fn occupancy(
    limits: &GpuLimits,
    input: &OccupancyInput,
) -> Result<OccupancyOutput, OccupancyError> {
    limits.check()?;
    let threads = input.threads_per_block;
    if threads == 0 || threads > limits.max_threads_per_block {
        return Err(OccupancyError::ThreadsPerBlock {
            threads,
            max: limits.max_threads_per_block,
        });
    }
    if input.registers_per_thread > limits.max_registers_per_thread {
        return Err(OccupancyError::RegistersPerThread {
            registers: input.registers_per_thread,
            max: limits.max_registers_per_thread,
        });
    }
    if input.shared_mem_per_block > limits.max_shared_memory_per_block_optin {
        return Err(OccupancyError::SharedMemoryPerBlock {
            bytes: input.shared_mem_per_block,
            max: limits.max_shared_memory_per_block_optin,
        });
    }
    check_carveout(input)?;
    Ok(compute(limits, input))
}

/// The answer `cuOccupancyMaxActiveBlocksPerMultiprocessor` gives for `input`: like
/// [`occupancy`], but a launch the hardware cannot run is answered instead of refused, as the
/// driver (and `cuda_occupancy.h`) does: more threads per block than the per-block maximum
/// gives 0 blocks limited by warps, more registers per thread than the per-thread maximum 0
/// blocks limited by registers, more shared memory per block than the opt-in maximum 0 blocks
/// limited by shared memory, each with a note saying why the block cannot launch. The other
/// limits are computed as usual, and every limit that is 0 is listed as a limiter.
///
/// Errors, where the driver refuses the request itself: 0 threads per block, a carveout
/// preference above 100 % (`cudaFuncSetAttribute` refuses it), inconsistent hand-made limits.
pub fn driver_occupancy(
    limits: &GpuLimits,
    input: &OccupancyInput,
) -> Result<OccupancyOutput, OccupancyError> {
    limits.check()?;
    if input.threads_per_block == 0 {
        return Err(OccupancyError::ThreadsPerBlock {
            threads: 0,
            max: limits.max_threads_per_block,
        });
    }
    check_carveout(input)?;
    Ok(compute(limits, input))
}

/// Refuses a carveout preference above 100 %.
fn check_carveout(input: &OccupancyInput) -> Result<(), OccupancyError> {
    match input.carveout_pct {
        Some(pct) if pct > 100 => Err(OccupancyError::CarveoutPercent { pct }),
        _ => Ok(()),
    }
}

/// The calculation itself, for checked limits, at least one thread per block and a carveout
/// preference of at most 100 %; a limit the launch exceeds allows 0 blocks.
fn compute(limits: &GpuLimits, input: &OccupancyInput) -> OccupancyOutput {
    let threads = input.threads_per_block;
    let mut notes = Vec::new();

    // Set when a note already says why the block cannot launch.
    let mut cannot_launch = false;

    // Warps: a block above the per-block maximum of threads allows none.
    let warps_per_block = u64::from(threads)
        .div_ceil(u64::from(limits.warp_size))
        .max(1);
    if let Some(note) = warp_rounding(limits, threads) {
        notes.push(note);
    }
    let blocks_by_warps = if threads > limits.max_threads_per_block {
        notes.push(format!(
            "the block cannot launch: {threads} threads per block exceed the per-block \
             maximum of {} (\"invalid configuration argument\")",
            limits.max_threads_per_block
        ));
        cannot_launch = true;
        0
    } else {
        u64::from(limits.max_warps_per_sm) / warps_per_block
    };

    // Registers.
    let regs = register_use(
        limits,
        warps_per_block,
        input.registers_per_thread,
        u64::from(limits.register_sub_partitions),
        u64::from(limits.warp_allocation_granularity),
    );
    let mut blocks_by_registers = regs.blocks;
    if (limits.major, limits.minor) == (6, 0) && blocks_by_registers != Some(0) {
        // GP100 has 2 sub-partitions, GP10x 4: for forward compatibility within Pascal the
        // driver refuses on GP100 what could not run on GP10x.
        let gp10x = register_use(limits, warps_per_block, input.registers_per_thread, 4, 4);
        if gp10x.blocks == Some(0) {
            blocks_by_registers = Some(0);
        }
    }
    if input.registers_per_thread > limits.max_registers_per_thread {
        notes.push(format!(
            "the block cannot launch: {} registers per thread exceed the per-thread maximum \
             of {} on {}",
            input.registers_per_thread,
            limits.max_registers_per_thread,
            limits.sm_name()
        ));
        cannot_launch = true;
    } else if blocks_by_registers == Some(0) {
        notes.push(too_many_registers_note(limits, &regs));
        cannot_launch = true;
    }

    // Shared memory: a block above the per-block maximum (the opt-in one, plus the driver's
    // reserve, as `cuda_occupancy.h` compares them) allows none.
    let user_smem = u64::from(input.shared_mem_per_block);
    let smem_per_block = round_up(
        user_smem + u64::from(limits.reserved_shared_memory_per_block),
        u64::from(limits.shared_memory_allocation_unit),
    );
    let smem_limit_per_block = u64::from(limits.max_shared_memory_per_block_optin)
        + u64::from(limits.reserved_shared_memory_per_block);
    let smem_too_big = smem_per_block > smem_limit_per_block;
    if smem_too_big {
        notes.push(format!(
            "the block cannot launch: {user_smem} B of shared memory per block exceeds the \
             per-block maximum of {} B ({} KiB, the opt-in limit set with \
             cudaFuncAttributeMaxDynamicSharedMemorySize) on {}",
            limits.max_shared_memory_per_block_optin,
            limits.max_shared_memory_per_block_optin / KB,
            limits.sm_name()
        ));
        cannot_launch = true;
    } else if user_smem > u64::from(limits.shared_memory_per_block) {
        notes.push(format!(
            "the block uses {user_smem} B of shared memory, more than {} KiB: only dynamic shared \
             memory can exceed it, and the kernel must opt in with \
             cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)",
            limits.shared_memory_per_block / KB
        ));
    }
    let max_smem_sm = u64::from(limits.max_shared_memory_per_sm);
    let preference = if !limits.has_carveout() {
        if input.carveout_pct.is_some() {
            notes.push(format!(
                "the carveout preference is ignored: {} has a fixed {} KiB of shared memory per SM",
                limits.sm_name(),
                limits.max_shared_memory_per_sm / KB
            ));
        }
        max_smem_sm
    } else {
        let wanted = match input.carveout_pct {
            None => max_smem_sm,
            Some(pct) => u64::from(pct) * max_smem_sm / 100,
        };
        limits.align_up_carveout(wanted).unwrap_or(max_smem_sm)
    };
    // A preference too small for one block is overridden by the smallest option that holds it.
    let capacity = if preference >= smem_per_block || smem_too_big {
        preference
    } else if limits.has_carveout() {
        let raised = limits
            .align_up_carveout(smem_per_block)
            .unwrap_or(max_smem_sm);
        notes.push(format!(
            "the preferred carveout of {} KiB is too small for one block ({smem_per_block} B): \
             the driver raises it to {} KiB",
            preference / u64::from(KB),
            raised / u64::from(KB)
        ));
        raised
    } else {
        max_smem_sm
    };
    let blocks_by_shared_memory = if smem_too_big {
        Some(0)
    } else {
        capacity.checked_div(smem_per_block)
    };

    // Blocks, and the minimum of all.
    let blocks_by_max_blocks = u64::from(limits.max_blocks_per_sm);
    let active = [
        Some(blocks_by_warps),
        blocks_by_registers,
        blocks_by_shared_memory,
        Some(blocks_by_max_blocks),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(0);
    let limiters: Vec<Limiter> = [
        (Limiter::Warps, Some(blocks_by_warps)),
        (Limiter::Registers, blocks_by_registers),
        (Limiter::SharedMemory, blocks_by_shared_memory),
        (Limiter::Blocks, Some(blocks_by_max_blocks)),
    ]
    .into_iter()
    .filter(|(_, blocks)| *blocks == Some(active))
    .map(|(limiter, _)| limiter)
    .collect();
    if active == 0 && !cannot_launch {
        notes.push("the block cannot be resident on an SM: the launch would fail".into());
    }

    // The carveout actually used: without a preference, the smallest option that keeps the
    // active blocks resident.
    let carveout = if limits.has_carveout() && input.carveout_pct.is_none() && active > 0 {
        limits
            .align_up_carveout(smem_per_block * active)
            .unwrap_or(capacity)
    } else {
        capacity
    };

    let active_warps = active * warps_per_block;
    OccupancyOutput {
        active_blocks_per_sm: to_u32(active),
        active_warps_per_sm: to_u32(active_warps),
        max_warps_per_sm: limits.max_warps_per_sm,
        occupancy_pct: active_warps as f64 / f64::from(limits.max_warps_per_sm) * 100.0,
        limiters,
        warps_per_block: to_u32(warps_per_block),
        blocks_by_warps: to_u32(blocks_by_warps),
        blocks_by_registers: blocks_by_registers.map(to_u32),
        blocks_by_shared_memory: blocks_by_shared_memory.map(to_u32),
        blocks_by_max_blocks: limits.max_blocks_per_sm,
        registers_per_block: to_u32(regs.per_block),
        shared_memory_per_block: to_u32(smem_per_block),
        carveout_bytes: to_u32(carveout),
        notes,
    }
}

/// Why `threads` per block use more thread slots than that, when they do: an SM allocates a
/// block's threads a whole warp at a time, so 100 threads take 4 warps (128 slots, 28 idle).
/// `None` for a whole number of warps (or no thread).
pub fn warp_rounding(limits: &GpuLimits, threads: u32) -> Option<String> {
    let warp = limits.warp_size.max(1);
    if threads == 0 || threads.is_multiple_of(warp) {
        return None;
    }
    let warps = u64::from(threads).div_ceil(u64::from(warp));
    let slots = warps * u64::from(warp);
    let threads = u64::from(threads);
    Some(format!(
        "{threads} threads per block run as {warps} warps of {warp} ({slots} thread slots, {} \
         of them idle): an SM allocates a block's threads a whole warp at a time, so the \
         calculation counts {warps} warps; {} or {} threads use every slot",
        slots - threads,
        (warps - 1) * u64::from(warp),
        slots
    ))
}

/// Why the calculator's shared-memory block count can differ from Nsight Compute's, when
/// it can: without a carveout preference ([`OccupancyInput::carveout_pct`] `None`) blocks are
/// counted against the largest carveout, as the driver's occupancy calculation does, while
/// ncu's `Block Limit Shared Mem` counts against the carveout the profiled launch ran with
/// (its `Shared Memory Configuration Size`). `None` when a carveout is chosen, the split is
/// fixed (before cc 7.0) or the limits are inconsistent.
pub fn carveout_explanation(limits: &GpuLimits, input: &OccupancyInput) -> Option<String> {
    if !limits.has_carveout() || input.carveout_pct.is_some() {
        return None;
    }
    let out = occupancy(limits, input).ok()?;
    let blocks = out.blocks_by_shared_memory?;
    Some(format!(
        "Shared memory allows {blocks} blocks counted against the largest carveout, {} KiB per \
         SM: the driver's choice without a carveout preference. Nsight Compute's \"Block Limit \
         Shared Mem\" counts against the carveout the profiled launch ran with, its \"Shared \
         Memory Configuration Size\" (in decimal KB: 135.17 KB is the 132 KiB option), so it \
         can count fewer blocks. Choose that carveout here to compare.",
        limits.max_shared_memory_per_sm / KB
    ))
}

/// A calculator field's text as a whole number in `min..=max`, or why it is not one (`-5`
/// threads per block: "cannot be negative"), so the field can be flagged instead of the
/// results left as they were.
pub fn parse_field(text: &str, what: &str, min: u32, max: u32) -> Result<u32, OccupancyError> {
    let t = text.trim().replace([',', '_'], "");
    let range = format!(
        "enter a whole number from {} to {}",
        crate::format::thousands(u64::from(min)),
        crate::format::thousands(u64::from(max))
    );
    let fail = |why: String| OccupancyError::Field {
        what: what.to_string(),
        reason: format!("{why}: {range}"),
    };
    if t.is_empty() {
        return Err(fail("no value".into()));
    }
    if t.starts_with('-') && t.len() > 1 {
        return Err(fail(format!("{} cannot be negative", text.trim())));
    }
    let Ok(v) = t.parse::<u64>() else {
        return Err(fail(format!("'{}' is not a whole number", text.trim())));
    };
    if v < u64::from(min) {
        return Err(fail(format!("{v} is below the minimum")));
    }
    if v > u64::from(max) {
        return Err(fail(format!(
            "{} is above the maximum",
            crate::format::thousands(v)
        )));
    }
    u32::try_from(v).map_err(|_| fail(format!("{v} is above the maximum")))
}

/// One sweep point: the occupancy of `input`, or 0 where it is invalid.
fn sweep_point(limits: &GpuLimits, input: &OccupancyInput, x: u32) -> SweepPoint {
    match occupancy(limits, input) {
        Ok(out) => SweepPoint {
            x,
            active_warps: out.active_warps_per_sm,
            occupancy_pct: out.occupancy_pct,
        },
        Err(_) => SweepPoint {
            x,
            active_warps: 0,
            occupancy_pct: 0.0,
        },
    }
}

/// Occupancy against block size (Nsight Compute's "Impact of Varying Block Size"): threads
/// per block from 32 to the maximum (1024) in steps of a warp, the rest of `input` unchanged.
/// Points that cannot launch or are invalid read 0.
pub fn sweep_block_size(limits: &GpuLimits, input: &OccupancyInput) -> Vec<SweepPoint> {
    let step = limits.warp_size.max(1);
    (1..=limits.max_threads_per_block / step)
        .map(|k| {
            let threads = k * step;
            let point = OccupancyInput {
                threads_per_block: threads,
                ..*input
            };
            sweep_point(limits, &point, threads)
        })
        .collect()
}

/// Occupancy against registers per thread ("Impact of Varying Register Count Per Thread"):
/// every count from 0 to the maximum (255), the rest of `input` unchanged. Never increases
/// with the register count.
pub fn sweep_registers(limits: &GpuLimits, input: &OccupancyInput) -> Vec<SweepPoint> {
    (0..=limits.max_registers_per_thread)
        .map(|registers| {
            let point = OccupancyInput {
                registers_per_thread: registers,
                ..*input
            };
            sweep_point(limits, &point, registers)
        })
        .collect()
}

/// The shared-memory step of [`sweep_shared_memory`], in bytes.
pub const SHARED_MEMORY_SWEEP_STEP: u32 = 512;

/// Occupancy against shared memory per block ("Impact of Varying Shared Memory Usage Per
/// Block"): 0 to the opt-in maximum in steps of [`SHARED_MEMORY_SWEEP_STEP`] bytes (the
/// maximum itself always included), the rest of `input` unchanged. Without a carveout
/// preference it never increases with the shared memory.
pub fn sweep_shared_memory(limits: &GpuLimits, input: &OccupancyInput) -> Vec<SweepPoint> {
    let max = limits.max_shared_memory_per_block_optin;
    let mut sizes: Vec<u32> = (0..=max)
        .step_by(SHARED_MEMORY_SWEEP_STEP as usize)
        .collect();
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
        .into_iter()
        .map(|bytes| {
            let point = OccupancyInput {
                shared_mem_per_block: bytes,
                ..*input
            };
            sweep_point(limits, &point, bytes)
        })
        .collect()
}

/// Parses a compute capability: `9.0`, `90`, `sm_90`, `sm90`, `compute_90`, `sm_90a`,
/// `8.6`, `12.0`, `120` → `(major, minor)`. The digits-only form reads the last digit as the
/// minor version. Whether the GPU is known is [`GpuLimits::for_cc`]'s business.
pub fn parse_cc(s: &str) -> Result<(u32, u32), OccupancyError> {
    let bad = || OccupancyError::BadComputeCapability {
        text: s.to_string(),
    };
    let lower = s.trim().to_ascii_lowercase();
    let body = ["sm_", "compute_", "sm"]
        .iter()
        .find_map(|prefix| lower.strip_prefix(prefix))
        .unwrap_or(&lower);
    // Architecture-specific (sm_90a) and family (sm_100f) targets share the base limits.
    let body = body.strip_suffix(['a', 'f']).unwrap_or(body);
    let number = |digits: &str| -> Result<u32, OccupancyError> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        digits.parse().map_err(|_| bad())
    };
    if let Some((major, minor)) = body.split_once('.') {
        return Ok((number(major)?, number(minor)?));
    }
    if !(2..=3).contains(&body.len()) {
        return Err(bad());
    }
    let (major, minor) = body.split_at(body.len() - 1);
    Ok((number(major)?, number(minor)?))
}

#[cfg(test)]
mod tests;
