//! The lab CNN's inference on the GPU (the CNN variant switch, `showdown bench infer`): FP16
//! activations, the rung-4 tensor-core convolutions of the ladder, the fused
//! bias + activation + max-pool and the dense kernels of the `cnn_infer` family. Five launches a
//! forward pass, also recorded once into a CUDA graph and replayed.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::f16;

use super::bench::time_events;
use super::conv_ladder::ConvLab;
use super::err;
use super::launch::{self, blocks_of, config};
use crate::conv_ladder::LadderLayer;
use crate::error::{ComputeError, Result};
use crate::inference::LatencyRow;
use crate::model::{lab, Activation};

/// The trained parameters on the device: FP16 weights, FP32 biases.
struct Weights {
    w1: CudaSlice<u16>,
    b1: CudaSlice<f32>,
    w2: CudaSlice<u16>,
    b2: CudaSlice<f32>,
    w3: CudaSlice<u16>,
    b3: CudaSlice<f32>,
}

/// The lab CNN forward on one GPU, over images held on the device.
pub struct CnnInference {
    lab: ConvLab,
    stream: Arc<CudaStream>,
    weights: Option<Weights>,
    /// Normalised images, FP16 `[cap, 784]`.
    x: CudaSlice<u16>,
    cap: usize,
    y1: CudaSlice<u16>,
    p1: CudaSlice<u16>,
    y2: CudaSlice<u16>,
    p2: CudaSlice<u16>,
    logits: CudaSlice<f32>,
}

/// Threads of the elementwise and dense launches.
const THREADS: u32 = 256;

fn to_f16_bits(v: &[f32]) -> Vec<u16> {
    v.iter().map(|&a| f16::from_f32(a).to_bits()).collect()
}

impl CnnInference {
    /// Opens GPU `ordinal`, compiles the ladder and `cnn_infer` kernels, and uploads `images`
    /// (normalised, `[n, 784]`) as FP16; buffers for up to `n` images per pass.
    pub fn new(ordinal: usize, images: &[f32]) -> Result<Self> {
        let px = lab::IMAGE * lab::IMAGE;
        let cap = images.len() / px;
        if cap == 0 || !images.len().is_multiple_of(px) {
            return Err(ComputeError::bad_arg(
                "images",
                images.len(),
                format!("need a positive multiple of {px} pixels"),
            ));
        }
        let lab_ = ConvLab::with_families(ordinal, &[kernels::CONV_LADDER, kernels::CNN_INFER])?;
        let stream = lab_.bench.ctx.new_stream().map_err(err)?;
        let (c1, c2) = (lab::CONV1, lab::CONV2);
        let x = stream.clone_htod(&to_f16_bits(images)).map_err(err)?;
        let alloc = |len: usize| stream.alloc_zeros::<u16>(len).map_err(err);
        Ok(CnnInference {
            y1: alloc(cap * c1.out_len())?,
            p1: alloc(cap * c2.in_len())?,
            y2: alloc(cap * c2.out_len())?,
            p2: alloc(cap * lab::FEATURES)?,
            logits: stream.alloc_zeros::<f32>(cap * lab::CLASSES).map_err(err)?,
            x,
            cap,
            weights: None,
            stream,
            lab: lab_,
        })
    }

    /// The GPU in words.
    pub fn device(&self) -> &str {
        &self.lab.device
    }

    /// Images the buffers hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Uploads trained parameters `[w1, b1, w2, b2, w3, b3]` (the trainer's order and shapes).
    pub fn set_params(&mut self, p: &[Vec<f32>]) -> Result<()> {
        let want = crate::explain::param_lens();
        let got: Vec<usize> = p.iter().map(Vec::len).collect();
        if got != want {
            return Err(ComputeError::bad_arg(
                "params",
                format!("{got:?}"),
                format!("the lab CNN's parameters have lengths {want:?}"),
            ));
        }
        let s = &self.stream;
        let h = |v: &[f32]| s.clone_htod(&to_f16_bits(v)).map_err(err);
        let f = |v: &[f32]| s.clone_htod(v).map_err(err);
        self.weights = Some(Weights {
            w1: h(&p[0])?,
            b1: f(&p[1])?,
            w2: h(&p[2])?,
            b2: f(&p[3])?,
            w3: h(&p[4])?,
            b3: f(&p[5])?,
        });
        Ok(())
    }

    /// Queues one forward pass of images `[0, n)` (no synchronisation).
    pub fn forward(&mut self, n: usize, act: Activation) -> Result<()> {
        if n == 0 || n > self.cap {
            return Err(ComputeError::bad_arg(
                "--batches",
                n,
                format!("between 1 and the {} images on the device", self.cap),
            ));
        }
        let Self {
            lab: l,
            stream,
            weights,
            x,
            y1,
            p1,
            y2,
            p2,
            logits,
            ..
        } = self;
        let w = weights
            .as_ref()
            .ok_or_else(|| err("no parameters uploaded (set_params first)"))?;
        let (c1, c2) = (lab::CONV1, lab::CONV2);
        let px = lab::IMAGE * lab::IMAGE;
        let pool = l.func(&format!("bias_{}_pool_f16", act.name()))?;
        l.rung4(
            stream,
            LadderLayer::LabConv1,
            &x.slice(..n * px),
            &w.w1,
            &mut y1.slice_mut(..n * c1.out_len()),
            n,
        )?;
        let sms = l.sms;
        let launch_pool = |y: &CudaSlice<u16>,
                           b: &CudaSlice<f32>,
                           out: &mut CudaSlice<u16>,
                           c: usize,
                           ho: usize,
                           wo: usize|
         -> Result<()> {
            let total = n * c * (ho / 2) * (wo / 2);
            // Clamped to sms · 16: lossless.
            let blocks = total.div_ceil(THREADS as usize).clamp(1, sms as usize * 16) as u32;
            // SAFETY: y holds n·c planes of Ho·Wo halves, bias c floats, out n·c planes of
            // (Ho/2)·(Wo/2) halves (the buffers hold `cap` ≥ n images of the layer).
            unsafe {
                launch::bias_act_pool(
                    stream,
                    pool,
                    blocks_of(blocks, THREADS),
                    y,
                    b,
                    out,
                    n * c,
                    c,
                    ho,
                    wo,
                )
            }
        };
        launch_pool(y1, &w.b1, p1, c1.c_out, c1.h_out(), c1.w_out())?;
        l.rung4(
            stream,
            LadderLayer::LabConv2,
            &p1.slice(..n * c2.in_len()),
            &w.w2,
            &mut y2.slice_mut(..n * c2.out_len()),
            n,
        )?;
        launch_pool(y2, &w.b2, p2, c2.c_out, c2.h_out(), c2.w_out())?;
        let dense = l.func("dense_logits_f16")?;
        let warps = (THREADS / 32) as usize;
        let blocks = n.div_ceil(warps).clamp(1, sms as usize * 4);
        let cfg = config(
            dense,
            (blocks, 1),
            THREADS,
            lab::FEATURES * lab::CLASSES * 2,
        )?;
        // SAFETY: p2 holds n·F halves, w3 O·F, b3 O floats, logits n·O (n ≤ cap); F = 1600 (a
        // multiple of 8), O = 10 (≤ 16); the dynamic shared memory is the O·F FP16 weights.
        unsafe {
            launch::dense_logits_f16(
                stream,
                dense,
                cfg,
                &*p2,
                &w.w3,
                &w.b3,
                &mut *logits,
                n,
                lab::FEATURES,
                lab::CLASSES,
            )
        }
    }

    /// One forward pass of images `[0, n)`, its logits `[n, 10]` read back (NaN-poisoned first,
    /// so an unwritten logit cannot pass a check).
    pub fn logits(&mut self, n: usize, act: Activation) -> Result<Vec<f32>> {
        let nan = vec![f32::NAN; self.cap * lab::CLASSES];
        self.stream
            .memcpy_htod(&nan, &mut self.logits)
            .map_err(err)?;
        self.forward(n, act)?;
        let mut out = self.stream.clone_dtoh(&self.logits).map_err(err)?;
        out.truncate(n * lab::CLASSES);
        Ok(out)
    }

    /// Times forward passes of `n` images: as five launches, or (`graph`) replaying them recorded
    /// once as a CUDA graph. Warm-up, then as many passes as fit `budget_ms` (at least 20, at
    /// most `max_reps`); CUDA events around each pass.
    pub fn latency(
        &mut self,
        n: usize,
        act: Activation,
        graph: bool,
        budget_ms: f64,
        max_reps: usize,
    ) -> Result<LatencyRow> {
        let ctx = self.lab.bench.ctx.clone();
        let stream = self.stream.clone();
        let name = if graph {
            "showdown_fp16_graph"
        } else {
            "showdown_fp16_launches"
        };
        let times = if graph {
            self.forward(n, act)?; // compiles nothing new; sets the kernels' shared-memory limits
            stream.synchronize().map_err(err)?;
            stream
                .begin_capture(
                    cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
                .map_err(|e| err(format!("starting a graph capture: {e}")))?;
            let queued = self.forward(n, act);
            let g = stream
                .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
                .map_err(|e| err(format!("ending a graph capture: {e}")))?;
            queued?;
            let g = g.ok_or_else(|| err("the graph capture recorded nothing"))?;
            let probe = time_events(&ctx, &stream, 3, 3, |_| g.launch().map_err(err))?;
            let reps = reps_for(&probe, budget_ms, max_reps);
            time_events(&ctx, &stream, 2, reps, |_| g.launch().map_err(err))?
        } else {
            let probe = time_events(&ctx, &stream, 3, 3, |_| self.forward(n, act))?;
            let reps = reps_for(&probe, budget_ms, max_reps);
            time_events(&ctx, &stream, 2, reps, |_| self.forward(n, act))?
        };
        Ok(LatencyRow::from_times(name, act, n, times))
    }
}

/// Passes that fit `budget_ms` given a probe's times: at least 20, at most `max_reps`.
fn reps_for(probe: &[f64], budget_ms: f64, max_reps: usize) -> usize {
    let one = probe
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    ((budget_ms / one) as usize).clamp(20, max_reps.max(20))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::compare_logits;
    use crate::train::{init_params, TrainOptions, Trainer, MEAN, STD};
    use std::sync::atomic::AtomicBool;

    /// Every variant, trained briefly on the CPU: the GPU's FP16 logits agree with the CPU's
    /// FP32 logits of the same weights on 1,000 test images (and on a batch of one), and both
    /// paths reach the same accuracy.
    #[test]
    #[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
    fn gpu_inference_matches_the_cpu_for_every_activation() {
        if let Err(e) = crate::doctor::probe_gpu().usable() {
            return crate::cuda::gpu_tests::no_gpu(e);
        }
        let cpu = crate::backend::cpu::CpuBackend::new(None).unwrap();
        let d = crate::data::mnist_sample().unwrap();
        let (mut train, mut test) = (d.train.clone(), d.test.clone());
        train.truncate(2000, 784);
        test.truncate(1000, 784);
        let images: Vec<f32> = test
            .images
            .iter()
            .map(|&p| (p as f32 / 255.0 - MEAN) / STD)
            .collect();
        let mut gpu = CnnInference::new(0, &images).unwrap();
        for activation in Activation::ALL {
            let opts = TrainOptions {
                precision: crate::types::Precision::Fp32,
                epochs: 1,
                batch: 64,
                adam: crate::backend::AdamParams::default(),
                seed: 4,
                dropout: 0.5,
                activation,
            };
            let mut t = Trainer::new(&cpu, opts, &train, &test, &init_params(4)).unwrap();
            t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
            let want = t.test_logits().unwrap();
            gpu.set_params(&t.params().unwrap()).unwrap();
            let got = gpu.logits(1000, activation).unwrap();
            let c = compare_logits(&got, &want, &test.labels);
            println!("{activation}: {c:?}");
            assert!(c.ok, "{activation}: {c:?}");
            assert!(c.cpu_accuracy > 0.75, "{activation}: {c:?}");
            let one = gpu.logits(1, activation).unwrap();
            let c1 = compare_logits(&one, &want[..10], &test.labels[..1]);
            assert!(c1.ok, "{activation} batch 1: {c1:?}");
            let row = gpu.latency(32, activation, true, 5.0, 20).unwrap();
            assert!(row.p50_ms > 0.0 && row.reps == 20, "{row:?}");
        }
    }
}
