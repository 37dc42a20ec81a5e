//! Device buffers of the CUDA backend and their memory accounting: each buffer holds a ticket
//! on the backend's [`MemoryMeter`] for its bytes, and knows which kernel parameters it can be
//! passed as (its storage against the parameter's element type).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchArgs, PushKernelArg};

use super::err;
use super::launch::{Cursor, DevIn, DevOut, Dyn, Fp8Words, Kernel, Scaler};
use crate::backend::cpu::{MemoryMeter, Ticket};
use crate::backend::CURSOR_WORDS;
use crate::error::Result;

/// Device storage of a buffer.
pub enum Storage {
    /// f32 values.
    F32(CudaSlice<f32>),
    /// IEEE half bits.
    F16(CudaSlice<u16>),
    /// bfloat16 bits.
    Bf16(CudaSlice<u16>),
    /// Bytes.
    U8(CudaSlice<u8>),
    /// Indices.
    U32(CudaSlice<u32>),
    /// Scaler state: 6 words (scale bits, growth tracker, found_inf, skipped, step, enabled).
    Scaler(CudaSlice<u32>),
    /// Sums: loss, correct, count, last batch mean loss.
    Sums(CudaSlice<f64>),
    /// FP8's scaling state (`fp8.cu`'s words), and whether its scaling is current (the casts
    /// then measure each tensor's amax first).
    Fp8(CudaSlice<u64>, bool),
}

impl Storage {
    /// The storage's name in errors.
    fn name(&self) -> &'static str {
        match self {
            Storage::F32(_) => "f32",
            Storage::F16(_) => "f16",
            Storage::Bf16(_) => "bf16",
            Storage::U8(_) => "u8",
            Storage::U32(_) => "u32",
            Storage::Scaler(_) => "scaler",
            Storage::Sums(_) => "sums",
            Storage::Fp8(..) => "fp8 state",
        }
    }

    /// Pushes the device pointer as a kernel argument.
    fn push<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        match self {
            Storage::F32(s) => b.arg(s),
            Storage::F16(s) | Storage::Bf16(s) => b.arg(s),
            Storage::U8(s) => b.arg(s),
            Storage::U32(s) | Storage::Scaler(s) => b.arg(s),
            Storage::Sums(s) => b.arg(s),
            Storage::Fp8(s, _) => b.arg(s),
        };
    }

    /// Pushes the device pointer as a kernel argument the kernel writes.
    fn push_mut<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        match self {
            Storage::F32(s) => b.arg(s),
            Storage::F16(s) | Storage::Bf16(s) => b.arg(s),
            Storage::U8(s) => b.arg(s),
            Storage::U32(s) | Storage::Scaler(s) => b.arg(s),
            Storage::Sums(s) => b.arg(s),
            Storage::Fp8(s, _) => b.arg(s),
        };
    }
}

/// A device buffer with its memory accounting.
pub struct CudaBuf {
    pub(super) storage: Storage,
    pub(super) len: usize,
    _ticket: Ticket,
}

impl CudaBuf {
    /// `len` elements of `elem` bytes in `storage`, counted on `meter` while the buffer lives.
    pub(super) fn new(storage: Storage, len: usize, elem: usize, meter: &Arc<MemoryMeter>) -> Self {
        CudaBuf {
            storage,
            len,
            _ticket: Ticket::new(meter, (len * elem) as u64),
        }
    }

    /// The kernel dtype suffix of a float buffer.
    pub(super) fn suffix(&self) -> Result<&'static str> {
        match self.storage {
            Storage::F32(_) => Ok("f32"),
            Storage::F16(_) => Ok("f16"),
            Storage::Bf16(_) => Ok("bf16"),
            _ => Err(err("expected a float buffer")),
        }
    }

    /// Errors unless the buffer holds at least `len` elements (`what` names it).
    pub(super) fn need(&self, len: usize, what: &str) -> Result<()> {
        if self.len < len {
            return Err(err(format!(
                "{what}: buffer holds {} elements, {len} needed",
                self.len
            )));
        }
        Ok(())
    }

    /// Errors unless the buffer is a step cursor (U32, [`CURSOR_WORDS`] words).
    pub(super) fn cursor(&self) -> Result<()> {
        match &self.storage {
            Storage::U32(_) if self.len >= CURSOR_WORDS => Ok(()),
            _ => Err(err("a step cursor is a U32 buffer of 3 words")),
        }
    }

    /// The device address of a float buffer (for tables passed by value).
    pub(super) fn ptr(&self, stream: &Arc<CudaStream>) -> Result<u64> {
        use cudarc::driver::DevicePtr;
        Ok(match &self.storage {
            Storage::F32(s) => s.device_ptr(stream).0,
            Storage::F16(s) | Storage::Bf16(s) => s.device_ptr(stream).0,
            _ => return Err(err("expected a float buffer")),
        })
    }

    /// Errors unless the buffer can be parameter `param` of `kernel`, of element type `E`.
    fn check<E: Elem>(&self, kernel: Kernel<'_>, param: &str) -> Result<()> {
        if E::accepts(self, kernel) {
            Ok(())
        } else {
            Err(err(format!(
                "{}: parameter {param} takes {}, not a {} buffer of {} elements",
                kernel.name,
                E::WHAT,
                self.storage.name(),
                self.len
            )))
        }
    }
}

/// The element types a backend buffer can be passed as, by storage.
pub(crate) trait Elem {
    /// The type in errors.
    const WHAT: &'static str;
    /// Whether `b` can be a pointer of this type to `kernel`.
    fn accepts(b: &CudaBuf, kernel: Kernel<'_>) -> bool;
}

impl Elem for f32 {
    const WHAT: &'static str = "float*";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::F32(_))
    }
}

impl Elem for f64 {
    const WHAT: &'static str = "double* (a sums buffer)";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::Sums(_))
    }
}

impl Elem for u8 {
    const WHAT: &'static str = "u8*";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::U8(_))
    }
}

impl Elem for u32 {
    const WHAT: &'static str = "u32*";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::U32(_))
    }
}

impl Elem for Cursor {
    const WHAT: &'static str = "Cursor* (a U32 buffer of 3 words)";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        b.cursor().is_ok()
    }
}

impl Elem for Scaler {
    const WHAT: &'static str = "Scaler* (a scaler buffer)";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::Scaler(_))
    }
}

impl Elem for Fp8Words {
    const WHAT: &'static str = "u64* (an FP8 state buffer)";
    fn accepts(b: &CudaBuf, _: Kernel<'_>) -> bool {
        matches!(b.storage, Storage::Fp8(..))
    }
}

impl Elem for Dyn {
    const WHAT: &'static str = "T* of the entry point's dtype";
    fn accepts(b: &CudaBuf, kernel: Kernel<'_>) -> bool {
        matches!(
            (kernel.dtype(), &b.storage),
            (Some("f32" | "tf32"), Storage::F32(_))
                | (Some("f16"), Storage::F16(_))
                | (Some("bf16"), Storage::Bf16(_))
        )
    }
}

impl<E: Elem> DevIn<E> for CudaBuf {
    fn push_in<'a>(
        &'a self,
        args: &mut LaunchArgs<'a>,
        kernel: Kernel<'_>,
        param: &str,
    ) -> Result<()> {
        self.check::<E>(kernel, param)?;
        self.storage.push(args);
        Ok(())
    }
}

impl<E: Elem> DevOut<E> for CudaBuf {
    fn push_out<'a>(
        &'a mut self,
        args: &mut LaunchArgs<'a>,
        kernel: Kernel<'_>,
        param: &str,
    ) -> Result<()> {
        self.check::<E>(kernel, param)?;
        self.storage.push_mut(args);
        Ok(())
    }
}

/// A data split resident on the device.
pub struct CudaData {
    pub(super) images: CudaSlice<u8>,
    pub(super) labels: CudaSlice<u8>,
    pub(super) pixels: usize,
    pub(super) n: usize,
    _ticket: Ticket,
}

impl CudaData {
    /// `images` (`pixels` bytes each) and their `labels` on the device, counted on `meter`.
    pub(super) fn new(
        images: CudaSlice<u8>,
        labels: CudaSlice<u8>,
        pixels: usize,
        meter: &Arc<MemoryMeter>,
    ) -> Self {
        let n = labels.len();
        let bytes = (images.len() + labels.len()) as u64;
        CudaData {
            images,
            labels,
            pixels,
            n,
            _ticket: Ticket::new(meter, bytes),
        }
    }
}
