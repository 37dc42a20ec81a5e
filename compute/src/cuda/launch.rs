//! Kernel launches: every entry point's signature stated once, next to its SAFETY contract,
//! as a typed wrapper over cudarc's launch builder (`stream.launch_builder(f)`, `.arg(..)`,
//! `launch(cfg)`), and the launch plans (grid shapes, shared memory) of the training kernels.
//!
//! A wrapper takes Rust values and converts them as the kernel's C signature wants: a device
//! pointer from any buffer of the right element type ([`DevIn`] for `const T*`, [`DevOut`] for
//! `T*`), `int` from `usize` through `i32::try_from` and `long long` through `i64::try_from`
//! (an error naming the kernel, the parameter and the value, never a silent wrap), scalars and
//! structs by value. A backend buffer ([`super::buffers::CudaBuf`]) is checked against the
//! element type as well: `Dyn` must be the dtype of the entry point's suffix (`_f16`, `_tf32`…).

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchArgs,
    LaunchConfig, PushKernelArg,
};

use super::device::Kernels;
use super::err;
use crate::error::Result;
use crate::model::ConvShape;

/// A loaded entry point: its name (for errors and its dtype suffix) and its function.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernel<'a> {
    /// The `extern "C"` name, e.g. `dense_fwd_f16`.
    pub(crate) name: &'a str,
    /// The function in its module.
    pub(crate) func: &'a CudaFunction,
}

impl<'a> Kernel<'a> {
    /// The entry point `name` of `funcs`.
    pub(crate) fn find(funcs: &'a Kernels, name: &str) -> Result<Self> {
        funcs
            .get_key_value(name)
            .map(|(name, func)| Kernel { name, func })
            .ok_or_else(|| err(format!("kernel {name} is not loaded")))
    }

    /// The dtype suffix of the entry point (`f32`, `f16`, `bf16`, `tf32`), if it has one.
    pub(crate) fn dtype(&self) -> Option<&'a str> {
        dtype_of(self.name)
    }

    /// `wanted` threads per block, lowered to what the compiled kernel can launch
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, which its register use limits), in whole warps.
    pub(crate) fn block_size(&self, wanted: u32) -> Result<u32> {
        use cudarc::driver::sys::CUfunction_attribute_enum as A;
        // SAFETY: `func` is a function of a module loaded in a live context.
        let max = unsafe {
            cudarc::driver::result::function::get_function_attribute(
                self.func.cu_function(),
                A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )
        }
        .map_err(err)?;
        Ok(wanted.min(u32::try_from(max.max(32)).unwrap_or(32)) / 32 * 32)
    }

    /// Errors unless the kernel can run `threads` threads per block.
    pub(crate) fn require_block(&self, threads: u32) -> Result<()> {
        if self.block_size(threads)? != threads {
            return Err(err(format!(
                "{} cannot run {threads} threads per block",
                self.name
            )));
        }
        Ok(())
    }
}

/// The training kernels' code for an activation (`ACT_RELU`, `ACT_GELU`, `ACT_SWISH` in
/// `activation_ops.cuh`).
pub(crate) fn act_code(act: crate::model::Activation) -> usize {
    use crate::model::Activation;
    match act {
        Activation::Relu => 0,
        Activation::Gelu => 1,
        Activation::Swish => 2,
    }
}

/// The dtype suffix of entry point `name` (`f32`, `f16`, `bf16`, `tf32`), if it has one.
fn dtype_of(name: &str) -> Option<&str> {
    name.rsplit_once('_')
        .map(|(_, d)| d)
        .filter(|d| ["f32", "f16", "bf16", "tf32"].contains(d))
}

/// Element type of a pointer parameter whose C type is the entry point's dtype (`T` in
/// `dense_fwd_{dtype}(const T* x, …)`): FP32 for `_f32` and `_tf32`, half bits for `_f16`,
/// bfloat16 bits for `_bf16`.
pub(crate) enum Dyn {}

/// Element type of a `Cursor*` parameter (`train.cu`: step, counter low, counter high).
pub(crate) enum Cursor {}

/// Element type of a `Scaler*` parameter (`train.cu`: the loss scaler's six words).
pub(crate) enum Scaler {}

/// Element type of FP8's state parameter (`fp8.cu`: `u64* st`, [`super::fp8`]'s words).
pub(crate) enum Fp8Words {}

/// A buffer a kernel reads through a `const E*` parameter.
pub(crate) trait DevIn<E> {
    /// Pushes the device pointer for parameter `param` of `kernel`; an error if the buffer
    /// cannot be one (a backend buffer of another dtype).
    fn push_in<'a>(
        &'a self,
        args: &mut LaunchArgs<'a>,
        kernel: Kernel<'_>,
        param: &str,
    ) -> Result<()>;
}

/// A buffer a kernel writes through an `E*` parameter.
pub(crate) trait DevOut<E> {
    /// Pushes the device pointer for parameter `param` of `kernel`; an error if the buffer
    /// cannot be one (a backend buffer of another dtype).
    fn push_out<'a>(
        &'a mut self,
        args: &mut LaunchArgs<'a>,
        kernel: Kernel<'_>,
        param: &str,
    ) -> Result<()>;
}

impl<T> DevIn<T> for CudaSlice<T> {
    fn push_in<'a>(&'a self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

impl<T> DevIn<T> for CudaView<'_, T> {
    fn push_in<'a>(&'a self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

impl<T> DevOut<T> for CudaSlice<T> {
    fn push_out<'a>(&'a mut self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

impl<T> DevOut<T> for CudaViewMut<'_, T> {
    fn push_out<'a>(&'a mut self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

/// Raw bytes holding values of the entry point's dtype (the kernel lab's buffers).
impl DevIn<Dyn> for CudaSlice<u8> {
    fn push_in<'a>(&'a self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

/// Raw bytes holding values of the entry point's dtype (the kernel lab's buffers).
impl DevOut<Dyn> for CudaSlice<u8> {
    fn push_out<'a>(&'a mut self, args: &mut LaunchArgs<'a>, _: Kernel<'_>, _: &str) -> Result<()> {
        args.arg(self);
        Ok(())
    }
}

/// The null pointer passed for an absent optional buffer.
const NULL_PTR: u64 = 0;

/// `v` as the `int` parameter `param` of entry point `kernel`.
pub(crate) fn int(kernel: &str, param: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        err(format!(
            "{kernel}: {param} = {v} does not fit a 32-bit kernel argument"
        ))
    })
}

/// `v` as the `long long` parameter `param` of entry point `kernel`.
pub(crate) fn long(kernel: &str, param: &str, v: usize) -> Result<i64> {
    i64::try_from(v).map_err(|_| {
        err(format!(
            "{kernel}: {param} = {v} does not fit a 64-bit kernel argument"
        ))
    })
}

/// `v` as a launch dimension or shared-memory size (`what`) of entry point `kernel`.
fn dim(kernel: &str, what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| {
        err(format!(
            "{kernel}: {what} = {v} does not fit a launch dimension"
        ))
    })
}

/// A launch of `grid = (x, y)` blocks of `threads` threads with `smem` bytes of dynamic shared
/// memory, each checked to fit the driver's 32-bit fields.
pub(crate) fn config(
    kernel: Kernel<'_>,
    grid: (usize, usize),
    threads: u32,
    smem: usize,
) -> Result<LaunchConfig> {
    let k = kernel.name;
    Ok(LaunchConfig {
        grid_dim: (dim(k, "grid.x", grid.0)?, dim(k, "grid.y", grid.1)?, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: dim(k, "shared memory", smem)?,
    })
}

/// Blocks of 16 × 16 threads over a `grid = (x, y)` of tiles (each checked), no shared memory.
pub(crate) fn tiles16(kernel: Kernel<'_>, grid: (usize, usize)) -> Result<LaunchConfig> {
    Ok(LaunchConfig {
        block_dim: (16, 16, 1),
        ..config(kernel, grid, 256, 0)?
    })
}

/// One block of `threads` threads.
pub(crate) fn one_block(threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `blocks` blocks of `threads` threads, no shared memory.
pub(crate) fn blocks_of(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Grid-stride launch shape for `work` items: blocks of [`THREADS`], enough of them to cover
/// the work, at least one and at most `max_blocks`.
pub(crate) fn grid_stride(work: usize, max_blocks: usize) -> LaunchConfig {
    let blocks = work
        .div_ceil(THREADS as usize)
        .clamp(1, max_blocks.clamp(1, u32::MAX as usize));
    // Lossless: clamped to u32::MAX above.
    blocks_of(blocks as u32, THREADS)
}

/// Declares each kernel's typed launch wrapper: `fn name(param: Kind, …);` with the kinds
/// `In<E>` (`const E*`), `Out<E>` (`E*`), `OutOrNull<E>` (`E*`, null when `None`), `Int`
/// (`int`, from a checked `usize`), `Long` (`long long`, from a checked `usize`) and `Val<T>`
/// (`T` by value). The wrapper is `unsafe`: its `# Safety` section is the kernel's contract.
macro_rules! kernels {
    ($(
        $(#[$attr:meta])*
        fn $name:ident($($p:ident: $kind:ident $(<$e:ty>)?),* $(,)?);
    )*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $name(
            stream: &CudaStream,
            kernel: Kernel<'_>,
            cfg: LaunchConfig,
            $($p: kernels!(@param $kind $(<$e>)?)),*
        ) -> Result<()> {
            $(let $p = kernels!(@convert kernel, $p, $kind);)*
            let mut args = stream.launch_builder(kernel.func);
            $(kernels!(@push args, kernel, $p, $kind $(<$e>)?);)*
            // The step anatomy times the launch with CUDA events recorded just before and after
            // it on this stream (never inside a graph capture); one thread-local check when off.
            let anatomy = crate::probe::launch_phase(stream);
            if anatomy.is_some() {
                args.record_kernel_launch(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            }
            // SAFETY: the caller upholds this wrapper's contract (its `# Safety` section); the
            // arguments were pushed in the order and with the types of the kernel's signature.
            let events = unsafe { args.launch(cfg) }
                .map_err(|e| err(format!("{}: {e}", kernel.name)))?;
            if let Some(phase) = anatomy {
                crate::probe::log_launch(kernel.name, phase, events);
            }
            Ok(())
        }
    )*};
    (@param In<$e:ty>) => { &impl DevIn<$e> };
    (@param Out<$e:ty>) => { &mut impl DevOut<$e> };
    (@param OutOrNull<$e:ty>) => { Option<&mut impl DevOut<$e>> };
    (@param Int) => { usize };
    (@param Long) => { usize };
    (@param Val<$t:ty>) => { $t };
    (@convert $k:ident, $p:ident, Int) => { int($k.name, stringify!($p), $p)? };
    (@convert $k:ident, $p:ident, Long) => { long($k.name, stringify!($p), $p)? };
    (@convert $k:ident, $p:ident, $other:ident) => { $p };
    (@push $a:ident, $k:ident, $p:ident, In<$e:ty>) => {
        <_ as DevIn<$e>>::push_in($p, &mut $a, $k, stringify!($p))?
    };
    (@push $a:ident, $k:ident, $p:ident, Out<$e:ty>) => {
        <_ as DevOut<$e>>::push_out($p, &mut $a, $k, stringify!($p))?
    };
    (@push $a:ident, $k:ident, $p:ident, OutOrNull<$e:ty>) => {
        match $p {
            Some(b) => <_ as DevOut<$e>>::push_out(b, &mut $a, $k, stringify!($p))?,
            None => {
                $a.arg(&NULL_PTR);
            }
        }
    };
    (@push $a:ident, $k:ident, $p:ident, $other:ident $(<$e:ty>)?) => {
        $a.arg(&$p);
    };
}

// The training step (`train.cu`, `conv_mma.cu`): entry points `{op}_{f32,f16,bf16}`, and
// `{op}_{f16,bf16,tf32}` for the tensor-core convolutions.
kernels! {
    /// `gather_{dtype}`: the batch at `order[cursor.step · stride..][..n]`, normalised
    /// (`v · scale − shift`) into `x`, its labels into `labels_out`.
    ///
    /// # Safety
    /// `images` holds `pixels` bytes per image and `labels` one per image, every index in
    /// `order` is below the image count; `order` holds `order_len` indices (the kernel reads
    /// below that only); `x` holds `n · pixels` and `labels_out` `n` elements.
    fn gather(
        images: In<u8>,
        labels: In<u8>,
        order: In<u32>,
        order_len: Int,
        cursor: In<Cursor>,
        stride: Int,
        n: Int,
        pixels: Int,
        scale: Val<f32>,
        shift: Val<f32>,
        x: Out<Dyn>,
        labels_out: Out<u8>,
    );

    /// `conv_block_fwd_{dtype}`: convolution + bias + activation + 2×2 max-pool on CUDA cores,
    /// its pooling mask into `mask`; grid.x = images, grid.y = output-channel groups of `cpb`;
    /// `act` is [`act_code`] of the activation.
    ///
    /// # Safety
    /// `x` holds `n · c_in · h · wd`, `w` `c_out · c_in · k · k`, `bias` `c_out`, `out` and
    /// `mask` `n · c_out · (h − k + 1)/2 · (wd − k + 1)/2` elements; `k` is 3, 5 or 7; the
    /// dynamic shared memory is [`ConvFwdPlan::smem_bytes`] for the same shape and `cpb`, within
    /// the limit the function was opted into.
    fn conv_block_fwd(
        x: In<Dyn>,
        w: In<Dyn>,
        bias: In<f32>,
        out: Out<Dyn>,
        mask: Out<u8>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
        k: Int,
        cpb: Int,
        act: Int,
    );

    /// `act_route_{dtype}`: GELU/Swish backward at the pool maxima, `dact = dout · act'(z)`
    /// with the pre-activation `z` recomputed from `x`, `w` and `bias` at the window element
    /// `mask` names (grid-stride over the pooled outputs).
    ///
    /// # Safety
    /// `x` holds `n · c_in · h · wd`, `w` `c_out · c_in · k · k`, `bias` `c_out`, `dout`,
    /// `mask` and `dact` `n · c_out · (h − k + 1)/2 · (wd − k + 1)/2` elements; every mask
    /// entry below 4 names an element of its window.
    fn act_route(
        x: In<Dyn>,
        w: In<Dyn>,
        bias: In<f32>,
        dout: In<Dyn>,
        mask: In<u8>,
        dact: Out<Dyn>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
        k: Int,
        act: Int,
    );

    /// `conv_block_bwd_data_{dtype}`: the input gradient, one block per (image, group of 8
    /// input channels).
    ///
    /// # Safety
    /// `dout` and `mask` hold the pooled outputs of `n` images, `w` the weights, `dx`
    /// `n · c_in · h · wd` elements; `k` is 3, 5 or 7; the dynamic shared memory holds one
    /// image's routed gradient (rounded to 4 floats) and 8 channels' weights, within the
    /// opted-in limit.
    fn conv_block_bwd_data(
        dout: In<Dyn>,
        mask: In<u8>,
        w: In<Dyn>,
        dx: Out<Dyn>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
        k: Int,
    );

    /// `conv_block_bwd_filter_{dtype}`: weight and bias gradients, one block per
    /// (output, input) channel pair.
    ///
    /// # Safety
    /// `x` holds the `n` input images, `dout` and `mask` their pooled outputs, `dw`
    /// `c_out · c_in · k · k` and `db` `c_out` elements; `k` is 3, 5 or 7.
    fn conv_block_bwd_filter(
        x: In<Dyn>,
        dout: In<Dyn>,
        mask: In<u8>,
        dw: Out<Dyn>,
        db: Out<Dyn>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
        k: Int,
    );

    /// `conv_mma_fwd_{f16,bf16,tf32}` (tensor cores) or `conv_igemm_fwd_f32` (strict FP32 on the
    /// CUDA cores): the forward convolution block as a register-blocked implicit GEMM, one block
    /// of [`super::conv_mma::MMA_THREADS`] per image; `act` is [`act_code`] of the activation.
    ///
    /// # Safety
    /// Buffers sized as for [`conv_block_fwd`] with `k` = 3; the channel and tile limits hold
    /// and the dynamic shared memory is `conv_mma::fwd_smem` of the shape (within the opted-in
    /// limit); the kernel runs `MMA_THREADS` threads per block.
    fn conv_igemm_fwd(
        x: In<Dyn>,
        w: In<Dyn>,
        bias: In<f32>,
        out: Out<Dyn>,
        mask: Out<u8>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
        act: Int,
    );

    /// `conv_mma_bwd_data_{f16,bf16,tf32}` or `conv_igemm_bwd_data_f32`: the input gradient,
    /// one block per image.
    ///
    /// # Safety
    /// Buffers sized as for [`conv_block_bwd_data`] with `k` = 3; the shape's limits hold and
    /// the dynamic shared memory is `conv_mma::bwd_data_smem` of it (within the opted-in
    /// limit); `MMA_THREADS` threads per block.
    fn conv_igemm_bwd_data(
        dout: In<Dyn>,
        mask: In<u8>,
        w: In<Dyn>,
        dx: Out<Dyn>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
    );

    /// `conv_mma_bwd_filter[_clustered]_{f16,bf16,tf32}` or
    /// `conv_igemm_bwd_filter[_clustered]_f32`: per-block (or per-cluster) FP32 partial weight
    /// and bias gradients (reduced by [`conv_wgrad_reduce`]).
    ///
    /// # Safety
    /// `x` holds the `n` input images, `dout` and `mask` their pooled outputs; `part` holds
    /// `grid.x · (c_out · c_in · 9 + c_out)` floats (`conv_mma::wgrad_part_len`); the dynamic
    /// shared memory is `conv_mma::bwd_filter_smem` of the shape (within the opted-in limit);
    /// `MMA_THREADS` threads per block.
    fn conv_igemm_bwd_filter(
        x: In<Dyn>,
        dout: In<Dyn>,
        mask: In<u8>,
        part: Out<f32>,
        n: Int,
        c_in: Int,
        c_out: Int,
        h: Int,
        wd: Int,
    );

    /// `conv_wgrad_c1_{dtype}`: a single-input-channel convolution's (conv1's) FP32 partial
    /// weight and bias gradients on the CUDA cores, one block of 512 threads per image
    /// (reduced by [`conv_wgrad_reduce`] with `groups` = `n`).
    ///
    /// # Safety
    /// `x` holds `n · h · wd` elements, `dout` and `mask`
    /// `n · c_out · ((h − 2)/2) · ((wd − 2)/2)`; `part` holds `n · (c_out · 9 + c_out)` floats;
    /// `k` = 3; 512 threads per block; the dynamic shared memory is `conv_mma::c1_smem` of the
    /// shape and the gradient's element size.
    fn conv_wgrad_c1(
        x: In<Dyn>,
        dout: In<Dyn>,
        mask: In<u8>,
        part: Out<f32>,
        n: Int,
        c_out: Int,
        h: Int,
        wd: Int,
    );

    /// `conv_mma_wgrad_reduce_{f16,bf16,tf32}` or `conv_igemm_wgrad_reduce_f32`: sums the
    /// `groups` partials into `dw`, `db`.
    ///
    /// # Safety
    /// `part` holds `groups · (len + c_out)` floats, `dw` `len` and `db` `c_out` elements; the
    /// grid-stride loop runs whole warps (four threads per output; the shuffles need every lane).
    fn conv_wgrad_reduce(
        part: In<f32>,
        groups: Int,
        len: Int,
        c_out: Int,
        dw: Out<Dyn>,
        db: Out<Dyn>,
    );

    /// `dropout_fwd_{dtype}`: inverted dropout with a Philox mask drawn from `seed` and the
    /// device cursor's counter.
    ///
    /// # Safety
    /// `x`, `out` and `mask` hold `len` elements; `cursor` holds the cursor's 3 words.
    fn dropout_fwd(
        x: In<Dyn>,
        out: Out<Dyn>,
        mask: Out<u8>,
        len: Long,
        p: Val<f32>,
        seed: Val<u64>,
        cursor: In<Cursor>,
    );

    /// `dropout_bwd_{dtype}`: the gradient through the saved mask.
    ///
    /// # Safety
    /// `dout`, `mask` and `dx` hold `len` elements.
    fn dropout_bwd(dout: In<Dyn>, mask: In<u8>, dx: Out<Dyn>, len: Long, p: Val<f32>);

    /// `dense_fwd_{dtype}`: `y = x · wᵀ + bias`, one warp per output.
    ///
    /// # Safety
    /// `x` holds `n · fin`, `w` `fin · fout`, `bias` `fout` and `y` `n · fout` elements.
    fn dense_fwd(x: In<Dyn>, w: In<Dyn>, bias: In<f32>, y: Out<Dyn>, n: Int, fin: Int, fout: Int);

    /// `dense_bwd_w_{dtype}`: weight and bias gradients.
    ///
    /// # Safety
    /// `x` holds `n · fin`, `dy` `n · fout`, `dw` `fin · fout` and `db` `fout` elements;
    /// `fout` ≤ [`DENSE_BWD_MAX_OUT`]; 256 threads per block, one block per
    /// [`DENSE_BWD_FEATURES_PER_BLOCK`] input features.
    fn dense_bwd_w(
        x: In<Dyn>,
        dy: In<Dyn>,
        dw: Out<Dyn>,
        db: Out<Dyn>,
        n: Int,
        fin: Int,
        fout: Int,
    );

    /// `dense_bwd_x_{dtype}`: the input gradient.
    ///
    /// # Safety
    /// `dy` holds `n · fout`, `w` `fin · fout` and `dx` `n · fin` elements.
    fn dense_bwd_x(dy: In<Dyn>, w: In<Dyn>, dx: Out<Dyn>, n: Int, fin: Int, fout: Int);

    /// `softmax_xent_{dtype}`: softmax cross-entropy of the logits, the scaled gradient into
    /// `dlogits` (none when null), loss, correct and count added to `sums`; one block.
    ///
    /// # Safety
    /// `logits` (and `dlogits`) hold `n · classes` elements, `labels` `n`; `scaler` is a
    /// scaler buffer, `sums` holds 4 doubles.
    fn softmax_xent(
        logits: In<Dyn>,
        labels: In<u8>,
        dlogits: OutOrNull<Dyn>,
        n: Int,
        classes: Int,
        scaler: In<Scaler>,
        sums: Out<f64>,
    );

    /// `head_train_{dtype}`: the classifier head of a training step in one launch (dropout
    /// when `drop` is given, dense forward, softmax cross-entropy and its scaled gradient, the
    /// features' gradient through the mask); the last block adds the rows' loss to `sums`.
    ///
    /// # Safety
    /// `x`, `drop`, `drop_mask` (when given) and `dx` hold `n · fin` elements, `w` `fin · fout`,
    /// `bias` `fout`, `labels` `n`, `logits` and `dlogits` `n · fout`; `rowstat` holds `2n`
    /// floats, `ticket` one word that is 0 before the launch (the kernel leaves it 0); `cursor`
    /// and `scaler` are a cursor and a scaler buffer, `sums` holds 4 doubles; the grid is `n`
    /// blocks of [`HEAD_THREADS`] threads; `fout` ≤ [`DENSE_BWD_MAX_OUT`].
    fn head_train(
        x: In<Dyn>,
        w: In<Dyn>,
        bias: In<f32>,
        drop: OutOrNull<Dyn>,
        drop_mask: OutOrNull<u8>,
        p: Val<f32>,
        seed: Val<u64>,
        cursor: In<Cursor>,
        labels: In<u8>,
        logits: Out<Dyn>,
        dlogits: Out<Dyn>,
        dx: Out<Dyn>,
        rowstat: Out<f32>,
        ticket: Out<u32>,
        n: Int,
        fin: Int,
        fout: Int,
        scaler: In<Scaler>,
        sums: Out<f64>,
    );

    /// `check_finite_multi_{dtype}`: sets the scaler's `found_inf` if any gradient of the
    /// table holds an inf or NaN.
    ///
    /// # Safety
    /// Every `table.g[i]` below `table.count` points to a live buffer of the dtype holding the
    /// element counts whose running sums are `table.end`.
    fn check_finite_multi(table: Val<TensorTable>, scaler: Out<Scaler>);

    /// `adam_multi_{dtype}`: one Adam step of every tensor of the table (skipped when the
    /// scaler found an inf), refreshing the low-precision copies.
    ///
    /// # Safety
    /// For every tensor below `table.count`: `p`, `m`, `v` point to FP32 buffers and `g` and
    /// `copy` (or null) to buffers of the dtype, each holding the element count that
    /// `table.end` sums; the buffers stay alive for any graph that records the launch.
    fn adam_multi(
        table: Val<TensorTable>,
        lr: Val<f32>,
        beta1: Val<f32>,
        beta2: Val<f32>,
        eps: Val<f32>,
        scaler: In<Scaler>,
    );

    /// `adam_{dtype}`: one Adam step of one tensor (skipped when the scaler found an inf).
    ///
    /// # Safety
    /// `param`, `grad`, `m`, `v` and `copy` (when given) hold `len` elements.
    fn adam(
        param: Out<f32>,
        grad: In<Dyn>,
        m: Out<f32>,
        v: Out<f32>,
        copy: OutOrNull<Dyn>,
        len: Long,
        lr: Val<f32>,
        beta1: Val<f32>,
        beta2: Val<f32>,
        eps: Val<f32>,
        scaler: In<Scaler>,
    );

    /// `cast_from_f32_{dtype}`: `dst = src` rounded to the dtype.
    ///
    /// # Safety
    /// `src` and `dst` hold `len` elements.
    fn cast_from_f32(src: In<f32>, dst: Out<Dyn>, len: Long);

    /// `cursor_advance`: the step cursor moves to the next step and counter.
    ///
    /// # Safety
    /// `cursor` holds the cursor's 3 words; one thread.
    fn cursor_advance(cursor: Out<Cursor>);

    /// `scaler_update`: the loss scaler's end of step (skip, back off or grow).
    ///
    /// # Safety
    /// `scaler` is a scaler buffer (6 words); one thread.
    fn scaler_update(scaler: Out<Scaler>, growth_interval: Val<u32>);

    /// `step_finish`: `scaler_update` then `cursor_advance`, the step's last launch.
    ///
    /// # Safety
    /// `scaler` is a scaler buffer (6 words), `cursor` a cursor (3 words); one thread.
    fn step_finish(scaler: Out<Scaler>, growth_interval: Val<u32>, cursor: Out<Cursor>);

    /// `fp8_cast_f16`: `x[0, n)` cast onto tensor `t`'s FP8 grid in place, its amax and counts
    /// recorded with `record` (1).
    ///
    /// # Safety
    /// `x` holds `n` halves; `st` is an FP8 state buffer; `t` < 6; whole warps per block.
    fn fp8_cast_f16(x: Out<Dyn>, n: Long, t: Int, st: Out<Fp8Words>, record: Int);

    /// `fp8_cast_grad_f16`: `fp8_cast_f16` of a gradient stored times the loss scale of
    /// `scaler`, which the cast divides out of the amax and scale it records.
    ///
    /// # Safety
    /// As `fp8_cast_f16`; `scaler` is a scaler buffer (6 words).
    fn fp8_cast_grad_f16(
        x: Out<Dyn>,
        n: Long,
        t: Int,
        st: Out<Fp8Words>,
        record: Int,
        scaler: In<Scaler>,
    );

    /// `fp8_amax_reset`: zeroes tensor `t`'s measured amax (current scaling).
    ///
    /// # Safety
    /// `st` is an FP8 state buffer; `t` < 6.
    fn fp8_amax_reset(t: Int, st: Out<Fp8Words>);

    /// `fp8_amax_f16`: the amax of `x[0, n)` into tensor `t`'s measured amax.
    ///
    /// # Safety
    /// `x` holds `n` halves; `st` is an FP8 state buffer; `t` < 6; whole warps per block.
    fn fp8_amax_f16(x: In<Dyn>, n: Long, t: Int, st: Out<Fp8Words>);

    /// `fp8_end_step`: histories, next scales and counts at the end of a step.
    ///
    /// # Safety
    /// `st` is an FP8 state buffer; one block of at least 6 threads.
    fn fp8_end_step(st: Out<Fp8Words>);

    /// `fp8_weights_end_step_f16`: the two weight copies cast (tensors 1 and 3, recorded), then
    /// the end of the step, in one block.
    ///
    /// # Safety
    /// `w1`/`w2` hold `n1`/`n2` halves from 16-byte aligned starts; `st` is an FP8 state
    /// buffer; one block of whole warps, at least six.
    fn fp8_weights_end_step_f16(w1: Out<Dyn>, n1: Long, w2: Out<Dyn>, n2: Long, st: Out<Fp8Words>);
}

// The convolution ladder (`conv_ladder.cu`).
kernels! {
    /// `conv_unroll_f32`: images `[b0, b0 + nb)` unrolled into patch columns.
    ///
    /// # Safety
    /// `x` holds images up to `b0 + nb` of `c · h · wd` floats; `xu` holds
    /// `c · k · k × nb · (h − k + 1)(wd − k + 1)` floats.
    fn conv_unroll_f32(x: In<f32>, xu: Out<f32>, b0: Int, nb: Int, c: Int, h: Int, wd: Int, k: Int);

    /// `gemm_tiled_f32`: `cm = a · b` in 16 × 16 shared-memory tiles, one block per tile.
    ///
    /// # Safety
    /// `a` holds `m × kd`, `b` `kd × n` and `cm` `m × n` floats; 16 × 16 threads per block, the
    /// grid covers `n` in x and `m` in y.
    fn gemm_tiled_f32(a: In<f32>, b: In<f32>, cm: Out<f32>, m: Int, n: Long, kd: Int);

    /// `conv_permute_f32`: the GEMM's `m × nb · howo` result into NCHW images `[b0, b0 + nb)`.
    ///
    /// # Safety
    /// `yt` holds `m · nb · howo` floats, `y` images up to `b0 + nb` of `m · howo` floats.
    fn conv_permute_f32(yt: In<f32>, y: Out<f32>, b0: Int, nb: Int, m: Int, howo: Int);

    /// `conv_fused_f32`: the fused SIMT convolution (no bias, no activation).
    ///
    /// # Safety
    /// `x` holds `batch · c · h · wd`, `w` `m · c · k · k` and `y` `batch · m · (h − k + 1)(wd − k + 1)`
    /// floats; 16 × 16 threads per block, the grid covers the output columns in x and `m` in y.
    fn conv_fused_f32(
        x: In<f32>,
        w: In<f32>,
        y: Out<f32>,
        batch: Int,
        c: Int,
        h: Int,
        wd: Int,
        m: Int,
        k: Int,
    );

    /// `conv_tc_f16`: the tensor-core convolution with run-time shapes, FP32 output.
    ///
    /// # Safety
    /// Buffers sized as for [`conv_fused_f32`] (FP16 inputs); `m` ≤ 64; sm_80 or newer; the
    /// dynamic shared memory is `conv_tc_smem_bytes(shape, 4)`, which the function is opted
    /// into; `CONV_TC_THREADS` threads per block.
    fn conv_tc_f16(
        x: In<u16>,
        w: In<u16>,
        y: Out<f32>,
        batch: Int,
        c: Int,
        h: Int,
        wd: Int,
        m: Int,
        k: Int,
    );

    /// `conv_tc_opt_<layer>`: a layer's own tensor-core kernel (its shape compiled in), FP16
    /// output.
    ///
    /// # Safety
    /// `x` holds `batch` images and `y` `batch` outputs of the layer; sm_80 or newer; the dynamic
    /// shared memory is the layer's (`conv_tc_nhwc_smem_bytes` or `conv_tc_smem_bytes(shape, 2)`),
    /// which the function is opted into; `CONV_TC_THREADS` threads per block.
    fn conv_tc_opt(x: In<u16>, w: In<u16>, y: Out<u16>, batch: Int);
}

// The lab CNN's inference (`cnn_infer.cu`).
kernels! {
    /// `bias_<act>_pool_f16`: bias + activation + 2×2 max-pool of FP16 convolution outputs.
    ///
    /// # Safety
    /// `y` holds `planes · ho · wo` halves, `bias` `c` floats, `out` `planes · (ho/2) · (wo/2)`
    /// halves; `planes` is a multiple of `c`.
    fn bias_act_pool(
        y: In<u16>,
        bias: In<f32>,
        out: Out<u16>,
        planes: Long,
        c: Int,
        ho: Int,
        wo: Int,
    );

    /// `dense_logits_f16`: the logits `z = x · wᵀ + bias`, one warp per image.
    ///
    /// # Safety
    /// `x` holds `batch · features` halves, `w` `outputs · features`, `bias` `outputs` floats,
    /// `z` `batch · outputs` floats; `features` is a multiple of 8 and `outputs` ≤ 16; the
    /// dynamic shared memory holds the `outputs · features` FP16 weights.
    fn dense_logits_f16(
        x: In<u16>,
        w: In<u16>,
        bias: In<f32>,
        z: Out<f32>,
        batch: Int,
        features: Int,
        outputs: Int,
    );
}

// The kernel lab (`activations.cu`, `norm.cu`): entry points `{op}_{f32,f16}`.
kernels! {
    /// `{relu,gelu_erf,gelu_tanh,swish}_{dtype}`: an elementwise activation, vectorised by
    /// 16 bytes.
    ///
    /// # Safety
    /// `x` and `y` hold `n` elements of the dtype, 16-byte aligned (as every allocation is).
    fn activation(x: In<Dyn>, y: Out<Dyn>, n: Long);

    /// `{layernorm,layernorm_gelu}_{dtype}`: row-wise LayerNorm with affine `gamma`, `beta`
    /// (then GELU), a row held in the registers of 128 threads.
    ///
    /// # Safety
    /// `x` and `y` hold `rows · cols` elements of the dtype, `gamma` and `beta` `cols` floats;
    /// 128 threads per block.
    fn layernorm(
        x: In<Dyn>,
        y: Out<Dyn>,
        gamma: In<f32>,
        beta: In<f32>,
        rows: Int,
        cols: Int,
        eps: Val<f32>,
    );
}

/// Threads per block of the grid-stride training kernels.
pub(crate) const THREADS: u32 = 256;

/// Output channels each thread of `conv_block_fwd` accumulates (`COG` in train.cu).
pub(crate) const CONV_FWD_COG: usize = 8;

/// Most outputs `dense_bwd_w` is compiled for (`DENSE_BWD_MAX_OUT` in train.cu).
pub(crate) const DENSE_BWD_MAX_OUT: usize = 16;

/// Input features per block of `dense_bwd_w` (`DENSE_BWD_FPB` in train.cu).
pub(crate) const DENSE_BWD_FEATURES_PER_BLOCK: usize = 8;

/// Threads per block of `head_train` (`HEAD_THREADS` in train.cu).
pub(crate) const HEAD_THREADS: u32 = 512;

/// Tensors per fused launch (`MULTI_TENSORS` in train.cu).
pub(crate) const MULTI_TENSORS: usize = 8;

/// Kernel argument of `check_finite_multi` and `adam_multi`: `TensorTable` in train.cu, field
/// for field (device pointers, running element counts, tensor count).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TensorTable {
    pub(crate) p: [u64; MULTI_TENSORS],
    pub(crate) g: [u64; MULTI_TENSORS],
    pub(crate) m: [u64; MULTI_TENSORS],
    pub(crate) v: [u64; MULTI_TENSORS],
    pub(crate) copy: [u64; MULTI_TENSORS],
    end: [i64; MULTI_TENSORS],
    count: i32,
    pad: i32,
}

// SAFETY: plain data with the C layout of TensorTable (8-byte fields, then two ints).
unsafe impl DeviceRepr for TensorTable {}

impl TensorTable {
    /// Fills `end` with the running sums of `lens` and `count`; returns the total.
    pub(crate) fn set_ends(&mut self, lens: impl Iterator<Item = usize>) -> Result<usize> {
        let mut total = 0usize;
        let mut count = 0;
        for (i, l) in lens.enumerate().take(MULTI_TENSORS) {
            total += l;
            self.end[i] = i64::try_from(total).map_err(|_| {
                err(format!(
                    "a fused launch of {total} elements does not fit a 64-bit kernel argument"
                ))
            })?;
            count = i + 1;
        }
        if count == 0 || total == 0 {
            return Err(err("a fused launch needs at least one non-empty tensor"));
        }
        // At most MULTI_TENSORS (8): lossless.
        self.count = count as i32;
        Ok(total)
    }
}

/// The launch shape of `conv_block_fwd`: output channels per block, threads, shared memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ConvFwdPlan {
    /// Output channels per block (a multiple of [`CONV_FWD_COG`]).
    pub(crate) cpb: usize,
    /// Threads wanted per block (one per pooled position and channel group, at most 1024).
    pub(crate) threads: u32,
    /// Dynamic shared memory per block: the image's input planes and the group's weights (FP32).
    pub(crate) smem_bytes: usize,
}

impl ConvFwdPlan {
    /// Halves the channels per block from all of them until there are two blocks per SM, keeping
    /// at least one warp of work per block and the staging within the shared-memory limit.
    pub(crate) fn choose(n: usize, s: ConvShape, sms: usize, smem_limit: usize) -> Result<Self> {
        let plane = (s.h_out() / 2) * (s.w_out() / 2);
        let smem =
            |cpb: usize| 4 * ((s.c_in * s.h * s.w).div_ceil(4) * 4 + s.c_in * s.k * s.k * cpb);
        let mut cpb = s.c_out.div_ceil(CONV_FWD_COG) * CONV_FWD_COG;
        loop {
            let half = (cpb / 2).div_ceil(CONV_FWD_COG) * CONV_FWD_COG;
            let too_big = plane * cpb / CONV_FWD_COG > 1024 || smem(cpb) > smem_limit;
            let too_few_blocks =
                n * s.c_out.div_ceil(cpb) < 2 * sms && plane * half / CONV_FWD_COG >= 32;
            if half < cpb && (too_big || too_few_blocks) {
                cpb = half;
            } else {
                break;
            }
        }
        if smem(cpb) > smem_limit {
            return Err(err(format!(
                "conv_block_fwd: one image's input planes and {cpb} channels' weights need {} bytes of shared memory, more than the {smem_limit} this GPU allows",
                smem(cpb)
            )));
        }
        // Clamped to 1024: lossless.
        let threads = ((plane * cpb / CONV_FWD_COG).div_ceil(32) * 32).clamp(32, 1024) as u32;
        Ok(ConvFwdPlan {
            cpb,
            threads,
            smem_bytes: smem(cpb),
        })
    }
}

#[cfg(test)]
mod tests;
