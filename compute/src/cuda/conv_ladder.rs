//! The convolution ladder on the GPU (`showdown bench conv`): every rung of
//! `kernels/cuda/conv_ladder.cu`, cuDNN through cudarc as the library peer, the copy and cuBLAS
//! GEMM ceilings, all timed with CUDA events in one run and every rung checked against the f64
//! CPU reference at the benchmark's batch.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
use half::f16;

use super::bench::{BenchStream, Outputs};
use super::device::{load_families, open_device, Kernels, OpenDevice};
use super::launch::{self, blocks_of, config, tiles16, Kernel};
use super::{err, library};
use crate::conv_ladder::{
    check_images, compare, fill_speedups, finish_row, ladder_input, percentiles, reference_outputs,
    round_f16, Ceilings, ConvCheck, ConvLadderReport, ConvRow, LadderInput, LadderLayer,
};
use crate::data::Dataset;
use crate::error::{ComputeError, Result};
use crate::model::ConvShape;

pub use super::bench::LadderOptions;

/// Threads per block of the tensor-core rungs (`CONV_TC_THREADS` in the kernel source).
const TC_THREADS: u32 = 256;

/// Channel tiles of 16 a tensor-core block computes for `c_out` channels (the kernels' `MT`).
pub fn conv_tc_channel_tiles(c_out: usize) -> Option<usize> {
    match c_out {
        1..=16 => Some(1),
        17..=32 => Some(2),
        33..=64 => Some(4),
        _ => None,
    }
}

/// Dynamic shared memory of the tensor-core rungs, in bytes: the same layout as
/// `conv_tc_body` (weights padded to 16·MT rows of KP + 8 halves, the offset table, the image
/// plus a zero, the output tile), each part rounded up to 16 bytes.
pub fn conv_tc_smem_bytes(s: &ConvShape, out_bytes: usize) -> Option<usize> {
    let mt = conv_tc_channel_tiles(s.c_out)?;
    let a16 = |v: usize| v.div_ceil(16) * 16;
    let kp = a16(s.patch_len());
    Some(
        a16(16 * mt * (kp + 8) * 2)
            + a16(kp * 4)
            + a16((s.in_len() + 8) * 2)
            + s.out_len() * out_bytes,
    )
}

/// Whether rung 4 stages the layer's image channels-last (`conv_tc_nhwc_body`: input
/// channels a multiple of 16, output channels a multiple of 16, at most 64).
pub fn conv_tc_stages_nhwc(s: &ConvShape) -> bool {
    s.c_in.is_multiple_of(16) && s.c_out.is_multiple_of(16) && s.c_out <= 64
}

/// Dynamic shared memory of rung 4's channels-last kernel: weights M × (KP + 8) halves, the
/// image HW × (C + 8) halves, the FP16 output tile; each part rounded up to 16 bytes.
pub fn conv_tc_nhwc_smem_bytes(s: &ConvShape) -> usize {
    let a16 = |v: usize| v.div_ceil(16) * 16;
    a16(s.c_out * (s.patch_len() + 8) * 2) + a16(s.h * s.w * (s.c_in + 8) * 2) + s.out_len() * 2
}

/// Device buffers of one layer.
struct LayerBufs {
    /// FP32 input copies (rotated so that consecutive passes miss L2).
    x32: Vec<CudaSlice<f32>>,
    /// FP16 input copies.
    x16: Vec<CudaSlice<u16>>,
    w32: CudaSlice<f32>,
    w16: CudaSlice<u16>,
    y32: CudaSlice<f32>,
    y16: CudaSlice<u16>,
}

/// The ladder on one GPU.
pub struct ConvLab {
    /// The context and the stream the ladder runs and times on.
    pub(super) bench: BenchStream,
    funcs: Kernels,
    pub(super) sms: u32,
    tensor_cores: bool,
    /// The device in words.
    pub device: String,
}

impl ConvLab {
    /// Opens GPU `ordinal` and compiles the ladder's kernels for it.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_families(ordinal, &[kernels::CONV_LADDER])
    }

    /// Opens GPU `ordinal` and compiles `families` (the ladder's among them) for it.
    pub(super) fn with_families(
        ordinal: usize,
        families: &[kernels::KernelFamily],
    ) -> Result<Self> {
        let OpenDevice {
            ctx,
            arch,
            device,
            sms,
        } = open_device(ordinal)?;
        let funcs = load_families(&ctx, families, &arch)?;
        let cc: u32 = arch
            .trim_start_matches("compute_")
            .parse()
            .map_err(|_| err(format!("unexpected architecture {arch}")))?;
        Ok(ConvLab {
            bench: BenchStream {
                stream: ctx.default_stream(),
                ctx,
            },
            tensor_cores: cc >= 80,
            device,
            funcs,
            sms,
        })
    }

    /// The loaded entry point `name`.
    pub(super) fn func(&self, name: &str) -> Result<Kernel<'_>> {
        Kernel::find(&self.funcs, name)
    }

    fn grid_stride_blocks(&self, n: usize) -> u32 {
        n.div_ceil(256).clamp(1, self.sms as usize * 32) as u32
    }

    /// Rung 1 on images `[0, batch)`: unroll + GEMM + permute per chunk of images; `xu`, `yt`
    /// hold one chunk.
    #[allow(clippy::too_many_arguments)]
    fn rung1(
        &self,
        s: &ConvShape,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        xu: &mut CudaSlice<f32>,
        yt: &mut CudaSlice<f32>,
        batch: usize,
        chunk: usize,
    ) -> Result<()> {
        let (unroll, gemm, permute) = (
            self.func("conv_unroll_f32")?,
            self.func("gemm_tiled_f32")?,
            self.func("conv_permute_f32")?,
        );
        let mut b0 = 0;
        while b0 < batch {
            let nb = chunk.min(batch - b0);
            let cols = nb * s.out_pixels();
            let stream = &self.bench.stream;
            let blocks = self.grid_stride_blocks(s.patch_len() * cols);
            // SAFETY: x holds `batch` images (b0 + nb ≤ batch), xu patch_len × chunk·HoWo floats
            // (nb ≤ chunk).
            unsafe {
                launch::conv_unroll_f32(
                    stream,
                    unroll,
                    blocks_of(blocks, 256),
                    x,
                    xu,
                    b0,
                    nb,
                    s.c_in,
                    s.h,
                    s.w,
                    s.k,
                )
            }?;
            let cfg = tiles16(gemm, (cols.div_ceil(16), s.c_out.div_ceil(16)))?;
            // SAFETY: A = w (M × Kd), B = xu (Kd × cols), C = yt (M × cols, cols ≤ chunk·HoWo);
            // 16 × 16 threads, the grid covers cols in x and M in y.
            unsafe {
                launch::gemm_tiled_f32(stream, gemm, cfg, w, &*xu, yt, s.c_out, cols, s.patch_len())
            }?;
            let blocks = self.grid_stride_blocks(nb * s.out_len());
            // SAFETY: yt holds M × nb·HoWo floats, y holds `batch` outputs (b0 + nb ≤ batch).
            unsafe {
                launch::conv_permute_f32(
                    stream,
                    permute,
                    blocks_of(blocks, 256),
                    &*yt,
                    y,
                    b0,
                    nb,
                    s.c_out,
                    s.out_pixels(),
                )
            }?;
            b0 += nb;
        }
        Ok(())
    }

    /// Rung 2: the fused SIMT kernel.
    fn rung2(
        &self,
        s: &ConvShape,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        batch: usize,
    ) -> Result<()> {
        let f = self.func("conv_fused_f32")?;
        let cols = batch * s.out_pixels();
        let cfg = tiles16(f, (cols.div_ceil(16), s.c_out.div_ceil(16)))?;
        // SAFETY: x holds `batch` images of the layer, w its weights, y `batch` outputs; 16 × 16
        // threads, the grid covers the output columns in x and the channels in y.
        unsafe {
            launch::conv_fused_f32(
                &self.bench.stream,
                f,
                cfg,
                x,
                w,
                y,
                batch,
                s.c_in,
                s.h,
                s.w,
                s.c_out,
                s.k,
            )
        }
    }

    /// The launch shape of a tensor-core rung: opts the kernel into `smem` bytes of dynamic
    /// shared memory and fills the GPU with as many persistent blocks as fit.
    fn tc_config(&self, f: Kernel<'_>, smem: usize, batch: usize) -> Result<LaunchConfig> {
        if smem > 48 * 1024 {
            let bytes = i32::try_from(smem).map_err(|_| {
                err(format!(
                    "{}: {smem} bytes of shared memory do not fit the driver's limit",
                    f.name
                ))
            })?;
            f.func
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes,
                )
                .map_err(|e| err(format!("{smem} bytes of shared memory: {e}")))?;
        }
        let per_sm = f
            .func
            .occupancy_max_active_blocks_per_multiprocessor(TC_THREADS, smem, None)
            .map_err(err)?;
        if per_sm == 0 {
            return Err(err(format!(
                "a {TC_THREADS}-thread block with {smem} bytes of shared memory does not fit an SM"
            )));
        }
        let blocks = (self.sms as usize * per_sm as usize).min(batch).max(1);
        config(f, (blocks, 1), TC_THREADS, smem)
    }

    fn require_tensor_cores(&self) -> Result<()> {
        if self.tensor_cores {
            Ok(())
        } else {
            Err(err(format!(
                "the tensor-core rungs need sm_80 or newer ({})",
                self.device
            )))
        }
    }

    /// Rung 3: the tensor-core kernel with run-time shapes, FP32 output.
    fn rung3(
        &self,
        s: &ConvShape,
        x: &CudaSlice<u16>,
        w: &CudaSlice<u16>,
        y: &mut CudaSlice<f32>,
        batch: usize,
    ) -> Result<()> {
        self.require_tensor_cores()?;
        let smem = conv_tc_smem_bytes(s, 4).ok_or_else(|| {
            err(format!(
                "rung 3 takes at most 64 output channels, not {}",
                s.c_out
            ))
        })?;
        let f = self.func("conv_tc_f16")?;
        let cfg = self.tc_config(f, smem, batch)?;
        // SAFETY: x holds `batch` FP16 images of the layer, w its weights, y `batch` FP32
        // outputs; at most 64 channels and the dynamic shared memory of conv_tc_smem_bytes
        // (checked above), opted into by tc_config; tensor cores checked above.
        unsafe {
            launch::conv_tc_f16(
                &self.bench.stream,
                f,
                cfg,
                x,
                w,
                y,
                batch,
                s.c_in,
                s.h,
                s.w,
                s.c_out,
                s.k,
            )
        }
    }

    /// Rung 4 (the layer's own kernel, FP16 output) on `batch` images from `x`/`y` views.
    pub(super) fn rung4(
        &self,
        stream: &Arc<CudaStream>,
        layer: LadderLayer,
        x: &CudaView<'_, u16>,
        w: &CudaSlice<u16>,
        y: &mut CudaViewMut<'_, u16>,
        batch: usize,
    ) -> Result<()> {
        self.require_tensor_cores()?;
        let s = layer.shape();
        let smem = if conv_tc_stages_nhwc(&s) {
            conv_tc_nhwc_smem_bytes(&s)
        } else {
            conv_tc_smem_bytes(&s, 2).ok_or_else(|| err("no channel tiling"))?
        };
        let f = self.func(&format!("conv_tc_opt_{}", layer.name()))?;
        let cfg = self.tc_config(f, smem, batch)?;
        // SAFETY: the layer's own kernel; the callers' views hold `batch` images and outputs of
        // the layer, w its weights; the layer's shared memory (above) opted into by tc_config.
        unsafe { launch::conv_tc_opt(stream, f, cfg, x, w, y, batch) }
    }

    /// Runs the ladder: per layer, every rung (checked at the full batch, then timed), cuDNN,
    /// and the streamed rung 5 against rung 4 after a plain copy; the ceilings first.
    pub fn run(&self, opts: &LadderOptions, data: &Dataset) -> Result<ConvLadderReport> {
        self.run_with(opts, data, &mut |_| Ok(()))
    }

    /// [`ConvLab::run`], telling `progress` what it starts (`ceilings`, then each layer's name)
    /// and stopping with its error (a cancelled job).
    pub fn run_with(
        &self,
        opts: &LadderOptions,
        data: &Dataset,
        progress: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<ConvLadderReport> {
        if opts.batch == 0 {
            return Err(ComputeError::bad_arg("--batch", 0, "must be at least 1"));
        }
        let mut skipped = Vec::new();
        progress("ceilings")?;
        let ceilings = self.ceilings(opts, &mut skipped)?;
        let (mut rows, mut checks) = (Vec::new(), Vec::new());
        for &layer in &opts.layers {
            progress(layer.name())?;
            self.run_layer(layer, opts, data, &mut rows, &mut checks, &mut skipped)?;
        }
        fill_speedups(&mut rows);
        Ok(ConvLadderReport {
            device: self.device.clone(),
            batch: opts.batch,
            input_source: format!(
                "{} test images (conv1: as is, C1: resized to 86x86 bilinear), hidden layers uniform [-1, 1)",
                data.name
            ),
            ceilings,
            rows,
            checks,
            skipped,
        })
    }

    fn ceilings(&self, opts: &LadderOptions, skipped: &mut Vec<String>) -> Result<Ceilings> {
        let n = 1usize << 28; // 256 MiB each way
        let src = self.bench.stream.alloc_zeros::<u8>(n).map_err(err)?;
        let mut dst = self.bench.stream.alloc_zeros::<u8>(n).map_err(err)?;
        let t = self.bench.time_events(3, 20, |_| {
            self.bench.stream.memcpy_dtod(&src, &mut dst).map_err(err)
        })?;
        let copy_gbps = 2.0 * n as f64 / (percentiles(t).0 * 1e-3) / 1e9;
        drop((src, dst));
        let (gemm_f16_tflops, gemm_f32_tflops, gemm_note) =
            match library::gemm_ceilings(&self.bench, opts.reps.clamp(5, 20)) {
                Ok((a, b)) => (Some(a), Some(b), None),
                Err(e) => {
                    skipped.push(format!("GEMM ceilings (cuBLAS): {e}"));
                    (None, None, Some(e.to_string()))
                }
            };
        Ok(Ceilings {
            copy_gbps,
            gemm_f16_tflops,
            gemm_f32_tflops,
            gemm_note,
        })
    }

    fn layer_bufs(&self, s: &ConvShape, input: &LadderInput, batch: usize) -> Result<LayerBufs> {
        // Enough input copies that consecutive passes read from DRAM (≥ 128 MB, L2 is 50 MB on an H100).
        let copies = |bytes: usize| (128usize << 20).div_ceil(bytes.max(1)).clamp(2, 16);
        let x32_one = self.bench.stream.clone_htod(&input.x).map_err(err)?;
        let mut x32 = vec![x32_one];
        for _ in 1..copies(input.x.len() * 4) {
            x32.push(self.bench.stream.clone_htod(&input.x).map_err(err)?);
        }
        let mut x16 = Vec::new();
        for _ in 0..copies(input.x.len() * 2) {
            x16.push(self.bench.upload_f16(&input.x)?);
        }
        Ok(LayerBufs {
            x32,
            x16,
            w32: self.bench.stream.clone_htod(&input.w).map_err(err)?,
            w16: self.bench.upload_f16(&input.w)?,
            y32: self
                .bench
                .stream
                .alloc_zeros::<f32>(batch * s.out_len())
                .map_err(err)?,
            y16: self
                .bench
                .stream
                .alloc_zeros::<u16>(batch * s.out_len())
                .map_err(err)?,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn run_layer(
        &self,
        layer: LadderLayer,
        opts: &LadderOptions,
        data: &Dataset,
        rows: &mut Vec<ConvRow>,
        checks: &mut Vec<ConvCheck>,
        skipped: &mut Vec<String>,
    ) -> Result<()> {
        let s = layer.shape();
        let batch = opts.batch;
        let input = ladder_input(layer, batch, data, 42)?;
        let imgs = check_images(batch, opts.check_images);
        let want32 = reference_outputs(&input.x, &input.w, &s, &imgs);
        let (x16h, w16h) = (round_f16(&input.x), round_f16(&input.w));
        let want16 = reference_outputs(&x16h, &w16h, &s, &imgs);
        let mut b = self.layer_bufs(&s, &input, batch)?;
        let check = |name: &str, got: Vec<f32>, want: &[f64], bound: f64| {
            compare(layer, name, batch, imgs.len(), &got, want, bound)
        };

        // Rung 1: chunks whose unrolled matrix and GEMM result stay under 1 GiB.
        let per_img = (s.patch_len() + s.c_out) * s.out_pixels() * 4;
        let chunk = ((1usize << 30) / per_img).clamp(1, batch);
        let mut xu = self
            .bench
            .stream
            .alloc_zeros::<f32>(s.patch_len() * chunk * s.out_pixels())
            .map_err(err)?;
        let mut yt = self
            .bench
            .stream
            .alloc_zeros::<f32>(s.c_out * chunk * s.out_pixels())
            .map_err(err)?;
        let name = "rung1_unroll_gemm_permute";
        self.bench.poison(&mut b.y32)?;
        self.rung1(
            &s, &b.x32[0], &b.w32, &mut b.y32, &mut xu, &mut yt, batch, chunk,
        )?;
        checks.push(check(
            name,
            self.bench.outputs(&s, Outputs::F32(&b.y32), &imgs)?,
            &want32,
            1e-4,
        ));
        let t = self.bench.time(opts, |i| {
            let x = &b.x32[i % b.x32.len()];
            self.rung1(&s, x, &b.w32, &mut b.y32, &mut xu, &mut yt, batch, chunk)
        })?;
        let mut row = finish_row(layer, name, Some(1), batch, (4, 4), t);
        row.note = Some(format!("3 launches per {chunk}-image chunk"));
        rows.push(row);
        drop((xu, yt));

        let name = "rung2_fused_f32";
        self.bench.poison(&mut b.y32)?;
        self.rung2(&s, &b.x32[0], &b.w32, &mut b.y32, batch)?;
        checks.push(check(
            name,
            self.bench.outputs(&s, Outputs::F32(&b.y32), &imgs)?,
            &want32,
            1e-4,
        ));
        let t = self.bench.time(opts, |i| {
            self.rung2(&s, &b.x32[i % b.x32.len()], &b.w32, &mut b.y32, batch)
        })?;
        rows.push(finish_row(layer, name, Some(2), batch, (4, 4), t));

        if self.tensor_cores {
            let name = "rung3_tensor_cores";
            self.bench.poison(&mut b.y32)?;
            self.rung3(&s, &b.x16[0], &b.w16, &mut b.y32, batch)?;
            checks.push(check(
                name,
                self.bench.outputs(&s, Outputs::F32(&b.y32), &imgs)?,
                &want16,
                2e-4,
            ));
            let t = self.bench.time(opts, |i| {
                self.rung3(&s, &b.x16[i % b.x16.len()], &b.w16, &mut b.y32, batch)
            })?;
            rows.push(finish_row(layer, name, Some(3), batch, (2, 4), t));

            let name = "rung4_tensor_cores_fp16_out";
            self.bench.poison(&mut b.y16)?;
            self.rung4(
                &self.bench.stream,
                layer,
                &b.x16[0].slice(..),
                &b.w16,
                &mut b.y16.slice_mut(..),
                batch,
            )?;
            checks.push(check(
                name,
                self.bench.outputs(&s, Outputs::F16(&b.y16), &imgs)?,
                &want16,
                1e-3,
            ));
            let t = self.bench.time(opts, |i| {
                let x = b.x16[i % b.x16.len()].slice(..);
                self.rung4(
                    &self.bench.stream,
                    layer,
                    &x,
                    &b.w16,
                    &mut b.y16.slice_mut(..),
                    batch,
                )
            })?;
            rows.push(finish_row(layer, name, Some(4), batch, (2, 2), t));

            self.streamed(layer, opts, &x16h, &mut b, &imgs, &want16, rows, checks)?;
        } else {
            skipped.push(format!(
                "{}: rungs 3-5 need tensor cores with mma.sync m16n8k16 (sm_80+)",
                layer.name()
            ));
        }
        drop(b);
        match library::cudnn_rows(&self.bench, layer, &input, opts, &imgs, &want32, &want16) {
            Ok((r, c)) => {
                rows.extend(r);
                checks.extend(c);
            }
            Err(e) => skipped.push(format!("{}: cuDNN: {e}", layer.name())),
        }
        Ok(())
    }

    /// One pass over the batch from pinned host memory: with `overlap`, in chunks over two
    /// streams (each chunk's copy overlapping the previous chunk's kernel: rung 5); without,
    /// one copy of the whole batch, then rung 4.
    #[allow(clippy::too_many_arguments)]
    fn streamed_pass(
        &self,
        layer: LadderLayer,
        host: &[u16],
        second: &Arc<CudaStream>,
        x: &mut CudaSlice<u16>,
        w: &CudaSlice<u16>,
        y: &mut CudaSlice<u16>,
        batch: usize,
        overlap: bool,
    ) -> Result<()> {
        let s = layer.shape();
        let (n_in, n_out) = (s.in_len(), s.out_len());
        if !overlap {
            self.bench.stream.memcpy_htod(host, x).map_err(err)?;
            return self.rung4(
                &self.bench.stream,
                layer,
                &x.slice(..),
                w,
                &mut y.slice_mut(..),
                batch,
            );
        }
        // The second stream starts after everything already queued on the timing stream.
        second
            .wait(&self.bench.stream.record_event(None).map_err(err)?)
            .map_err(err)?;
        let per = batch.div_ceil(STREAM_CHUNKS.min(batch));
        let mut a = 0;
        let mut c = 0;
        while a < batch {
            let e = (a + per).min(batch);
            let st = if c % 2 == 0 {
                &self.bench.stream
            } else {
                second
            };
            st.memcpy_htod(
                &host[a * n_in..e * n_in],
                &mut x.slice_mut(a * n_in..e * n_in),
            )
            .map_err(err)?;
            self.rung4(
                st,
                layer,
                &x.slice(a * n_in..e * n_in),
                w,
                &mut y.slice_mut(a * n_out..e * n_out),
                e - a,
            )?;
            a = e;
            c += 1;
        }
        self.bench.stream.join(second).map_err(err)
    }

    /// Rung 5 and, beside it, rung 4 after one plain copy of the whole batch (the same bytes
    /// from the same pinned buffer, no overlap).
    #[allow(clippy::too_many_arguments)]
    fn streamed(
        &self,
        layer: LadderLayer,
        opts: &LadderOptions,
        x16h: &[f32],
        b: &mut LayerBufs,
        imgs: &[usize],
        want16: &[f64],
        rows: &mut Vec<ConvRow>,
        checks: &mut Vec<ConvCheck>,
    ) -> Result<()> {
        let s = layer.shape();
        let batch = opts.batch;
        // SAFETY: the pinned buffer is fully written below before any copy reads it.
        let mut pinned =
            unsafe { self.bench.ctx.alloc_pinned::<u16>(batch * s.in_len()) }.map_err(err)?;
        for (d, v) in pinned.as_mut_slice().map_err(err)?.iter_mut().zip(x16h) {
            *d = f16::from_f32(*v).to_bits();
        }
        let host = pinned.as_slice().map_err(err)?;
        let second = self.bench.ctx.new_stream().map_err(err)?;
        let mb = (batch * s.in_len() * 2) as f64 / 1e6;
        for (overlap, name, rung) in [
            (true, "rung5_pinned_two_streams", Some(5)),
            (false, "rung4_after_one_copy", None),
        ] {
            let LayerBufs { x16, w16, y16, .. } = &mut *b;
            let x = &mut x16[0];
            self.bench.poison(x)?;
            self.bench.poison(y16)?;
            self.streamed_pass(layer, host, &second, x, w16, y16, batch, overlap)?;
            checks.push(compare(
                layer,
                name,
                batch,
                imgs.len(),
                &self.bench.outputs(&s, Outputs::F16(y16), imgs)?,
                want16,
                1e-3,
            ));
            let t = self.bench.time(opts, |_| {
                self.streamed_pass(layer, host, &second, x, w16, y16, batch, overlap)
            })?;
            let mut row = finish_row(layer, name, rung, batch, (2, 2), t);
            row.note = Some(if overlap {
                format!("includes copying the {mb:.0} MB FP16 batch from pinned host memory: {STREAM_CHUNKS} chunks over two streams")
            } else {
                format!("includes copying the {mb:.0} MB FP16 batch from pinned host memory in one copy before the kernel")
            });
            rows.push(row);
        }
        Ok(())
    }
}

impl ConvLab {
    /// For a profiler (`showdown profile-target`): `warmups` passes of rung `rung` (1–5) on
    /// `layer` over `batch` images (the ladder's inputs from `data`), then one inside the NVTX
    /// range `range` (what ncu filters on), the stream drained before the range closes.
    /// Nothing is checked or timed.
    pub fn profile_pass(
        &self,
        layer: LadderLayer,
        rung: u8,
        batch: usize,
        data: &Dataset,
        warmups: usize,
        range: &str,
    ) -> Result<()> {
        if !(1..=5).contains(&rung) {
            return Err(ComputeError::bad_arg("rung", rung, "the rungs are 1 to 5"));
        }
        if batch == 0 {
            return Err(ComputeError::bad_arg("batch", 0, "must be at least 1"));
        }
        if rung >= 3 {
            self.require_tensor_cores()?;
        }
        let s = layer.shape();
        let input = ladder_input(layer, batch, data, 42)?;
        let st = &self.bench.stream;
        let mut pass: Box<dyn FnMut() -> Result<()> + '_> = match rung {
            1 | 2 => {
                let x = st.clone_htod(&input.x).map_err(err)?;
                let w = st.clone_htod(&input.w).map_err(err)?;
                let mut y = st.alloc_zeros::<f32>(batch * s.out_len()).map_err(err)?;
                if rung == 1 {
                    // The ladder's chunking: the unrolled matrix and GEMM result under 1 GiB.
                    let per_img = (s.patch_len() + s.c_out) * s.out_pixels() * 4;
                    let chunk = ((1usize << 30) / per_img).clamp(1, batch);
                    let mut xu = st
                        .alloc_zeros::<f32>(s.patch_len() * chunk * s.out_pixels())
                        .map_err(err)?;
                    let mut yt = st
                        .alloc_zeros::<f32>(s.c_out * chunk * s.out_pixels())
                        .map_err(err)?;
                    Box::new(move || self.rung1(&s, &x, &w, &mut y, &mut xu, &mut yt, batch, chunk))
                } else {
                    Box::new(move || self.rung2(&s, &x, &w, &mut y, batch))
                }
            }
            3 => {
                let x = self.bench.upload_f16(&input.x)?;
                let w = self.bench.upload_f16(&input.w)?;
                let mut y = st.alloc_zeros::<f32>(batch * s.out_len()).map_err(err)?;
                Box::new(move || self.rung3(&s, &x, &w, &mut y, batch))
            }
            4 => {
                let x = self.bench.upload_f16(&input.x)?;
                let w = self.bench.upload_f16(&input.w)?;
                let mut y = st.alloc_zeros::<u16>(batch * s.out_len()).map_err(err)?;
                Box::new(move || {
                    self.rung4(st, layer, &x.slice(..), &w, &mut y.slice_mut(..), batch)
                })
            }
            _ => {
                // Rung 5: the batch streamed from pinned host memory over two streams.
                // SAFETY: the pinned buffer is fully written below before any copy reads it.
                let mut pinned = unsafe { self.bench.ctx.alloc_pinned::<u16>(batch * s.in_len()) }
                    .map_err(err)?;
                for (d, v) in pinned.as_mut_slice().map_err(err)?.iter_mut().zip(&input.x) {
                    *d = f16::from_f32(*v).to_bits();
                }
                let second = self.bench.ctx.new_stream().map_err(err)?;
                let mut x = st.alloc_zeros::<u16>(batch * s.in_len()).map_err(err)?;
                let w = self.bench.upload_f16(&input.w)?;
                let mut y = st.alloc_zeros::<u16>(batch * s.out_len()).map_err(err)?;
                Box::new(move || {
                    let host = pinned.as_slice().map_err(err)?;
                    self.streamed_pass(layer, host, &second, &mut x, &w, &mut y, batch, true)
                })
            }
        };
        drop(input);
        for _ in 0..warmups {
            pass()?;
        }
        st.synchronize().map_err(err)?;
        let _range = crate::trace::range(range);
        pass()?;
        st.synchronize().map_err(err)
    }
}

/// Chunks of rung 5.
const STREAM_CHUNKS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's shared-memory sizes for the ladder's layers, worked by hand from the kernel's
    /// layout (weights 16·MT × (KP + 8) halves, KP offsets, the image + 8 halves, the output).
    #[test]
    fn shared_memory_layout_of_the_ladder_layers() {
        let conv1 = LadderLayer::LabConv1.shape();
        // MT 2, KP 16: 1536 + 64 + (784 + 8)·2 = 1584 + FP16 output 32·676·2 = 43264.
        assert_eq!(
            conv_tc_smem_bytes(&conv1, 2),
            Some(1536 + 64 + 1584 + 43264)
        );
        let conv2 = LadderLayer::LabConv2.shape();
        // MT 4, KP 288: 64·296·2 = 37888 + 1152 + (5408 + 8)·2 = 10832 + 64·121·2 = 15488.
        assert_eq!(
            conv_tc_smem_bytes(&conv2, 2),
            Some(37888 + 1152 + 10832 + 15488)
        );
        // conv2's rung 4 stages channels-last: 64·296·2 + 169·40·2 = 13520 + 15488.
        assert!(conv_tc_stages_nhwc(&conv2));
        assert!(!conv_tc_stages_nhwc(&LadderLayer::LenetC3.shape()));
        assert_eq!(conv_tc_nhwc_smem_bytes(&conv2), 37888 + 13520 + 15488);
        // C1's FP32 output tile (rung 3) needs the opt-in above 48 KB but fits an SM.
        let c1 = conv_tc_smem_bytes(&LadderLayer::LenetC1.shape(), 4).unwrap_or(0);
        assert!(c1 > 48 * 1024 && c1 < 227 * 1024, "{c1}");
        assert_eq!(conv_tc_channel_tiles(65), None);
    }

    /// Every rung (and cuDNN, where it loads) on every layer against the f64 reference, at a
    /// batch of 3 (every image compared) and of 700 (more images than persistent blocks, so
    /// blocks loop; 8 images compared, first and last included). Outputs are poisoned first.
    #[test]
    #[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
    fn every_rung_matches_the_f64_reference_on_the_gpu() {
        let lab = match ConvLab::new(0) {
            Ok(l) => l,
            Err(e) => return crate::cuda::gpu_tests::no_gpu(e),
        };
        let data = crate::data::mnist_sample().expect("the embedded sample");
        for (batch, images) in [(3, 3), (700, 8)] {
            let opts = LadderOptions {
                batch,
                reps: 5,
                budget_ms: 1.0,
                layers: LadderLayer::ALL.to_vec(),
                check_images: images,
            };
            let r = lab.run(&opts, &data).unwrap_or_else(|e| panic!("{e}"));
            for c in &r.checks {
                assert!(c.ok, "{c:?}");
                assert_eq!(c.images_checked, images.min(batch), "{c:?}");
            }
            for s in &r.skipped {
                eprintln!("skipped in the ladder: {s}");
            }
            let rungs: &[u8] = if lab.tensor_cores {
                &[1, 2, 3, 4, 5]
            } else {
                &[1, 2]
            };
            for l in LadderLayer::ALL {
                for &rung in rungs {
                    assert!(
                        r.rows
                            .iter()
                            .any(|x| x.layer == l.name() && x.rung == Some(rung) && x.ms_p50 > 0.0),
                        "{} rung {rung} missing",
                        l.name()
                    );
                }
            }
            assert!(r.ceilings.copy_gbps > 100.0, "{:?}", r.ceilings);
        }
    }
}
